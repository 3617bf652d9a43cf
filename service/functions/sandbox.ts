import { performance } from 'node:perf_hooks';
import {
  newQuickJSWASMModule,
  RELEASE_SYNC,
  type QuickJSContext,
  type QuickJSDeferredPromise,
  type QuickJSHandle,
  type QuickJSRuntime,
  type QuickJSWASMModule,
} from 'quickjs-emscripten';

/**
 * The Function sandbox: QuickJS compiled to WebAssembly (quickjs-emscripten, sync variant).
 *
 * Isolation comes from the engine, not from hiding globals: guest code runs in a separate JS heap
 * inside wasm linear memory, so there is no `process`, `require`, module loader, filesystem or network
 * to reach, and no host object is ever handed in — only copies (strings, and values rebuilt inside the
 * guest by its own JSON.parse). Every invocation gets a fresh runtime and context, a memory limit, a
 * 128 KiB stack (larger stacks let deep guest recursion overflow the host's V8 stack), a CPU budget
 * and a wall-clock deadline enforced by the interrupt handler, and strict handle bookkeeping (a leaked
 * handle aborts the wasm module for everyone: notes/deps.md §4).
 */

export interface SandboxLimits {
  /** QuickJS heap limit of one invocation. */
  memoryBytes: number;
  /** Guest execution time (interpreter running) per invocation. */
  cpuMs: number;
  /** Whole invocation, including time spent waiting for host calls (SVC_MEMORY). */
  wallMs: number;
  /** Host calls (SVC_MEMORY operations) per invocation. */
  maxHostCalls: number;
}

/** What the sandbox may ask of the host. Everything crosses as strings (JSON text), never as objects. */
export interface SandboxHost {
  memoryGet(key: string): Promise<string | null>;
  memorySet(key: string, valueJson: string): Promise<void>;
  memoryDelete(key: string): Promise<boolean>;
}

export interface SandboxInput {
  /** ES module source whose default export is the handler. */
  code: string;
  /** JSON text of the request object handed to the handler. */
  requestJson: string;
  caller: string;
  secrets: Record<string, string>;
}

export type SandboxFailure =
  | 'syntax_error'
  | 'no_default_export'
  | 'threw'
  | 'timeout'
  | 'out_of_memory'
  | 'stack_overflow'
  | 'never_resolved'
  | 'invalid_return'
  | 'sandbox_error';

/** The handler's return value, copied out: a string as-is, anything else as JSON text. */
export type SandboxValue = { kind: 'undefined' } | { kind: 'string'; text: string } | { kind: 'json'; json: string };

export interface SandboxStats {
  cpuMs: number;
  wallMs: number;
  hostCalls: number;
}

export type SandboxOutcome =
  | ({ ok: true; value: SandboxValue } & SandboxStats)
  // `stopped`: the sandbox was stopped from outside (the pool's watchdog, or its worker failed).
  | ({ ok: false; reason: SandboxFailure; message: string; stopped?: true } & SandboxStats);

let modulePromise: Promise<QuickJSWASMModule> | null = null;
let moduleLoads = 0;

/** How many times this thread loaded the wasm module: more than once means one was retired after a fault. */
export function sandboxModuleLoads(): number {
  return moduleLoads;
}

/** One wasm module per thread (25–50 ms to load); replaced if it ever aborts. */
function quickjs(): Promise<QuickJSWASMModule> {
  if (!modulePromise) moduleLoads++;
  modulePromise ??= newQuickJSWASMModule(RELEASE_SYNC).catch((e: unknown) => {
    modulePromise = null;
    throw e;
  });
  return modulePromise;
}

/** Drops the shared module so the next invocation loads a fresh one (after a wasm abort). */
function discardModule(): void {
  modulePromise = null;
}

/** Loads the wasm module ahead of the first invocation (service start, benchmarks). */
export async function warmSandbox(): Promise<void> {
  await quickjs();
}

class GuestFailure extends Error {
  constructor(
    readonly reason: SandboxFailure,
    message: string,
  ) {
    super(message);
  }
}

const MAX_ERROR_MESSAGE = 2000;

