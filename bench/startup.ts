import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { freePort, waitForHttp } from './lib.js';

/**
 * Start-up as a user waits for it, each beside `node -e 0` measured in the same run (medians of 5):
 *   - stdio MCP: spawn bin/svc-mcp.mjs, send `initialize`, until its answer arrives (goal ≤ 300 ms);
 *   - a CLI command: `svc-agent-host --help`, and `key list` against the running service (goal ≤ 700 ms);
 *   - `npm start` (svc serve) to the first 200 from /api/v1 on an existing PGlite database, and on
 *     PostgreSQL when one answers (goal ≤ 2 s).
 */
const RUNS = 5;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function timeSync(args: string[], env: Record<string, string> = {}): number {
  const t = performance.now();
  const r = spawnSync(process.execPath, args, { env: { ...process.env, ...env }, stdio: 'ignore' });
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}`);
  return performance.now() - t;
}

/** Spawns svc-mcp over stdio and times spawn → the answer to `initialize`. */
function mcpInitialize(env: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const t = performance.now();
    const child = spawn(process.execPath, ['bin/svc-mcp.mjs'], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('"id":1')) {
        const ms = performance.now() - t;
        child.kill('SIGTERM');
        resolve(ms);
      }
    });
    child.once('exit', (code) => (out.includes('"id":1') ? undefined : reject(new Error(`svc-mcp exited ${code}`))));
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
    };
    child.stdin.write(`${JSON.stringify(init)}\n`);
  });
}

/** `svc serve` until /api/v1 answers 200; stops it (SIGTERM) and waits for it to exit. */
async function serveToFirst200(env: Record<string, string>): Promise<number> {
  const port = await freePort();
  const t = performance.now();
  const child = spawn(process.execPath, ['bin/svc.mjs', 'serve'], {
    env: {
      ...process.env,
      ...env,
      PORT: String(port),
      SVC_BASE_URL: `http://127.0.0.1:${port}`,
      SVC_MCP_PORT: 'off',
      SVC_LOG_LEVEL: 'silent',
      SVC_DEV_CHAIN_PORT: '0',
    },
    stdio: 'ignore',
  });
  try {
    await waitForHttp(`http://127.0.0.1:${port}/api/v1`, 120_000);
    return performance.now() - t;
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
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

export async function run(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-startup-'));
  try {
    const rows: [string, number, string][] = [];
    const ref: number[] = [];
    for (let i = 0; i < RUNS; i++) ref.push(timeSync(['-e', '0']));
    rows.push(['node -e 0 (reference)', median(ref)!, '']);

    const mcpEnv = { SVC_URL: 'http://127.0.0.1:9', SVC_SPEND_LEDGER: path.join(dir, 'ledger.json') };
    const init: number[] = [];
    for (let i = 0; i < RUNS; i++) init.push(await mcpInitialize(mcpEnv));
    rows.push(['svc-mcp stdio: spawn → initialize answered', median(init)!, '≤ 300']);

    const help: number[] = [];
    for (let i = 0; i < RUNS; i++) help.push(timeSync(['bin/svc.mjs', '--help']));
    rows.push(['svc-agent-host --help', median(help)!, '≤ 700']);

    // An existing PGlite database: the first start creates it (not measured).
    const data = path.join(dir, 'data');
    await serveToFirst200({ SVC_DATA_DIR: data });
    const pglite: number[] = [];
    for (let i = 0; i < 3; i++) pglite.push(await serveToFirst200({ SVC_DATA_DIR: data }));
    rows.push(['npm start → first 200, existing PGlite database', median(pglite)!, '≤ 2000']);

    // A CLI command against the running service (through its admin endpoint).
    const port = await freePort();
    const service = spawn(process.execPath, ['bin/svc.mjs', 'serve'], {
      env: {
        ...process.env,
        PORT: String(port),
        SVC_BASE_URL: `http://127.0.0.1:${port}`,
        SVC_DATA_DIR: data,
        SVC_MCP_PORT: 'off',
        SVC_LOG_LEVEL: 'silent',
        SVC_DEV_CHAIN_PORT: '0',
      },
      stdio: 'ignore',
    });
    try {
      await waitForHttp(`http://127.0.0.1:${port}/api/v1`, 120_000);
      timeSync(['bin/svc.mjs', 'account', 'create', '--email', 'bench@example.com'], { SVC_DATA_DIR: data });
      const list: number[] = [];
      for (let i = 0; i < RUNS; i++) list.push(timeSync(['bin/svc.mjs', 'key', 'list', '--email', 'bench@example.com'], { SVC_DATA_DIR: data }));
      rows.push(['svc-agent-host key list (service running)', median(list)!, '≤ 700']);
    } finally {
      service.kill('SIGTERM');
      await new Promise((r) => service.once('exit', r));
    }

    const pgUrl = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
    if (await pgAnswers(pgUrl)) {
      const pg: number[] = [];
      for (let i = 0; i < 3; i++) pg.push(await serveToFirst200({ SVC_DATA_DIR: path.join(dir, 'pgdata'), DATABASE_URL: pgUrl }));
      rows.push(['npm start → first 200, PostgreSQL', median(pg)!, '≤ 2000']);
    }

    console.log(`start-up, medians (${RUNS} runs; serve: 3); load average ${os.loadavg()[0]!.toFixed(1)} on ${os.cpus().length} cores`);
    console.log(`${'what'.padEnd(50)} ${'ms'.padStart(8)} ${'vs node -e 0'.padStart(13)} ${'goal ms'.padStart(8)}`);
    for (const [label, ms, goal] of rows)
      console.log(`${label.padEnd(50)} ${ms.toFixed(0).padStart(8)} ${`${(ms / rows[0]![1]).toFixed(1)}x`.padStart(13)} ${goal.padStart(8)}`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
