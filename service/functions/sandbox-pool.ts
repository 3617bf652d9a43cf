import { Worker } from 'node:worker_threads';
import { runInSandbox, type SandboxHost, type SandboxInput, type SandboxLimits, type SandboxOutcome } from './sandbox.js';
import type { FromWorker, ToWorker } from './sandbox-worker.js';
import { packagePath } from '../kernel/package-root.js';

/** Runs one invocation in a sandbox; the service uses the worker pool, tests and benches may use either. */
export interface SandboxRunner {
  run(input: SandboxInput, host: SandboxHost, limits: SandboxLimits): Promise<SandboxOutcome>;
  close(): Promise<void>;
}

/** Every invocation on the calling thread: fastest, but a runaway guest blocks this event loop until its deadline. */
export const inProcessRunner: SandboxRunner = {
  run: runInSandbox,
  close: async () => {},
};

export class SandboxBusyError extends Error {}

interface Job {
  id: number;
  input: SandboxInput;
  host: SandboxHost;
  limits: SandboxLimits;
  resolve(outcome: SandboxOutcome): void;
  reject(e: Error): void;
  queuedAt: number;
  /**
   * The guest's clock: how long it has run outside host calls (ms), since when it runs (null while it
   * waits for host calls or for its worker to start), and the host calls it waits for.
   */
  guestMs: number;
  guestSince: number | null;
  hostCallsPending: number;
}

interface Slot {
  worker: Worker;
  job: Job | null;
  timer?: NodeJS.Timeout;
  /** Fires when the guest has run its CPU budget plus the grace period outside host calls. */
  guestTimer?: NodeJS.Timeout;
  /** The worker loaded its sandbox; a worker that dies before that is respawned with a backoff. */
  ready: boolean;
  /** Waiting for a delayed respawn: takes no jobs. */
  dead: boolean;
}

/**
 * A pool of worker threads, each running one invocation at a time in its own QuickJS module, started
 * on demand (none while the service is idle) and then kept. The main
 * thread (HTTP, database) never runs guest code, so a runaway Function cannot stall other requests;
 * a watchdog terminates a worker that overruns its deadline (terminate() stops wasm mid-loop, where
 * the interrupt handler may not get a chance, e.g. inside a long GC near the memory limit), and a
 * worker that dies (wasm abort) is replaced. Invocations beyond the pool wait in a bounded queue.
 */