/** Evaluated first in every context: freezes the API objects and removes the host-function carrier. */
const BOOTSTRAP = `(() => {
  const g = globalThis;
  const host = g.__svcHost;
  delete g.__svcHost;
  const data = JSON.parse(host.data);
  const secrets = Object.freeze(Object.assign(Object.create(null), data.secrets));
  const caller = Object.freeze({
    get: (key) => host.get(key),
    set: (key, value) => host.set(key, value),
    delete: (key) => host.del(key),
  });
  const ro = (name, value) => Object.defineProperty(g, name, { value, enumerable: false, writable: false, configurable: false });
  ro('SVC_CALLER', data.caller);
  ro('SVC_SECRETS', secrets);
  ro('SVC_MEMORY', Object.freeze({ caller }));
  const noop = () => undefined;
  g.console = Object.freeze({ log: noop, info: noop, warn: noop, error: noop, debug: noop });
  return (e) => {
    try {
      if (e instanceof Error) return String(e.name) + ': ' + String(e.message);
      return 'Uncaught ' + (typeof e === 'string' ? e : JSON.stringify(e));
    } catch (_) { return 'Uncaught exception'; }
  };
})()`;

/** Runs `input.code`'s default export once on the request, in a fresh QuickJS runtime. */
export async function runInSandbox(input: SandboxInput, host: SandboxHost, limits: SandboxLimits): Promise<SandboxOutcome> {
  const invocation = new Invocation(await quickjs(), limits);
  try {
    invocation.open();
    invocation.installHost(input, host);
    const handler = await invocation.loadHandler(input.code);
    const request = invocation.guestJson(input.requestJson);
    return { ok: true, value: await invocation.callHandler(handler, request), ...invocation.stats() };
  } catch (e) {
    return invocation.failure(e);
  } finally {
    invocation.dispose();
  }
}

/** What a host call (SVC_MEMORY) answers the guest: JSON text, a boolean, or nothing. */
type HostValue = string | boolean | null | undefined;

/**
 * One run of guest code: its QuickJS runtime and context, the budgets it has used, and every handle
 * and promise it holds (all disposed by `dispose`, whatever happened).
 */
class Invocation {
  private readonly started = performance.now();
  private readonly wallDeadline: number;
  private cpuUsed = 0;
  private sliceStart = 0;
  private hostCalls = 0;
  private interrupted: 'cpu' | 'wall' | null = null;
  private closed = false;
  private rt: QuickJSRuntime | null = null;
  private ctx: QuickJSContext | null = null;
  private readonly handles: QuickJSHandle[] = [];
  private readonly deferreds = new Set<QuickJSDeferredPromise>();
  private readonly pending = new Set<Promise<void>>();
  /** The bootstrap's error describer (see BOOTSTRAP), once installed. */
  private describe: QuickJSHandle | null = null;
  private stringify!: QuickJSHandle;
  private parse!: QuickJSHandle;

  constructor(
    private readonly mod: QuickJSWASMModule,
    private readonly limits: SandboxLimits,
  ) {
    this.wallDeadline = this.started + limits.wallMs;
  }

  stats(): SandboxStats {
    return { cpuMs: round(this.cpuUsed), wallMs: round(performance.now() - this.started), hostCalls: this.hostCalls };
  }

  /** A fresh runtime (memory limit, stack, CPU and wall budgets) and context; the guest's JSON. */
  open(): void {
    const rt = this.mod.newRuntime();
    this.rt = rt;
    rt.setMemoryLimit(this.limits.memoryBytes);
    rt.setMaxStackSize(128 * 1024);
    rt.setInterruptHandler(() => {
      const now = performance.now();
      if (this.cpuUsed + (now - this.sliceStart) > this.limits.cpuMs) this.interrupted ??= 'cpu';
      else if (now > this.wallDeadline) this.interrupted ??= 'wall';
      return this.interrupted !== null;
    });
    const vm = rt.newContext();
    this.ctx = vm;
    const json = this.keep(vm.getProp(vm.global, 'JSON'));
    this.stringify = this.keep(vm.getProp(json, 'stringify'));
    this.parse = this.keep(vm.getProp(json, 'parse'));
  }

  private get vm(): QuickJSContext {
    return this.ctx!;
  }

  keep(h: QuickJSHandle): QuickJSHandle {
    this.handles.push(h);
    return h;
  }

  /** Every entry into guest code goes through here so its time counts against the CPU budget. */
  guest<T>(fn: () => T): T {
    this.sliceStart = performance.now();
    try {
      return fn();
    } finally {
      this.cpuUsed += performance.now() - this.sliceStart;
    }
  }

  private timedOut(kind: 'cpu' | 'wall'): GuestFailure {
    return new GuestFailure('timeout', timeoutMessage(kind, this.limits));
  }

