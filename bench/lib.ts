import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { ADDRESS_SURFACES } from '../service/kernel/config.js';

/** Shared helpers of `npm run bench`: load on loopback only, bounded in count and time. */
export interface LoadResult {
  label: string;
  requestsPerSec: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  /** CPU time (user + system) the serving processes spent per request answered, when their pids were given (Linux). */
  cpuUsPerRequest?: number;
}

export async function load(
  label: string,
  url: string,
  options: { connections?: number; seconds?: number; headers?: Record<string, string>; paths?: string[] } = {},
): Promise<LoadResult> {
  if (!/^http:\/\/(127\.0\.0\.1|localhost|\[::1\])[:/]/.test(url)) throw new Error(`bench load only targets loopback, not ${url}`);
  // `paths`: each connection sends these in turn (on `url`'s origin) instead of `url` alone.
  const requests = options.paths?.map((path) => ({ method: 'GET' as const, path }));
  const r = await autocannon({ url, connections: options.connections ?? 32, duration: options.seconds ?? 8, headers: options.headers, requests });
  return { label, requestsPerSec: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors, non2xx: r.non2xx };
}

/** One load target of `interleavedLoads`: a label, a URL and `load`'s options for it. */
export interface LoadTarget {
  label: string;
  url: string;
  options?: Parameters<typeof load>[2];
  /** The processes that serve it (an nginx master: its workers too), for CPU time per request. */
  pids?: () => number[];
}

/**
 * CPU time in ms (user + system) of processes so far, from /proc (Linux); undefined elsewhere.
 * Throughput on a 2-core machine shared with the load generator moves ±30 % between rounds; the CPU
 * a server spends per request answered is what its own code decides, and moves far less.
 */
export function cpuMs(pids: number[]): number | undefined {
  let ms = 0;
  for (const pid of pids) {
    try {
      const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      ms += ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
    } catch {
      return undefined;
    }
  }
  return ms;
}
const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;

/** A process and its children (an nginx master and its workers), from /proc. */
export function withChildren(pid: number): number[] {
  try {
    const children = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
    return [pid, ...(children ? children.split(' ').map(Number) : [])];
  } catch {
    return [pid];
  }
}

/** What `interleavedLoads` measured: each target's median round, and every round kept for ratios. */
export interface InterleavedLoads {
  /** The round with the median req/s, per target in the targets' order (its latencies and errors stay together). */
  medians: LoadResult[];
  /** Median over rounds of `a`'s req/s divided by `b`'s in the same round, and each round's ratio. */
  ratio(a: string, b: string): { median: number; rounds: number[] };
  /** Median over rounds of `b`'s CPU per request divided by `a`'s (above 1: `a` spends less), when both were measured. */
  cpuRatio(a: string, b: string): { median: number; rounds: number[] } | undefined;
  /** Median CPU µs per request of a target over rounds, when measured. */
  cpuUsPerRequest(label: string): number | undefined;
}

/**
 * Each target loaded once per round, in the same order, for `rounds` rounds: a busy moment of the
 * machine falls on every target alike, and medians leave the outlying round out.
 */
export async function interleavedLoads(targets: LoadTarget[], rounds: number): Promise<InterleavedLoads> {
  const runs = new Map<string, LoadResult[]>(targets.map((t) => [t.label, []]));
  for (let round = 0; round < rounds; round++)
    for (const t of targets) {
      const pids = t.pids?.();
      const before = pids && cpuMs(pids);
      const result = await load(t.label, t.url, t.options);
      const after = pids && cpuMs(pids);
      const seconds = t.options?.seconds ?? 8;
      if (before !== undefined && after !== undefined && result.requestsPerSec > 0)
        result.cpuUsPerRequest = ((after - before) * 1000) / (result.requestsPerSec * seconds);
      runs.get(t.label)!.push(result);
    }
  const middle = <T>(xs: T[], by: (x: T) => number) => [...xs].sort((x, y) => by(x) - by(y))[Math.floor(xs.length / 2)]!;
  return {
    medians: targets.map((t) => middle(runs.get(t.label)!, (r) => r.requestsPerSec)),
    ratio(a, b) {
      const other = runs.get(b)!;
      const each = runs.get(a)!.map((r, i) => r.requestsPerSec / other[i]!.requestsPerSec);
      return { median: middle(each, (x) => x), rounds: each };
    },
    cpuRatio(a, b) {
      const other = runs.get(b)!;
      const each = runs.get(a)!.map((r, i) => (other[i]!.cpuUsPerRequest ?? Number.NaN) / (r.cpuUsPerRequest ?? Number.NaN));
      return each.some(Number.isNaN) ? undefined : { median: middle(each, (x) => x), rounds: each };
    },
    cpuUsPerRequest(label) {
      const each = runs.get(label)!.map((r) => r.cpuUsPerRequest);
      return each.every((x) => x !== undefined) ? middle(each as number[], (x) => x) : undefined;
    },
  };
}

/** `0.74x (rounds 0.80 0.64 0.74)` */
export function formatRatio(r: { median: number; rounds: number[] }): string {
  return `${r.median.toFixed(2)}x (rounds ${r.rounds.map((x) => x.toFixed(2)).join(' ')})`;
}

