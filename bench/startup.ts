import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { cpuMs, freePort, waitForHttp } from './lib.js';

/**
 * Start-up as a user waits for it (issue 55), each beside a bare Node program doing the least of the
 * same job, measured in the same run: rounds interleave every row, so a moment of load from the
 * machine's other work falls on all of them alike; medians, with the spread.
 *   - `svc serve` (npm start's command, default settings: the dev chain and the MCP server beside it)
 *     on an existing PGlite data folder: spawn → the first 200 from /readyz (goal ≤ 2 s, 1 s wanted),
 *     beside a bare node:http server: spawn → its first 200;
 *   - svc-mcp over stdio: spawn → the answer to `initialize` (goal ≤ 300 ms), beside a bare Node
 *     program that answers the first line on stdin;
 *   - CLI commands: `svc-agent-host --help`, and `key list` against the running service (≤ 700 ms);
 *   - `svc serve` on PostgreSQL when one answers (BENCH_PG_URL, default the tests' database).
 * Each row also gives the CPU time (user + system, from /proc) the process had spent when it answered:
 * on a loaded machine wall time waits for a core, CPU time much less.
 * BENCH_STARTUP_ROUNDS (default 7) sets the rounds.
 */
const ROUNDS = Number(process.env.BENCH_STARTUP_ROUNDS ?? 7);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** One timing: wall ms from spawn to the answer, and the process's CPU ms by then (Linux). */
interface Timing {
  ms: number;
  cpu?: number;
}

const BARE_HTTP = `require('node:http').createServer((q, s) => s.end('ok')).listen(Number(process.env.PORT), '127.0.0.1')`;
const BARE_STDIO = `process.stdin.once('data', () => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: 1, result: {} }) + '\\n'))`;

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const hard = setTimeout(() => child.kill('SIGKILL'), 10_000);
  return exited.finally(() => clearTimeout(hard));
}

/** Spawns `args` with PORT set and times spawn → the first 200 from `pathname`. */
async function spawnToFirst200(args: string[], pathname: string, env: Record<string, string>): Promise<Timing> {
  const port = await freePort();
  const t = performance.now();
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...env, PORT: String(port), SVC_BASE_URL: `http://127.0.0.1:${port}` },
    stdio: 'ignore',
  });
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${args.join(' ')} exited ${child.exitCode}`);
      try {
        if ((await fetch(`http://127.0.0.1:${port}${pathname}`)).status === 200) break;
      } catch {}
      if (performance.now() - t > 120_000) throw new Error(`${args.join(' ')}: no 200 from ${pathname} in 120 s`);
      await new Promise((r) => setTimeout(r, 5));
    }
    return { ms: performance.now() - t, cpu: cpuMs([child.pid!]) };
  } finally {
    await stop(child);
  }
}

/** Spawns a stdio MCP server and times spawn → the answer to `initialize`. */
function stdioInitialize(args: string[], env: Record<string, string>): Promise<Timing> {
  return new Promise((resolve, reject) => {
    const t = performance.now();
    const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (!out.includes('"id":1')) return;
      const timing = { ms: performance.now() - t, cpu: cpuMs([child.pid!]) };
      void stop(child).then(() => resolve(timing));
    });
    child.once('exit', (code) => (out.includes('"id":1') ? undefined : reject(new Error(`${args.join(' ')} exited ${code}`))));
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
    };
    child.stdin.write(`${JSON.stringify(init)}\n`);
  });
}