  /** Throws a GuestFailure for a guest exception handle (and disposes it). */
  private fail(errorHandle: QuickJSHandle): never {
    const { vm } = this;
    let message = 'unknown error';
    try {
      if (this.interrupted) throw this.timedOut(this.interrupted);
      const describe = this.describe;
      if (describe) {
        const r = this.guest(() => vm.callFunction(describe, vm.undefined, errorHandle));
        if (r.error) r.error.dispose();
        else {
          if (vm.typeof(r.value) === 'string') message = vm.getString(r.value);
          r.value.dispose();
        }
      } else {
        const d = vm.dump(errorHandle) as unknown;
        message =
          d && typeof d === 'object' && 'message' in d ? `${(d as { name?: string }).name ?? 'Error'}: ${(d as { message: string }).message}` : String(d);
      }
    } finally {
      errorHandle.dispose();
    }
    if (this.interrupted) throw this.timedOut(this.interrupted);
    throw new GuestFailure(classify(message), truncateMessage(message));
  }

  unwrap(r: { error?: QuickJSHandle; value?: QuickJSHandle }): QuickJSHandle {
    if (r.error) this.fail(r.error);
    return r.value!;
  }

  /** A guest-visible async function backed by a host promise; args are copied before anything else runs. */
  private hostAsync<A>(name: string, readArgs: (args: QuickJSHandle[]) => A, run: (a: A) => Promise<HostValue>): QuickJSHandle {
    const { vm } = this;
    return this.keep(
      vm.newFunction(name, (...args) => {
        if (this.closed) return vm.undefined;
        if (++this.hostCalls > this.limits.maxHostCalls) throw new TypeError(`at most ${this.limits.maxHostCalls} SVC_MEMORY calls per invocation`);
        const a = readArgs(args);
        const d = vm.newPromise();
        this.deferreds.add(d);
        const p = run(a).then(
          (v) => this.resolveHostCall(d, v),
          (e: unknown) => {
            if (this.closed) return;
            const err = vm.newError({ name: 'Error', message: e instanceof Error ? e.message : String(e) });
            d.reject(err);
            err.dispose();
            this.deferreds.delete(d);
          },
        );
        this.pending.add(p);
        void p.finally(() => this.pending.delete(p));
        return d.handle;
      }),
    );
  }

  /** Hands a host call's answer to the guest: null/boolean as themselves, JSON text rebuilt by the guest's own JSON.parse. */
  private resolveHostCall(d: QuickJSDeferredPromise, v: HostValue): void {
    if (this.closed) return;
    const { vm } = this;
    let h: QuickJSHandle;
    if (v === null || v === undefined) h = vm.null;
    else if (typeof v === 'boolean') h = v ? vm.true : vm.false;
    else {
      const text = vm.newString(v);
      const r = this.guest(() => vm.callFunction(this.parse, vm.undefined, text));
      text.dispose();
      if (r.error) {
        d.reject(r.error);
        r.error.dispose();
        this.deferreds.delete(d);
        return;
      }
      h = r.value;
    }
    d.resolve(h);
    h.dispose();
    this.deferreds.delete(d);
  }

  /** SVC_MEMORY.caller (get/set/delete through the host), the caller and secrets, and the bootstrap that freezes them in. */
  installHost(input: SandboxInput, host: SandboxHost): void {
    const { vm } = this;
    const keyArg = (args: QuickJSHandle[]): string => {
      if (!args[0] || vm.typeof(args[0]) !== 'string') throw new TypeError('SVC_MEMORY.caller: key must be a string');
      return vm.getString(args[0]);
    };
    const getFn = this.hostAsync('get', keyArg, (k) => host.memoryGet(k));
    const delFn = this.hostAsync('delete', keyArg, (k) => host.memoryDelete(k));
    const setFn = this.hostAsync(
      'set',
      (args) => {
        const key = keyArg(args);
        const r = this.guest(() => vm.callFunction(this.stringify, vm.undefined, args[1] ?? vm.undefined));
        if (r.error) {
          // Surface the guest's own error (e.g. a cyclic value) to the guest.
          const message = String((vm.dump(r.error) as { message?: string })?.message ?? 'value is not serializable');
          r.error.dispose();
          throw new TypeError(`SVC_MEMORY.caller.set: ${message}`);
        }
        const t = vm.typeof(r.value);
        const text = t === 'string' ? vm.getString(r.value) : null;
        r.value.dispose();
        if (text === null) throw new TypeError('SVC_MEMORY.caller.set: value must be JSON-serializable (not undefined or a function)');
        return { key, text };
      },
      ({ key, text }) => host.memorySet(key, text).then(() => undefined),
    );

    const carrier = this.keep(vm.newObject());
    vm.setProp(carrier, 'get', getFn);
    vm.setProp(carrier, 'set', setFn);
    vm.setProp(carrier, 'del', delFn);
    const data = vm.newString(JSON.stringify({ caller: input.caller, secrets: input.secrets }));
    vm.setProp(carrier, 'data', data);
    data.dispose();
    vm.setProp(vm.global, '__svcHost', carrier);
    this.describe = this.keep(this.unwrap(this.guest(() => vm.evalCode(BOOTSTRAP, 'svc-bootstrap.js'))));
  }