export class SandboxPool implements SandboxRunner {
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];
  private nextId = 0;
  private closed = false;
  private startFailures = 0;

  constructor(
    readonly size: number,
    private readonly options: { graceMs: number; maxQueue: number } = { graceMs: 1000, maxQueue: 1000 },
  ) {}

  private spawn(): Slot {
    const worker = new Worker(packagePath('service', 'functions', 'sandbox-worker.mjs'));
    worker.unref(); // idle workers never keep the process alive
    const slot: Slot = { worker, job: null, ready: false, dead: false };
    worker.on('message', (msg: FromWorker) => this.onMessage(slot, msg));
    worker.on('error', () => this.replace(slot, 'sandbox_error', 'the sandbox worker failed while running this function'));
    worker.on('exit', () => this.replace(slot, 'sandbox_error', 'the sandbox worker stopped while running this function'));
    return slot;
  }

  run(input: SandboxInput, host: SandboxHost, limits: SandboxLimits): Promise<SandboxOutcome> {
    if (this.closed) return Promise.reject(new Error('sandbox pool is closed'));
    if (this.queue.length >= this.options.maxQueue) return Promise.reject(new SandboxBusyError('too many function invocations are waiting'));
    return new Promise((resolve, reject) => {
      this.queue.push({ id: ++this.nextId, input, host, limits, resolve, reject, queuedAt: Date.now(), guestMs: 0, guestSince: null, hostCallsPending: 0 });
      this.pump();
    });
  }

  private pump(): void {
    // Workers start when invocations need them (an idle service holds none), up to `size`.
    let waiting = this.queue.length - this.slots.filter((s) => !s.job && !s.dead).length;
    while (waiting-- > 0 && this.slots.length < this.size && !this.closed) this.slots.push(this.spawn());
    for (const slot of this.slots) {
      if (!this.queue.length) return;
      if (slot.job || slot.dead) continue;
      const job = this.queue.shift()!;
      // Time spent queued counts against the wall deadline; past it, the invocation is not started.
      const waited = Date.now() - job.queuedAt;
      const wallMs = job.limits.wallMs - waited;
      if (wallMs <= 0) {
        job.resolve({
          ok: false,
          reason: 'timeout',
          message: `the function waited ${waited} ms for a sandbox and was not started`,
          cpuMs: 0,
          wallMs: waited,
          hostCalls: 0,
        });
        continue;
      }
      slot.job = job;
      slot.timer = setTimeout(() => this.kill(slot, job), wallMs + this.options.graceMs);
      if (slot.ready) this.resumeGuest(slot, job);
      slot.worker.ref();
      slot.worker.postMessage({ type: 'run', id: job.id, input: job.input, limits: { ...job.limits, wallMs } } satisfies ToWorker);
    }
  }

  /**
   * The second watchdog. The worker stops a guest at its CPU budget from QuickJS's interrupt handler,
   * but that handler is not called inside a long builtin (`new Array(1e5).fill(…)` in a loop) or a
   * garbage collection near the memory limit: such a guest ran 8 s of CPU before QuickJS's own
   * out-of-memory. Time outside host calls is the guest running (the worker does nothing else), so
   * past its budget plus the grace period the worker is stopped, instead of holding it until the
   * wall-clock deadline.
   */
  private resumeGuest(slot: Slot, job: Job): void {
    job.guestSince = Date.now();
    clearTimeout(slot.guestTimer);
    const left = job.limits.cpuMs + this.options.graceMs - job.guestMs;
    slot.guestTimer = setTimeout(() => this.kill(slot, job, 'cpu'), Math.max(0, left));
  }

  private pauseGuest(slot: Slot, job: Job): void {
    clearTimeout(slot.guestTimer);
    if (job.guestSince === null) return;
    job.guestMs += Date.now() - job.guestSince;
    job.guestSince = null;
  }

  private finish(slot: Slot, job: Job, outcome: SandboxOutcome): void {
    if (slot.job !== job) return;
    clearTimeout(slot.timer);
    clearTimeout(slot.guestTimer);
    slot.job = null;
    slot.worker.unref();
    job.resolve(outcome);
  }

  private onMessage(slot: Slot, msg: FromWorker): void {
    const job = slot.job;
    if (msg.type === 'ready') {
      slot.ready = true;
      this.startFailures = 0;
      // A job posted while the worker was starting: its guest starts now.
      if (job && job.guestSince === null && job.hostCallsPending === 0) this.resumeGuest(slot, job);
      return;
    }
    if (!job || msg.id !== job.id) return;
    if (msg.type === 'done') {
      this.finish(slot, job, msg.outcome);
      this.pump();
      return;
    }
    if (job.hostCallsPending++ === 0) this.pauseGuest(slot, job);
    const backToGuest = () => {
      if (slot.job === job && --job.hostCallsPending === 0) this.resumeGuest(slot, job);
    };
    const call: Promise<string | boolean | null | undefined> =
      msg.op === 'get'
        ? job.host.memoryGet(msg.key)
        : msg.op === 'set'
          ? job.host.memorySet(msg.key, msg.valueJson ?? 'null').then(() => undefined)
          : job.host.memoryDelete(msg.key);
    call.then(
      (value) => {
        if (slot.job === job) slot.worker.postMessage({ type: 'host-result', id: job.id, callId: msg.callId, ok: true, value } satisfies ToWorker);
        backToGuest();
      },
      (e: unknown) => {
        backToGuest();
        if (slot.job === job) {
          slot.worker.postMessage({
            type: 'host-result',
            id: job.id,
            callId: msg.callId,
            ok: false,
            message: e instanceof Error ? e.message : String(e),
          } satisfies ToWorker);
        }
      },
    );
  }

  /** The watchdog: the worker overran its deadline by the grace period; stop it and start a fresh one. */
  private kill(slot: Slot, job: Job, overran: 'wall' | 'cpu' = 'wall'): void {
    if (slot.job !== job) return;
    const wallMs = Date.now() - job.queuedAt;
    this.finish(slot, job, {
      ok: false,
      reason: 'timeout',
      message:
        overran === 'cpu'
          ? `the function ran past its ${job.limits.cpuMs} ms CPU budget inside a builtin or garbage collection, where it cannot be interrupted, and its sandbox was stopped`
          : `the function overran its limits (${job.limits.cpuMs} ms CPU, ${job.limits.wallMs} ms in all) and its sandbox was stopped`,
      cpuMs: wallMs,
      wallMs,
      hostCalls: 0,
      stopped: true,
    });
    this.retire(slot);
  }

  private replace(slot: Slot, reason: 'sandbox_error', message: string): void {
    const job = slot.job;
    if (job) this.finish(slot, job, { ok: false, reason, message, cpuMs: 0, wallMs: Date.now() - job.queuedAt, hostCalls: 0, stopped: true });
    this.retire(slot);
  }

  private retire(slot: Slot): void {
    const i = this.slots.indexOf(slot);
    if (i < 0) return;
    slot.worker.removeAllListeners();
    slot.worker.on('error', () => {});
    void slot.worker.terminate();
    if (this.closed) {
      this.slots.splice(i, 1);
      return;
    }
    if (slot.ready) {
      this.slots[i] = this.spawn();
      this.pump();
      return;
    }
    // Died while starting (e.g. the loader is broken): never respawn in a tight loop.
    slot.dead = true;
    const delay = Math.min(30_000, 250 * 2 ** this.startFailures++);
    setTimeout(() => {
      if (this.closed || this.slots[i] !== slot) return;
      this.slots[i] = this.spawn();
      this.pump();
    }, delay).unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.reject(new Error('sandbox pool closed'));
    const workers = this.slots.splice(0).map((s) => {
      if (s.job) s.job.reject(new Error('sandbox pool closed'));
      clearTimeout(s.timer);
      s.worker.removeAllListeners();
      s.worker.on('error', () => {});
      return s.worker.terminate();
    });
    await Promise.all(workers);
  }
}
