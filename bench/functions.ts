import fs from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { SandboxPool } from '../service/functions/sandbox-pool.js';
import { runInSandbox, warmSandbox, type SandboxHost, type SandboxLimits } from '../service/functions/sandbox.js';
import { benchServiceEnv, cliPersonalKey, spawnService, waitForHttp } from './lib.js';

/**
 * Function invoke: cold and warm latency (p50/p95) and invocations/s, beside the floor — the same
 * handler called as a plain in-process function. Layers, each adding one cost:
 *   1. plain function (the floor)
 *   2. QuickJS sandbox on the calling thread (fresh runtime + context per call)
 *   3. the worker-thread pool (structured-clone hop + watchdog)
 *   4. POST /api/v1/functions/invoke/:slug end to end (separate service process, PGlite, auth, quota)
 */
const HANDLER = `export default async function (request) {
  const name = request.query.name ?? 'world';
  return { status: 200, headers: { 'content-type': 'application/json' }, body: { hello: name, path: request.path, items: [1, 2, 3].map((i) => i * 2) } };
}`;

const floorHandler = async (request: { query: Record<string, string>; path: string }) => {
  const name = request.query.name ?? 'world';
  return { status: 200, headers: { 'content-type': 'application/json' }, body: { hello: name, path: request.path, items: [1, 2, 3].map((i) => i * 2) } };
};

const request = { method: 'GET', path: '/hello', query: { name: 'bench' }, rawQuery: 'name=bench', headers: {}, body: null };
const limits: SandboxLimits = { memoryBytes: 64 * 1024 * 1024, cpuMs: 500, wallMs: 5000, maxHostCalls: 100 };
const noHost: SandboxHost = { memoryGet: async () => null, memorySet: async () => {}, memoryDelete: async () => false };

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

interface Row {
  label: string;
  cold: number | null;
  p50: number;
  p95: number;
  perSec: number;
}

/** `warm` = after n/5 untimed calls (V8 tiers up the QuickJS wasm over the first few dozen calls). */
async function measure(label: string, n: number, call: () => Promise<unknown>, cold: number | null, concurrency = 1): Promise<Row> {
  for (let i = 0; i < n / 5; i++) await call();
  const times: number[] = [];
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < n) {
        const t = performance.now();
        await call();
        times.push(performance.now() - t);
      }
    }),
  );
  const total = performance.now() - started;
  times.sort((a, b) => a - b);
  return { label, cold, p50: pct(times, 50), p95: pct(times, 95), perSec: (n / total) * 1000 };
}

const fmt = (ms: number | null) => (ms === null ? '—' : ms < 1 ? `${(ms * 1000).toFixed(1)} µs` : `${ms.toFixed(2)} ms`);

function print(rows: Row[]): void {
  const floor = rows[0];
  console.log(
    `${'layer'.padEnd(52)} ${'cold'.padStart(11)} ${'warm p50'.padStart(11)} ${'warm p95'.padStart(11)} ${'calls/s'.padStart(10)} ${'x floor p50'.padStart(12)}`,
  );
  for (const r of rows) {
    console.log(
      `${r.label.padEnd(52)} ${fmt(r.cold).padStart(11)} ${fmt(r.p50).padStart(11)} ${fmt(r.p95).padStart(11)} ${r.perSec.toFixed(0).padStart(10)} ${(r.p50 / floor!.p50).toFixed(0).padStart(11)}x`,
    );
  }
}