  /** Waits for a guest value that may be a promise; returns a handle the caller must dispose. */
  private async settle(h: QuickJSHandle, what: 'module' | 'handler'): Promise<QuickJSHandle> {
    const { vm } = this;
    const runtime = this.rt!;
    for (;;) {
      const jobs = this.guest(() => runtime.executePendingJobs());
      if (jobs.error) {
        h.dispose();
        this.fail(jobs.error);
      }
      if (this.interrupted) {
        h.dispose();
        throw this.timedOut(this.interrupted);
      }
      const state = vm.getPromiseState(h);
      if (state.type === 'fulfilled') {
        if (state.notAPromise || state.value === h) return h;
        h.dispose();
        return state.value;
      }
      if (state.type === 'rejected') {
        h.dispose();
        this.fail(state.error);
      }
      if (runtime.hasPendingJob()) continue;
      if (this.pending.size === 0) {
        h.dispose();
        throw new GuestFailure(
          'never_resolved',
          what === 'module'
            ? 'the module never finished loading (a top-level await that never settles)'
            : 'the handler returned a promise that can never settle',
        );
      }
      const left = this.wallDeadline - performance.now();
      if (left <= 0) {
        h.dispose();
        this.interrupted = 'wall';
        throw this.timedOut('wall');
      }
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.race(this.pending),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, left);
        }),
      ]);
      clearTimeout(timer);
    }
  }

  /** Evaluates the module (and its top-level awaits) and returns its default export, a function. */
  async loadHandler(code: string): Promise<QuickJSHandle> {
    const { vm } = this;
    const evaluated = this.guest(() => vm.evalCode(code, 'function.js', { type: 'module', strict: true }));
    if (evaluated.error) {
      // A syntax error never ran guest code; anything else is a top-level throw.
      const d = vm.dump(evaluated.error) as { name?: string; message?: string } | undefined;
      if (d && d.name === 'SyntaxError' && !this.interrupted && !/stack overflow/.test(d.message ?? '')) {
        evaluated.error.dispose();
        throw new GuestFailure('syntax_error', truncateMessage(`SyntaxError: ${d.message ?? ''}`));
      }
      this.fail(evaluated.error);
    }
    const ns = await this.settle(this.unwrap(evaluated), 'module');
    const handler = vm.getProp(ns, 'default');
    ns.dispose();
    if (vm.typeof(handler) !== 'function') {
      handler.dispose();
      throw new GuestFailure('no_default_export', 'the code must `export default` a function (request) => response');
    }
    return this.keep(handler);
  }

  /** A value built inside the guest from JSON text by its own JSON.parse (kept until dispose). */
  guestJson(text: string): QuickJSHandle {
    const { vm } = this;
    const handle = vm.newString(text);
    const parsed = this.guest(() => vm.callFunction(this.parse, vm.undefined, handle));
    handle.dispose();
    return this.keep(this.unwrap(parsed));
  }

  /** Calls the handler on the request and reads what it returned (awaited): undefined, a string, or JSON text. */
  async callHandler(handler: QuickJSHandle, request: QuickJSHandle): Promise<SandboxValue> {
    const { vm } = this;
    const returned = this.unwrap(this.guest(() => vm.callFunction(handler, vm.undefined, request)));
    const result = await this.settle(returned, 'handler');
    try {
      const t = vm.typeof(result);
      if (t === 'undefined') return { kind: 'undefined' };
      if (t === 'string') return { kind: 'string', text: vm.getString(result) };
      const s = this.unwrap(this.guest(() => vm.callFunction(this.stringify, vm.undefined, result)));
      const text = vm.typeof(s) === 'string' ? vm.getString(s) : null;
      s.dispose();
      if (text === null) throw new GuestFailure('invalid_return', `the handler returned a ${t}, which is not JSON-serializable`);
      return { kind: 'json', json: text };
    } finally {
      result.dispose();
    }
  }

  /** The outcome of a run that threw: the guest's failure, or a contained host-side one. */
  failure(e: unknown): SandboxOutcome {
    const stats = this.stats();
    if (e instanceof GuestFailure) return { ok: false, reason: e.reason, message: e.message, ...stats };
    // A host-side failure (wasm abort, host stack): contain it, and never reuse a possibly broken module.
    discardModule();
    const message = e instanceof Error ? e.message : String(e);
    if (this.interrupted) return { ok: false, reason: 'timeout', message: timeoutMessage(this.interrupted, this.limits), ...stats };
    if (/out of memory|memory access out of bounds/i.test(message))
      return { ok: false, reason: 'out_of_memory', message: `out of memory (limit ${this.limits.memoryBytes} bytes)`, ...stats };
    if (/call stack|stack overflow/i.test(message)) return { ok: false, reason: 'stack_overflow', message: 'stack overflow', ...stats };
    return { ok: false, reason: 'sandbox_error', message: 'the sandbox failed while running this function', ...stats };
  }

  /** Disposes every handle, pending promise, the context and the runtime; a failure here retires the wasm module. */
  dispose(): void {
    this.closed = true;
    try {
      for (const d of this.deferreds) d.dispose();
      for (const h of this.handles.reverse()) if (h.alive) h.dispose();
      this.ctx?.dispose();
      this.rt?.dispose();
    } catch {
      // A failed dispose means the module's bookkeeping is broken: never use it again.
      discardModule();
    }
  }
}