export function printTable(title: string, rows: LoadResult[], reference?: string): void {
  const width = Math.max(44, ...rows.map((r) => r.label.length));
  console.log(`\n${title}`);
  console.log(
    `${'target'.padEnd(width)} ${'req/s'.padStart(9)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'errors'.padStart(7)}${reference ? ` ${'vs ref'.padStart(7)}` : ''}`,
  );
  const ref = rows.find((r) => r.label === reference);
  for (const r of rows) {
    const ratio = ref ? ` ${(r.requestsPerSec / ref.requestsPerSec).toFixed(2).padStart(6)}x` : '';
    console.log(
      `${r.label.padEnd(width)} ${r.requestsPerSec.toFixed(0).padStart(9)} ${String(r.p50).padStart(7)} ${String(r.p99).padStart(7)} ${String(r.errors + r.non2xx).padStart(7)}${ratio}`,
    );
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

export async function waitForHttp(url: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const r = await fetch(url);
      if (r.status < 500) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms`);
}

/**
 * Node flags for a process a bench starts: with BENCH_CPU_PROF=<dir>, each writes a CPU profile there
 * when it exits (open it in Chrome DevTools, or summarise it with any .cpuprofile reader), sampled
 * every BENCH_CPU_PROF_INTERVAL µs (Node's default 1000 is coarse beside a request of a few hundred).
 */
export function profileFlags(): string[] {
  const dir = process.env.BENCH_CPU_PROF;
  const interval = process.env.BENCH_CPU_PROF_INTERVAL;
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`, ...(interval ? [`--cpu-prof-interval=${interval}`] : [])] : [];
}

/**
 * The benches' row generator: a linear congruential generator over [0, 1), the same sequence every
 * run. It multiplies in 32 bits: the product as a double lost bits, and the values cycled after
 * ~6,000 distinct rows.
 */
export function seededRandom(seed = 12345): () => number {
  return () => {
    seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
}

/** A rate limit (per minute) no bench reaches: every signed-in request is still counted, as in production. */
const UNREACHED_RATE_LIMIT = '1000000000';

/**
 * The limits of every `svc serve` a bench starts: per key and per client address (all surfaces), each
 * request counted as in production against a limit no bench reaches. A bench's load comes from one
 * loopback address: the default address limits would answer 429 within a second, and a latency
 * measured on refusals is no latency of the API.
 */
export const UNREACHED_LIMITS: Record<string, string> = {
  SVC_RATE_LIMIT_PER_MINUTE: UNREACHED_RATE_LIMIT,
  SVC_ADDRESS_LIMITS: ADDRESS_SURFACES.map((s) => `${s}=${UNREACHED_RATE_LIMIT}`).join(','),
};

/**
 * A temp folder, a free loopback port and the environment of the `svc serve` a bench starts there:
 * data in `<dir>/svc`, warnings only, a rate limit no bench reaches (each signed-in request is still
 * counted, as with the default limit); `extra` adds to or overrides it.
 */
export async function benchServiceEnv(
  name: string,
  extra: Record<string, string> = {},
): Promise<{ dir: string; dataDir: string; base: string; env: Record<string, string> }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `svc-bench-${name}-`));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const dataDir = path.join(dir, 'svc');
  const env = {
    SVC_DATA_DIR: dataDir,
    PORT: String(port),
    SVC_BASE_URL: base,
    SVC_LOG_LEVEL: 'warn',
    ...UNREACHED_LIMITS,
    ...extra,
  };
  return { dir, dataDir, base, env };
}

/** An account and an all-scopes personal key, made through the CLI before the service starts (direct database access). */
export function cliPersonalKey(env: Record<string, string>, email = 'bench@example.com'): string {
  const cli = (...args: string[]) => spawnSync(process.execPath, ['bin/svc.mjs', ...args], { env: { ...process.env, ...env }, encoding: 'utf8' });
  cli('account', 'create', '--email', email);
  return JSON.parse(cli('key', 'create', '--email', email, '--all-scopes').stdout).secret as string;
}

export function spawnService(env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, [...profileFlags(), 'bin/svc.mjs', 'serve'], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
}

/** Finds a Debian binary, installing its package when missing and allowed (root + apt). */
export function ensureDebianBinary(binary: string, pkg: string): string | null {
  const which = () =>
    spawnSync('sh', ['-c', `command -v ${binary} || ls /usr/sbin/${binary} 2>/dev/null`], { encoding: 'utf8' })
      .stdout.trim()
      .split('\n')[0] || null;
  let found = which();
  if (!found && process.getuid?.() === 0) {
    console.log(`installing ${pkg} (Debian) for the reference run…`);
    spawnSync('sh', ['-c', `apt-get update -q >/dev/null 2>&1; DEBIAN_FRONTEND=noninteractive apt-get install -y -q ${pkg} >/dev/null 2>&1`]);
    found = which();
  }
  return found;
}

/** The PostgreSQL server benches use (BENCH_PG_URL; default the machine's local server). */
export const BENCH_PG_SERVER = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * Runs `work` against a fresh scratch database on BENCH_PG_SERVER and drops it afterwards, or prints
 * why it is skipped when no server answers. `admin` stays connected to the server's own database.
 */
export async function withScratchDatabase(prefix: string, work: (url: string, admin: postgres.Sql) => Promise<void>): Promise<void> {
  const admin = postgres(BENCH_PG_SERVER, { max: 1, onnotice: () => {} });
  try {
    await admin`select 1`;
  } catch {
    console.log(`skipped: no PostgreSQL at ${BENCH_PG_SERVER} (set BENCH_PG_URL)`);
    await admin.end();
    return;
  }
  const dbName = `${prefix}_${randomBytes(4).toString('hex')}`;
  await admin.unsafe(`create database ${dbName}`);
  const url = new URL(BENCH_PG_SERVER);
  url.pathname = `/${dbName}`;
  try {
    await work(url.toString(), admin);
  } finally {
    // BENCH_KEEP_DATABASE=1 keeps it, to take its statements apart afterwards (psql, pgbench, EXPLAIN).
    if (process.env.BENCH_KEEP_DATABASE === '1') console.log(`kept the database: ${url}`);
    else await admin.unsafe(`drop database if exists ${dbName} with (force)`);
    await admin.end();
  }
}
