import { describe, expect, it } from 'vitest';
import { runInSandbox, sandboxModuleLoads, type SandboxHost, type SandboxLimits } from '../../service/functions/sandbox.js';

/** The sandbox on the calling thread, without HTTP: handle bookkeeping and host-call edge cases. */
const limits: SandboxLimits = { memoryBytes: 16 * 1024 * 1024, cpuMs: 200, wallMs: 2000, maxHostCalls: 10 };

function memoryHost(): SandboxHost & { data: Map<string, string> } {
  const data = new Map<string, string>();
  return {
    data,
    memoryGet: async (k) => data.get(k) ?? null,
    memorySet: async (k, v) => void data.set(k, v),
    memoryDelete: async (k) => data.delete(k),
  };
}

const run = (code: string, host: SandboxHost = memoryHost(), requestJson = '{"path":"/"}', runLimits = limits) =>
  runInSandbox({ code, requestJson, caller: 'caller_test', secrets: { S: 'v' } }, host, runLimits);

describe('QuickJS sandbox (calling thread)', () => {
  it('survives 120 mixed failing invocations on one wasm module (no leaked handle, no retired module)', async () => {
    await run('export default () => 1');
    const loads = sandboxModuleLoads();
    const failing = [
      'export default () => { for (;;) {} }',
      'export default () => new Promise(() => {})',
      'export default async () => { SVC_MEMORY.caller.get("a"); await new Promise(() => {}) }',
      'export default () => { throw new Error("x") }',
      'export default () => { const f = () => f(); f() }',
      'export default async () => { await SVC_MEMORY.caller.set("k", 1); throw "late" }',
      'await new Promise(() => {}); export default () => 1',
      'export default () => Symbol("s")',
    ];
    // A short CPU budget: 15 of the 120 are endless loops, and what is counted here is handles, not time.
    const short = { ...limits, cpuMs: 20 };
    for (let i = 0; i < 120; i++) {
      const r = await run(failing[i % failing.length]!, memoryHost(), '{"path":"/"}', short);
      expect(r.ok).toBe(false);
    }
    const ok = await run('export default (req) => ({ body: { path: req.path, caller: SVC_CALLER, s: SVC_SECRETS.S } })');
    expect(ok).toMatchObject({ ok: true, value: { kind: 'json', json: '{"body":{"path":"/","caller":"caller_test","s":"v"}}' } });
    expect(sandboxModuleLoads()).toBe(loads);
  }, 60_000);

  it('supports top-level await, Promise.all over host calls, and copies values in and out', async () => {
    const host = memoryHost();
    const r = await run(
      `const base = await Promise.resolve(40);
       export default async () => {
         const obj = { nested: [1, { deep: true }] };
         await SVC_MEMORY.caller.set('obj', obj);
         obj.nested.push('mutated after set');
         const [a, b] = await Promise.all([SVC_MEMORY.caller.get('obj'), SVC_MEMORY.caller.get('missing')]);
         return { sum: base + 2, a, b };
       }`,
      host,
    );
    expect(r).toMatchObject({ ok: true });
    expect(JSON.parse((r as { value: { json: string } }).value.json)).toEqual({ sum: 42, a: { nested: [1, { deep: true }] }, b: null });
    expect(host.data.get('obj')).toBe('{"nested":[1,{"deep":true}]}');
  });

  it('limits host calls per invocation and rejects bad keys and values inside the guest', async () => {
    const r = await run(`export default async () => {
      const errors = [];
      try { await SVC_MEMORY.caller.get(42) } catch (e) { errors.push(e.message) }
      try { await SVC_MEMORY.caller.set('f', () => 1) } catch (e) { errors.push(e.message) }
      for (let i = 0; i < 20; i++) { try { await SVC_MEMORY.caller.get('k') } catch (e) { errors.push(e.message); break } }
      return errors;
    }`);
    expect(r.ok).toBe(true);
    const errors = JSON.parse((r as { value: { json: string } }).value.json) as string[];
    expect(errors[0]).toMatch(/key must be a string/);
    expect(errors[1]).toMatch(/JSON-serializable/);
    expect(errors[2]).toMatch(/at most 10 SVC_MEMORY calls/);
  });

  it('a host call that outlives the deadline ends as a timeout, not a hang', async () => {
    const slow: SandboxHost = { ...memoryHost(), memoryGet: () => new Promise(() => {}) };
    const r = await runInSandbox({ code: 'export default () => SVC_MEMORY.caller.get("k")', requestJson: '{}', caller: 'c', secrets: {} }, slow, {
      ...limits,
      wallMs: 300,
    });
    expect(r).toMatchObject({ ok: false, reason: 'timeout' });
  });
});