function classify(message: string): SandboxFailure {
  if (/out of memory/i.test(message)) return 'out_of_memory';
  if (/stack overflow|call stack size/i.test(message)) return 'stack_overflow';
  if (/^InternalError: interrupted/.test(message)) return 'timeout';
  return 'threw';
}

function timeoutMessage(kind: 'cpu' | 'wall', limits: SandboxLimits): string {
  return kind === 'cpu'
    ? `the function used more than its ${limits.cpuMs} ms CPU budget and was stopped`
    : `the function did not finish within ${limits.wallMs} ms and was stopped`;
}

function truncateMessage(m: string): string {
  return m.length > MAX_ERROR_MESSAGE ? `${m.slice(0, MAX_ERROR_MESSAGE)}…` : m;
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}

/**
 * Where QuickJS stopped parsing (its stack: `at function.js:LINE:COLUMN`), said as " at line 3,
 * column 11", and when that is past the last character, that the code ended there (an unclosed
 * bracket, brace or string is the usual cause).
 */
function syntaxErrorPlace(code: string, stack: string | undefined): string {
  const at = /function\.js:(\d+):(\d+)/.exec(stack ?? '');
  if (!at) return '';
  const [line, column] = [Number(at[1]), Number(at[2])];
  const lines = code.trimEnd().split('\n');
  const atEnd = line > lines.length || (line === lines.length && column > lines[line - 1]!.length);
  return atEnd ? ` at the end of the code (line ${line}): a bracket, brace or string is not closed` : ` at line ${line}, column ${column}`;
}

/**
 * Checks that `code` parses as an ES module. QuickJS's compile-only mode misreports some valid modules
 * here, so the module is evaluated in a bare context (no SVC_* globals, 100 ms CPU, 16 MiB): only a
 * SyntaxError counts; top-level code that throws for want of the runtime globals is fine.
 */
export async function checkModuleSyntax(code: string): Promise<string | null> {
  const mod = await quickjs();
  const rt = mod.newRuntime();
  let vm: QuickJSContext | null = null;
  try {
    rt.setMemoryLimit(16 * 1024 * 1024);
    rt.setMaxStackSize(128 * 1024);
    const deadline = performance.now() + 100;
    rt.setInterruptHandler(() => performance.now() > deadline);
    vm = rt.newContext();
    const r = vm.evalCode(code, 'function.js', { type: 'module', strict: true });
    if (r.error) {
      const d = vm.dump(r.error) as { name?: string; message?: string; stack?: string } | undefined;
      r.error.dispose();
      if (d?.name === 'SyntaxError' && !/stack overflow/.test(d.message ?? ''))
        return truncateMessage(`SyntaxError: ${d.message ?? ''}${syntaxErrorPlace(code, d.stack)}`);
      return null;
    }
    (r as { value: QuickJSHandle }).value.dispose();
    return null;
  } catch {
    discardModule();
    return null;
  } finally {
    try {
      vm?.dispose();
      rt.dispose();
    } catch {
      discardModule();
    }
  }
}
