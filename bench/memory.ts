import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, waitForHttp, withScratchDatabase } from './lib.js';
import { PGLITE_SHARED_BUFFERS } from '../service/db/client.js';

/**
 * Idle memory: the resident set (VmRSS) of `svc serve` once it answers and has settled, beside the
 * floors measured in the same run: a bare Node HTTP server, and a bare PGlite (the embedded database's
 * own footprint, which svc on PGlite cannot go below). Each figure is the median of ROUNDS fresh
 * processes, rounds interleaved. Only the Node process is counted: the dev chain (anvil) is a process
 * of its own, shown on its own line. Goals: ≤ 150 MB on PostgreSQL, ≤ 400 MB on PGlite.
 */
const ROUNDS = Number(process.env.BENCH_MEMORY_ROUNDS ?? 3);
const SETTLE_MS = 1500;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function rssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb / 1024;
}

function childPids(pid: number): number[] {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
  if (child.exitCode === null) child.kill('SIGKILL');
}

/** Spawns `args`, waits for `ready`, lets it settle, and reads its RSS (and its children's). */
async function measure(
  args: string[],
  env: Record<string, string>,
  ready: (child: ChildProcess) => Promise<void>,
): Promise<{ self: number; children: number }> {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  child.stdout!.resume();
  try {
    await ready(child);
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const self = rssMb(child.pid!);
    const children = childPids(child.pid!).reduce((sum, pid) => sum + rssMb(pid), 0);
    return { self, children };
  } finally {
    await stop(child);
  }
}

function serveCase(env: Record<string, string>) {
  return async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    return measure(['bin/svc.mjs', 'serve'], { PORT: String(port), SVC_BASE_URL: base, SVC_LOG_LEVEL: 'warn', ...env }, () => waitForHttp(`${base}/api/v1`));
  };
}

function printedLine(child: ChildProcess, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes(text)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`exited ${code} before printing ${text}`)));
  });
}

/**
 * PGlite alone in a Node process: opened on `dir` (created when missing) with the buffer pool svc
 * gives it (or another size), one query, then idle.
 */
function barePglite(dir: string, sharedBuffers = PGLITE_SHARED_BUFFERS) {
  const open = `PGlite.create({dataDir: ${JSON.stringify(dir)}, startParams: [...PGlite.defaultStartParams, '-c', 'shared_buffers=${sharedBuffers}']})`;
  const script = `import {PGlite} from '@electric-sql/pglite'; const db = await ${open}; await db.query('select 1'); console.log('ready'); setInterval(()=>{}, 1000);`;
  return measure(['--input-type=module', '-e', script], {}, (c) => printedLine(c, 'ready'));
}

export async function run(): Promise<void> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-memory-'));
  try {
    await withScratchDatabase('svc_bench_memory', async (dbUrl) => {
      const restartDir = path.join(tmp, 'restart');
      // A data directory that already holds a migrated database (the "restart" case).
      await serveCase({ SVC_DATA_DIR: restartDir })();
      await barePglite(path.join(tmp, 'bare-restart'));
      let fresh = 0;
      const cases: [string, () => Promise<{ self: number; children: number }>][] = [
        [
          'floor: bare Node HTTP server',
          () => measure(['-e', "require('http').createServer((q,s)=>s.end()).listen(0,()=>console.log('ready'))"], {}, (c) => printedLine(c, 'ready')),
        ],
        ['floor: bare PGlite, fresh data dir', () => barePglite(path.join(tmp, `bare-fresh-${++fresh}`))],
        ['floor: bare PGlite, restart', () => barePglite(path.join(tmp, 'bare-restart'))],
        ['(bare PGlite, restart, 128MB buffers)', () => barePglite(path.join(tmp, 'bare-restart'), '128MB')],
        ['svc serve, PostgreSQL', serveCase({ DATABASE_URL: dbUrl, SVC_DATA_DIR: path.join(tmp, 'pg') })],
        ['svc serve, PGlite, fresh data dir', () => serveCase({ SVC_DATA_DIR: path.join(tmp, `fresh-${++fresh}`) })()],
        ['svc serve, PGlite, restart', serveCase({ SVC_DATA_DIR: restartDir })],
      ];
      const results = new Map<string, { self: number[]; children: number[] }>(cases.map(([name]) => [name, { self: [], children: [] }]));
      for (let round = 0; round < ROUNDS; round++) {
        for (const [name, fn] of cases) {
          const r = await fn();
          results.get(name)!.self.push(r.self);
          results.get(name)!.children.push(r.children);
        }
      }
      console.log(`idle RSS, median of ${ROUNDS} interleaved rounds, ${SETTLE_MS} ms after the first answer`);
      console.log(`${'process'.padEnd(40)} ${'RSS MB'.padStart(8)} ${'children MB'.padStart(12)}   rounds`);
      for (const [name, r] of results) {
        console.log(
          `${name.padEnd(40)} ${median(r.self)!.toFixed(0).padStart(8)} ${median(r.children)!.toFixed(0).padStart(12)}   ${r.self.map((x) => x.toFixed(0)).join(', ')}`,
        );
      }
      console.log(
        `children: the dev chain (anvil), a process of its own. PGlite's buffer pool: ${PGLITE_SHARED_BUFFERS} (SVC_PGLITE_SHARED_BUFFERS; 128MB is PostgreSQL's default). Goals: ≤ 150 MB on PostgreSQL, ≤ 400 MB on PGlite.`,
      );
    });
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