export async function run(): Promise<void> {
  const rows: Row[] = [];
  const json = JSON.stringify(request);
  const input = { code: HANDLER, requestJson: json, caller: 'caller_bench', secrets: {} };

  // 1. The floor.
  let t = performance.now();
  await floorHandler(request);
  rows.push(await measure('plain in-process function (floor)', 20000, () => floorHandler(request), performance.now() - t));

  // 2. Sandbox on the calling thread; cold = first call including the wasm module load.
  t = performance.now();
  await warmSandbox();
  const first = await runInSandbox(input, noHost, limits);
  if (!first.ok) throw new Error(`sandbox failed: ${first.message}`);
  rows.push(await measure('QuickJS sandbox, calling thread', 2000, () => runInSandbox(input, noHost, limits), performance.now() - t));

  // 3. Worker pool (2 workers = the 2 cores), 1 and 4 callers in flight; cold = the first call, which
  //    starts a worker (the pool starts none until it is needed).
  t = performance.now();
  const pool = new SandboxPool(2);
  await pool.run(input, noHost, limits);
  const poolCold = performance.now() - t;
  rows.push(await measure('worker pool (2), 1 in flight', 2000, () => pool.run(input, noHost, limits), poolCold));
  rows.push(await measure('worker pool (2), 4 in flight', 4000, () => pool.run(input, noHost, limits), null, 4));
  // Cold on a warm worker: the first call of code the worker has never run (a function just published).
  let version = 0;
  const another = () => ({ ...input, code: `${HANDLER}\n// version ${++version}` });
  t = performance.now();
  await pool.run(another(), noHost, limits);
  rows.push(await measure('worker pool (2), each call new code', 500, () => pool.run(another(), noHost, limits), performance.now() - t));
  await pool.close();

  // 4. End to end over HTTP against a separate service process.
  const { dir, base, env } = await benchServiceEnv('functions', {
    SVC_FUNCTION_INVOKES_PER_MINUTE: '0',
    SVC_MAX_FUNCTION_INVOCATIONS_PER_MONTH: '0',
    SVC_FUNCTION_WORKERS: '2',
  });
  const key = cliPersonalKey(env);
  const svc = spawnService(env);
  try {
    await waitForHttp(`${base}/healthz`);
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const created = await fetch(`${base}/api/v1/functions`, { method: 'POST', headers, body: JSON.stringify({ name: 'bench', slug: 'bench', code: HANDLER }) });
    if (created.status !== 201) throw new Error(`create failed: ${created.status} ${await created.text()}`);
    const fnId = (await created.json()).function.id as string;
    await fetch(`${base}/api/v1/functions/${fnId}/publish`, { method: 'POST', headers });
    const body = JSON.stringify({ method: 'GET', path: '/hello', query: 'name=bench' });
    const invoke = async () => {
      const r = await fetch(`${base}/api/v1/functions/invoke/bench`, { method: 'POST', headers, body });
      if (r.status !== 200) throw new Error(`invoke failed: ${r.status} ${await r.text()}`);
      await r.arrayBuffer();
    };
    // The same API path without a sandbox: auth, rate-limit bookkeeping and two queries (the API's own cost).
    const get = async () => {
      const r = await fetch(`${base}/api/v1/functions/${fnId}`, { headers });
      if (r.status !== 200) throw new Error(`get failed: ${r.status}`);
      await r.arrayBuffer();
    };
    t = performance.now();
    await invoke();
    const invokeCold = performance.now() - t;
    rows.push(await measure('HTTP GET /functions/:id (no sandbox), reference', 500, get, null));
    rows.push(await measure('HTTP invoke, service process, 1 in flight', 500, invoke, invokeCold));

    const ac = await autocannon({ url: `${base}/api/v1/functions/invoke/bench`, method: 'POST', headers, body, connections: 8, duration: 8 });
    rows.push({ label: 'HTTP invoke, autocannon 8 connections, 8 s', cold: null, p50: ac.latency.p50, p95: ac.latency.p97_5, perSec: ac.requests.average });
    if (ac.non2xx || ac.errors) console.log(`  (autocannon: ${ac.non2xx} non-2xx, ${ac.errors} errors)`);
  } finally {
    svc.kill('SIGTERM');
    await new Promise((r) => svc.once('exit', r));
    fs.rmSync(dir, { recursive: true, force: true });
  }

  console.log(`Function invoke on ${os.cpus().length} cores (autocannon row: p95 column is p97.5, whole-ms resolution)`);
  print(rows);
}