function timeSync(args: string[], env: Record<string, string> = {}): Timing {
  const t = performance.now();
  const r = spawnSync(process.execPath, args, { env: { ...process.env, ...env }, stdio: 'ignore' });
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}`);
  return { ms: performance.now() - t };
}

async function pgAnswers(url: string): Promise<boolean> {
  const { default: postgres } = await import('postgres');
  const sql = postgres(url, { max: 1, connect_timeout: 2, onnotice: () => {} });
  try {
    await sql`select 1`;
    return true;
  } catch {
    return false;
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/** svc serve's environment for the bench: default settings, free ports for the dev chain and the MCP server. */
async function serveEnv(dataDir: string, more: Record<string, string> = {}): Promise<Record<string, string>> {
  return { SVC_DATA_DIR: dataDir, SVC_MCP_PORT: String(await freePort()), SVC_DEV_CHAIN_PORT: '0', ...more };
}

interface Row {
  label: string;
  goal: string;
  /** The reference row this one is compared with (its label), if any. */
  ref?: string;
  timings: Timing[];
}

export async function run(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-startup-'));
  const loadBefore = os.loadavg()[0]!;
  try {
    const data = path.join(dir, 'data');
    // An existing PGlite data folder: the first start creates it (not measured).
    await spawnToFirst200(['bin/svc.mjs', 'serve'], '/readyz', await serveEnv(data));
    const mcpEnv = { SVC_URL: 'http://127.0.0.1:9', SVC_SPEND_LEDGER: path.join(dir, 'ledger.json') };
    const pgUrl = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
    const pg = await pgAnswers(pgUrl);

    const rows: Row[] = [
      { label: 'bare node:http: spawn → first 200', goal: '', timings: [] },
      { label: 'svc serve, existing PGlite: spawn → /readyz 200', goal: '≤ 2000', ref: 'bare node:http: spawn → first 200', timings: [] },
      ...(pg ? [{ label: 'svc serve, PostgreSQL: spawn → /readyz 200', goal: '≤ 2000', ref: 'bare node:http: spawn → first 200', timings: [] }] : []),
      { label: 'bare node stdio: spawn → first answer', goal: '', timings: [] },
      { label: 'svc-mcp stdio: spawn → initialize answered', goal: '≤ 300', ref: 'bare node stdio: spawn → first answer', timings: [] },
      { label: 'node -e 0', goal: '', timings: [] },
      { label: 'svc-agent-host --help', goal: '≤ 700', ref: 'node -e 0', timings: [] },
    ];
    const row = (label: string) => rows.find((r) => r.label === label)!;
    for (let round = 0; round < ROUNDS; round++) {
      row('bare node:http: spawn → first 200').timings.push(await spawnToFirst200(['-e', BARE_HTTP], '/', {}));
      row('svc serve, existing PGlite: spawn → /readyz 200').timings.push(await spawnToFirst200(['bin/svc.mjs', 'serve'], '/readyz', await serveEnv(data)));
      if (pg)
        row('svc serve, PostgreSQL: spawn → /readyz 200').timings.push(
          await spawnToFirst200(['bin/svc.mjs', 'serve'], '/readyz', await serveEnv(path.join(dir, 'pgdata'), { DATABASE_URL: pgUrl })),
        );
      row('bare node stdio: spawn → first answer').timings.push(await stdioInitialize(['-e', BARE_STDIO], {}));
      row('svc-mcp stdio: spawn → initialize answered').timings.push(await stdioInitialize(['bin/svc-mcp.mjs'], mcpEnv));
      row('node -e 0').timings.push(timeSync(['-e', '0']));
      row('svc-agent-host --help').timings.push(timeSync(['bin/svc.mjs', '--help']));
    }

    // A CLI command against the running service (through its admin endpoint).
    const port = await freePort();
    const service = spawn(process.execPath, ['bin/svc.mjs', 'serve'], {
      env: { ...process.env, ...(await serveEnv(data)), PORT: String(port), SVC_BASE_URL: `http://127.0.0.1:${port}` },
      stdio: 'ignore',
    });
    try {
      await waitForHttp(`http://127.0.0.1:${port}/readyz`, 120_000);
      timeSync(['bin/svc.mjs', 'account', 'create', '--email', 'bench@example.com'], { SVC_DATA_DIR: data });
      const list: Row = { label: 'svc-agent-host key list (service running)', goal: '≤ 700', ref: 'node -e 0', timings: [] };
      for (let i = 0; i < ROUNDS; i++) list.timings.push(timeSync(['bin/svc.mjs', 'key', 'list', '--email', 'bench@example.com'], { SVC_DATA_DIR: data }));
      rows.push(list);
    } finally {
      await stop(service);
    }

    const loadAfter = os.loadavg()[0]!;
    console.log(
      `start-up, medians of ${ROUNDS} interleaved rounds (min–max beside); load average ${loadBefore.toFixed(1)} → ${loadAfter.toFixed(1)} on ${os.cpus().length} cores`,
    );
    console.log(`${'what'.padEnd(50)} ${'ms'.padStart(7)} ${'min–max'.padStart(12)} ${'CPU ms'.padStart(7)} ${'vs ref'.padStart(7)} ${'goal ms'.padStart(8)}`);
    for (const r of rows) {
      const ms = median(r.timings.map((t) => t.ms));
      const cpus = r.timings.map((t) => t.cpu).filter((c): c is number => c !== undefined);
      const spread = `${Math.min(...r.timings.map((t) => t.ms)).toFixed(0)}–${Math.max(...r.timings.map((t) => t.ms)).toFixed(0)}`;
      const ref = r.ref ? median(row(r.ref).timings.map((t) => t.ms)) : undefined;
      console.log(
        `${r.label.padEnd(50)} ${ms.toFixed(0).padStart(7)} ${spread.padStart(12)} ${(cpus.length ? median(cpus).toFixed(0) : '').padStart(7)} ${(ref ? `${(ms / ref).toFixed(1)}x` : '').padStart(7)} ${r.goal.padStart(8)}`,
      );
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
