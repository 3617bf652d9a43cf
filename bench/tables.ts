import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { sql, type SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import postgres from 'postgres';
import { createAccount } from '../service/accounts/accounts.js';
import { loadConfig } from '../service/config.js';
import { openDb, type DbOrTx, rowsOf } from '../service/db/client.js';
import type { Deps } from '../service/deps.js';
import { systemClock } from '../service/kernel/clock.js';
import { createLogger } from '../service/kernel/logger.js';
import { SiteCache } from '../service/sites/site-cache.js';
import { PurgeOutbox } from '../service/cdn/purge-outbox.js';
import { accountOwner } from '../service/db/owner.js';
import { createSite } from '../service/sites/sites.js';
import { compileAggregateQuery, compileListQuery, encodeCursor, parseTableQuery, recordSource } from '../service/tables/query.js';
import { columnTableName, createColumnTable, finishColumnTable } from '../service/db/column-storage.js';
import { API_KEY_HEADER, WRITE_KEY_HEADER } from '../service/tables/access.js';
import { createPersonalKey } from '../service/accounts/personal-keys.js';
import { recordByIdStatement } from '../service/tables/record-rows.js';
import { currentRowsGuard, lookupVersionedTable } from '../service/tables/table-rows.js';
import { TableLists } from '../service/tables/table-lists.js';
import { Counter } from 'prom-client';
import {
  bulkInsertRecords,
  createTable,
  deleteRecordStatement,
  indexTableFields,
  insertRecordsStatement,
  setRecordFieldsStatement,
  type TableRow,
} from '../service/tables/tables.js';
import { cpuMs, freePort, profileFlags, seededRandom, spawnService, UNREACHED_LIMITS, waitForHttp, withScratchDatabase } from './lib.js';

/**
 * Table API on 1,000,000 records (real PostgreSQL on 127.0.0.1:5432, a scratch database created and
 * dropped here): p50/p95 of three GETs through the HTTP service, each beside the very SQL the query
 * compiler emits, run directly through postgres.js on the same database. Sequential requests, so the
 * figures are latencies, not throughput. Goal (issue 14): the indexed list query ≤ 1.2× direct SQL,
 * with ≤ 0.5 ms of our own.
 */
const ROWS = Number(process.env.BENCH_TABLE_ROWS ?? 1_000_000);
/** BENCH_TABLES_FLOOR_ONLY=1: only the comparisons with the bare servers (sections 3 and 4), e.g. while profiling them. */
const FLOOR_ONLY = process.env.BENCH_TABLES_FLOOR_ONLY === '1';
/** BENCH_TABLES_SECTIONS=4: only section 4 (the hand-written floor, issue 53), the run short enough to repeat. */
const ONLY_HAND_WRITTEN = process.env.BENCH_TABLES_SECTIONS === '4';
/** Sequential requests per row of section 3 (aggregates: a tenth). */
const FLOOR_REQUESTS = Number(process.env.BENCH_TABLES_FLOOR_REQUESTS ?? 300);
/** BENCH_TABLES_FLOOR_CASES=1,4: only these rows of section 3 (0-based), e.g. to profile one request. */
const FLOOR_CASES = process.env.BENCH_TABLES_FLOOR_CASES?.split(',').map(Number) ?? null;
/** Section 3 also times each server answering this many requests in a row before the other (timeInBlocks). */
const BLOCK = 100;

const SCHEMA = {
  fields: [
    { name: 'name', label: 'Name', type: 'string' as const },
    { name: 'category', label: 'Category', type: 'string' as const },
    { name: 'price', label: 'Price', type: 'number' as const },
    { name: 'qty', label: 'Quantity', type: 'integer' as const },
    { name: 'active', label: 'Active', type: 'boolean' as const },
    { name: 'day', label: 'Day', type: 'date' as const },
    { name: 'lat', label: 'Latitude', type: 'number' as const },
    { name: 'lon', label: 'Longitude', type: 'number' as const },
  ],
};

function* rows(n: number): Generator<Record<string, unknown>> {
  const rnd = seededRandom();
  for (let i = 0; i < n; i++) {
    yield {
      name: `item ${i} ${['red', 'green', 'blue', 'amber'][i % 4]} widget`,
      category: `cat-${i % 50}`,
      price: Math.round(rnd() * 100000) / 100,
      qty: Math.floor(rnd() * 1000),
      active: rnd() < 0.5,
      day: new Date(Date.UTC(2020, 0, 1) + Math.floor(rnd() * 1500) * 86400000).toISOString().slice(0, 10),
      lat: Math.round((rnd() * 180 - 90) * 1e5) / 1e5,
      lon: Math.round((rnd() * 360 - 180) * 1e5) / 1e5,
    };
  }
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

/** Latencies of `a` and `b` (and any more) run alternately (so drift and noise hit all alike), after a warm-up. */
async function timeInterleaved(
  n: number,
  a: () => Promise<void>,
  b: () => Promise<void>,
  ...more: (() => Promise<void>)[]
): Promise<[number[], number[], ...number[][]]> {
  const fns = [a, b, ...more];
  for (let i = 0; i < Math.min(3, n); i++) await Promise.all(fns.map((fn) => fn())); // warm caches and plans
  const out = fns.map((): number[] => []) as [number[], number[], ...number[][]];
  for (let i = 0; i < n; i++) {
    for (const [k, fn] of fns.entries()) {
      const t = performance.now();
      await fn();
      out[k]!.push(performance.now() - t);
    }
  }
  return out;
}

/** Rounds before section 3 times any (both servers equally warm: code optimised, caches filled); aggregates a tenth. */
const WARM_UP = 200;

/**
 * Section 3's interleaving: svc, the bare server, svc, the bare server with svc's statement, and so
 * on, so that every request wakes a process that answered none just before it, whichever server it
 * goes to. (Timed as svc, bare, bare+check in turn, the bare server answered two in a row for each of
 * svc's: the second found it running and warm, which added 0.05-0.1 to the short reads' ratios,
 * docs/performance.md.) Returns svc's 2n latencies, then the bare server's n and n.
 */
async function timeAlternating(
  n: number,
  warmUp: number,
  svc: () => Promise<void>,
  bare: () => Promise<void>,
  checked: () => Promise<void>,
): Promise<[number[], number[], number[]]> {
  for (let i = 0; i < warmUp; i++) for (const fn of [svc, bare, svc, checked]) await fn();
  const out: [number[], number[], number[]] = [[], [], []];
  const timed = async (k: number, fn: () => Promise<void>) => {
    const t = performance.now();
    await fn();
    out[k]!.push(performance.now() - t);
  };
  for (let i = 0; i < n; i++) {
    await timed(0, svc);
    await timed(1, bare);
    await timed(0, svc);
    await timed(2, checked);
  }
  return out;
}

/**
 * As timeInterleaved, but each function runs `block` times in a row before the next takes over: a
 * server that answers requests back to back, not one woken from idle for every request (on 2 cores,
 * waking costs each process more CPU per request than its code: docs/performance.md).
 */
async function timeInBlocks(n: number, block: number, fns: { run: () => Promise<void>; pid: number }[]): Promise<{ times: number[][]; cpu: BlockCpu[] }> {
  const times = fns.map((): number[] => []);
  const cpu = fns.map((): BlockCpu => ({ own: 0, db: 0 }));
  for (let done = 0; done < n; done += block) {
    for (const [k, fn] of fns.entries()) {
      const [own, db] = [cpuSince([fn.pid]), cpuSince(postgresPids())];
      for (let i = 0; i < block; i++) {
        const t = performance.now();
        await fn.run();
        times[k]!.push(performance.now() - t);
      }
      cpu[k]!.own += own();
      cpu[k]!.db += db();
    }
  }
  return { times, cpu };
}

/** CPU ms a server's process (`own`) and every PostgreSQL process (`db`) spent over its blocks. */
interface BlockCpu {
  own: number;
  db: number;
}

/** The processes of a PostgreSQL server on this machine (/proc; none when it is elsewhere): the database's CPU for a block. */
function postgresPids(): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/comm`, 'utf8') === 'postgres\n') pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** One row of the report: the API's and the statement's p50 and p95 (ms), and the ratio of the p50s. */
function printLatencies(label: string, api: number[], sqlTimes: number[], extra = ''): void {
  const cells = [api, sqlTimes].flatMap((xs) => [pct(xs, 50)!, pct(xs, 95)!].map((v) => v.toFixed(2).padStart(9)));
  console.log(`${label.padEnd(44)} ${cells.join(' ')} ${`${(pct(api, 50)! / pct(sqlTimes, 50)!).toFixed(2)}x`.padStart(10)}${extra}`);
}

/**
 * The floor issue 42 sets: each request beside the same statement served by a bare node:http +
 * postgres.js server in a process of its own (bench/bare/table-server.mjs: no routing, auth,
 * validation or row check), both on the same database, timed alternately. The statement is the
 * one the query compiler emits for the request, without the row check the service adds.
 */
async function measureBesideBareServer(
  db: DbOrTx,
  dbUrl: string,
  base: string,
  svcPid: number,
  table: TableRow,
  cases: { label: string; qs: string; recordId?: number; aggregate?: boolean; headers?: Record<string, string> }[],
): Promise<void> {
  const dialect = new PgDialect();
  const queries: Record<string, { sql: string; params: unknown[]; prepare?: boolean }> = {};
  // `/q<i>`: the compiler's statement alone; `/g<i>`: the very statement svc sends, with its row check
  // (a list's as svc compiles it: its values in its text where svc writes them there), prepared as
  // svc's read pools keep every statement.
  const current = await lookupVersionedTable(db, 'bench', table.slug);
  const guard = currentRowsGuard(current);
  const lists = new TableLists(db, { tableReads: new Counter({ name: 'bench_table_reads', help: 'unused', labelNames: ['run'], registers: [] }) });
  for (const [i, c] of cases.entries()) {
    const statement = (check?: SQL) =>
      c.recordId !== undefined
        ? recordByIdStatement(table, recordSource(table, check), c.recordId)
        : (() => {
            const plan = parseTableQuery(table.schema, new URLSearchParams(c.qs));
            const src = recordSource(table, check);
            return c.aggregate ? compileAggregateQuery(src, plan) : compileListQuery(src, plan);
          })();
    const q = dialect.sqlToQuery(statement());
    queries[`/q${i}`] = { sql: q.sql, params: q.params };
    const g = c.recordId !== undefined ? dialect.sqlToQuery(statement(guard)) : lists.list(current, `?${c.qs}`).main;
    queries[`/g${i}`] = { sql: g.sql, params: g.params, prepare: true };
  }
  const port = await freePort();
  const bare = spawn(process.execPath, [...profileFlags(), 'bench/bare/table-server.mjs'], {
    env: { ...process.env, BARE_DATABASE_URL: dbUrl, BARE_PORT: String(port), BARE_QUERIES: JSON.stringify(queries) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    await waitForHttp(`http://127.0.0.1:${port}/q0`);
    console.log(
      '3) beside a bare node:http + postgres.js server in its own process (same database; "bare" = the compiler\'s statement alone, "+check" = the bare server sending the very statement svc sends, its row check included):',
    );
    console.log(
      `${'request'.padEnd(44)} ${'API p50'.padStart(9)} ${'API p95'.padStart(9)} ${'bare p50'.padStart(9)} ${'bare p95'.padStart(9)} ${'p50 ratio'.padStart(10)} ${'+check p50'.padStart(11)} ${'ratio'.padStart(6)}   CPU µs/request svc / bare   in blocks of ${BLOCK}: ratio, +check ratio; CPU µs/request svc+database / bare+check+database`,
    );
    for (const [i, c] of cases.entries()) {
      const get = (url: string, headers?: Record<string, string>) => async () => {
        const res = await fetch(url, { headers });
        const body = await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`${url}: ${res.status} ${Buffer.from(body).toString()}`);
      };
      const path = c.recordId !== undefined ? `/${c.recordId}` : `?${c.qs}`;
      // Each server's own CPU per request (/proc, Linux): what its code costs, apart from the database's.
      const n = c.aggregate ? Math.ceil(FLOOR_REQUESTS / 10) : FLOOR_REQUESTS;
      const cpuBefore = [cpuMs([svcPid]), cpuMs([bare.pid!])];
      const warmUp = c.aggregate ? WARM_UP / 10 : WARM_UP;
      const [api, floor, checked] = await timeAlternating(
        n,
        warmUp,
        get(`${base}/api/data/bench/items${path}`, c.headers),
        get(`http://127.0.0.1:${port}/q${i}`),
        get(`http://127.0.0.1:${port}/g${i}`),
      );
      const cpuAfter = [cpuMs([svcPid]), cpuMs([bare.pid!])];
      // Each server answered 2n requests (and the warm-up's).
      const perRequest = cpuAfter.map((after, k) =>
        after === undefined || cpuBefore[k] === undefined ? '?' : (((after - cpuBefore[k]!) * 1000) / (2 * (n + warmUp))).toFixed(0),
      );
      const checkedP50 = pct(checked!, 50)!;
      // The same requests again, each server answering BLOCK in a row before the other takes over.
      const blocks = await timeInBlocks(n, c.aggregate ? Math.ceil(BLOCK / 10) : BLOCK, [
        { run: get(`${base}/api/data/bench/items${path}`, c.headers), pid: svcPid },
        { run: get(`http://127.0.0.1:${port}/q${i}`), pid: bare.pid! },
        { run: get(`http://127.0.0.1:${port}/g${i}`), pid: bare.pid! },
      ]);
      const [apiRun, floorRun, checkedRun] = blocks.times;
      const runRatios = [floorRun!, checkedRun!].map((xs) => `${(pct(apiRun!, 50)! / pct(xs, 50)!).toFixed(2)}x`);
      // In blocks, each server's CPU and the database's per request: svc against the bare server sending svc's statement.
      const blockCpu = [blocks.cpu[0]!, blocks.cpu[2]!].map((u) => `${((u.own * 1000) / n).toFixed(0)}+${((u.db * 1000) / n).toFixed(0)}`);
      printLatencies(
        c.label,
        api,
        floor,
        ` ${checkedP50.toFixed(2).padStart(11)} ${`${(pct(api, 50)! / checkedP50).toFixed(2)}x`.padStart(6)}   ${perRequest.join(' / ').padEnd(25)} ${runRatios.join(', ').padEnd(14)} ${blockCpu.join(' / ')}`,
      );
    }
    console.log(
      `Goal (issue 42): each ≤ 1.1x the bare server. "Interleaved": svc, bare, svc, bare+check in turn (each request wakes its server from idle), after ${WARM_UP} rounds of warm-up; "in blocks": ${BLOCK} in a row to each.`,
    );
  } finally {
    bare.kill('SIGTERM');
    await new Promise((r) => bare.once('exit', r));
  }
}

/** Section 4's read shapes: the Table API's request, and the bare floor server's path for it (bench/bare/table-floor.mjs). */
const FLOOR_SHAPES: { label: string; path: string; bare: string; aggregate?: boolean }[] = [
  { label: 'first page (50)', path: '?limit=50', bare: 'first' },
  { label: 'one record', path: '/7', bare: 'one' },
  { label: 'filter + sort (50)', path: '?field=category&value=cat-7&sortField=price&sortDir=desc&limit=50', bare: 'filter-sort' },
  { label: 'search q (50)', path: '?q=item%20123&searchFields=name&limit=50', bare: 'search' },
  { label: 'date range (50)', path: '?dateField=day&dateFrom=2021-01-01&dateTo=2021-01-31&limit=50', bare: 'date-range' },
  { label: 'bbox (50)', path: '?bbox=-20,-20,20,20&limit=50', bare: 'bbox' },
  { label: 'aggregate avg by category', path: '?aggregate=avg&aggregateField=price&groupBy=category', bare: 'aggregate', aggregate: true },
  { label: 'compact, 2 fields (50)', path: '?compact=true&fields=name,price&limit=50', bare: 'compact' },
  { label: 'cursor at id 15,000 (50)', path: `?limit=50&cursor=${encodeCursor({ s: 'id', v: [], id: 15000 })}`, bare: 'cursor' },
];
/** The machine's 1- and 5-minute load averages, printed beside section 4's figures. */
const loadAverage = () =>
  os
    .loadavg()
    .slice(0, 2)
    .map((l) => l.toFixed(1))
    .join(' / ');

/**
 * The two answers are the same JSON, floats to 12 significant digits: an average over many rows is
 * summed in scan order, which two statements (or two parallel plans) need not share (at 1,000,000
 * records: 500.3557839999988 against 500.3557840000012).
 */
function sameAnswer(a: unknown, b: unknown): boolean {
  const round = (_k: string, v: unknown) => (typeof v === 'number' && !Number.isInteger(v) ? Number(v.toPrecision(12)) : v);
  return isDeepStrictEqual(JSON.parse(JSON.stringify(a, round)), JSON.parse(JSON.stringify(b, round)));
}

/**
 * The CPU ms these processes spend from now (/proc), told when the returned function is called. A
 * process gone meanwhile (another client's connection) counts for nothing.
 */
function cpuSince(pids: number[]): () => number {
  const before = pids.map((pid) => cpuMs([pid]));
  return () =>
    pids.reduce((sum, pid, i) => {
      const after = cpuMs([pid]);
      return sum + (after === undefined || before[i] === undefined ? 0 : after - before[i]!);
    }, 0);
}

/**
 * The PostgreSQL backends of svc's connections and of the bare server's (its `application_name`,
 * bench/bare/table-floor.mjs), by pid: each side's database CPU per request. The bench's own
 * connections count with svc's; they are idle while a shape is timed.
 */
async function backendsOf(deps: Deps): Promise<{ svc: number[]; bare: number[] }> {
  const rows = rowsOf<{ pid: number; app: string }>(
    await deps.db.execute(sql`select pid, application_name as app from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`),
  );
  return { svc: rows.filter((r) => r.app !== BARE_APPLICATION).map((r) => r.pid), bare: rows.filter((r) => r.app === BARE_APPLICATION).map((r) => r.pid) };
}
const BARE_APPLICATION = 'bare-floor';

/** BENCH_TABLES_FLOOR_SHAPES=compact,first: only these shapes of section 4 (their bare paths), e.g. to profile them. */
const FLOOR_ONLY_SHAPES = process.env.BENCH_TABLES_FLOOR_SHAPES?.split(',') ?? null;
/** BENCH_TABLES_FLOOR_STORAGE=records|columns: only this storage in section 4. */
const FLOOR_ONLY_STORAGE = process.env.BENCH_TABLES_FLOOR_STORAGE ?? null;
/** BENCH_TABLES_FLOOR_ROUNDS: svc/bare pairs per shape in section 4 (aggregates a tenth), after a fifth as many of warm-up. */
const FLOOR_ROUNDS = Number(process.env.BENCH_TABLES_FLOOR_ROUNDS ?? 300);

/**
 * Section 4 (issue 53): every read shape on both storages, the Table API beside the simplest server a
 * user could write for the same answer (bench/bare/table-floor.mjs: hand-written SQL, postgres.js,
 * JSON.stringify; nothing of svc's compiler). The records' dataset twin is a column table with the
 * same rows. Each pair's answers are first checked to be the same JSON; then svc and the bare server
 * are timed in turn, request by request, and each server's CPU per request read from /proc.
 */
async function measureAgainstHandWritten(deps: Deps, dbUrl: string, base: string, svcPid: number, site: { id: string; slug: string }, records: TableRow) {
  const { table: cols } = await createTable(deps, site, { name: 'Items columns', slug: 'items-columns', schema: SCHEMA, kind: 'dataset', storage: 'columns' });
  await deps.db.transaction(async (tx) => {
    await createColumnTable(tx, cols.id, SCHEMA.fields);
    await tx.execute(
      sql`insert into ${sql.raw(columnTableName(cols.id))} select id, fields->>'name', fields->>'category', (fields->>'price')::float8, (fields->>'qty')::float8, (fields->>'active')::boolean, (fields->>'day')::date, (fields->>'lat')::float8, (fields->>'lon')::float8 from table_records where table_id = ${records.id} order by id`,
    );
    await finishColumnTable(tx, cols.id);
  });
  const port = await freePort();
  const bare = spawn(process.execPath, [...profileFlags(), 'bench/bare/table-floor.mjs'], {
    env: {
      ...process.env,
      BARE_DATABASE_URL: dbUrl,
      BARE_PORT: String(port),
      BARE_TABLE: records.id,
      BARE_COLUMNS: columnTableName(cols.id),
      BARE_CREATED: cols.createdAt.toISOString(),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    await waitForHttp(`http://127.0.0.1:${port}/records/first`);
    console.log(
      `4) beside the simplest hand-written server for the same answer (bench/bare/table-floor.mjs), svc and bare in turn, ${FLOOR_ROUNDS} pairs per row (aggregates a tenth); p50 ms; load average ${loadAverage()}:`,
    );
    console.log(
      `${'shape'.padEnd(28)} ${'storage'.padEnd(8)} ${'svc'.padStart(7)} ${'bare'.padStart(7)} ${'ratio'.padStart(7)}   CPU µs/request svc / bare, their database backends svc / bare`,
    );
    const body = async (url: string) => {
      const res = await fetch(url);
      const text = await res.text();
      if (res.status !== 200) throw new Error(`${url}: ${res.status} ${text}`);
      return text;
    };
    for (const shape of FLOOR_SHAPES.filter((s) => FLOOR_ONLY_SHAPES === null || FLOOR_ONLY_SHAPES.includes(s.bare))) {
      for (const [storage, slug] of [
        ['records', 'items'],
        ['columns', 'items-columns'],
      ] as const) {
        if (FLOOR_ONLY_STORAGE && storage !== FLOOR_ONLY_STORAGE) continue;
        const svcUrl = `${base}/api/data/${site.slug}/${slug}${shape.path}`;
        const bareUrl = `http://127.0.0.1:${port}/${storage}/${shape.bare}`;
        const [mine, theirs] = [JSON.parse(await body(svcUrl)), JSON.parse(await body(bareUrl))];
        if (!sameAnswer(mine, theirs))
          throw new Error(
            `${shape.label} (${storage}): the two answers differ\nsvc:  ${JSON.stringify(mine).slice(0, 600)}\nbare: ${JSON.stringify(theirs).slice(0, 600)}`,
          );
        const n = shape.aggregate ? Math.ceil(FLOOR_ROUNDS / 10) : FLOOR_ROUNDS;
        const svcGet = async () => void (await body(svcUrl));
        const bareGet = async () => void (await body(bareUrl));
        for (let i = 0; i < Math.ceil(n / 5); i++) for (const fn of [svcGet, bareGet]) await fn();
        const backends = await backendsOf(deps);
        const spent = [[svcPid], [bare.pid!], backends.svc, backends.bare].map(cpuSince);
        const [svcTimes, bareTimes] = await timeInterleaved(n, svcGet, bareGet);
        const [own, bareOwn, ownDb, bareDb] = spent.map((since) => (since() * 1000) / n);
        const [a, b] = [pct(svcTimes, 50)!, pct(bareTimes, 50)!];
        console.log(
          `${shape.label.padEnd(28)} ${storage.padEnd(8)} ${a.toFixed(2).padStart(7)} ${b.toFixed(2).padStart(7)} ${`${(a / b).toFixed(2)}x`.padStart(7)}   ${`${own!.toFixed(0)} / ${bareOwn!.toFixed(0)}`.padEnd(13)} ${ownDb!.toFixed(0)} / ${bareDb!.toFixed(0)}`,
        );
      }
    }
    console.log(
      `Goal (issue 53): each ≤ 1.1x (≤ 1.25x at worst), both storages. The answers of each pair were checked to be the same JSON first. Load average at the end ${loadAverage()} (${os.cpus().length} cores: other work on the machine slows both servers, not alike).`,
    );
  } finally {
    bare.kill('SIGTERM');
    await new Promise((r) => bare.once('exit', r));
  }
}

/**
 * Inserts into a hand-made Table: `POST` of one record through the Table API beside the very
 * statement the service runs (insertRecordsStatement: the record's id from the Table's sequence), sequential
 * p50/p95, then both with 32 in flight into the same Table (records/s).
 */
async function measureInserts(
  deps: Deps,
  site: { id: string; slug: string },
  base: string,
  direct: postgres.Sql,
): Promise<{ table: TableRow; writeKey: string }> {
  const { table, writeKey } = await createTable(deps, site, { name: 'Notes', slug: 'notes', schema: SCHEMA });
  const record = { name: 'a note', category: 'cat-1', price: 9.5, qty: 3, active: true, day: '2026-11-26', lat: 1.5, lon: 2.5 };
  const body = JSON.stringify({ record });
  const api = async () => {
    const res = await fetch(`${base}/api/data/${site.slug}/notes`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [WRITE_KEY_HEADER]: writeKey },
      body,
    });
    if (res.status !== 201) throw new Error(`insert: ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
  };
  const q = new PgDialect().sqlToQuery(insertRecordsStatement(table.id, [record], new Date()));
  const sqlInsert = async () => void (await direct.unsafe(q.sql, q.params as never[]));
  const [apiTimes, sqlTimes] = await timeInterleaved(500, api, sqlInsert);
  printLatencies('insert: POST one record', apiTimes, sqlTimes);
  const rate = async (fn: () => Promise<void>, n = 4000) => {
    let started = 0;
    const t = performance.now();
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (started++ < n) await fn();
      }),
    );
    return n / ((performance.now() - t) / 1000);
  };
  const rates: [number[], number[]] = [[], []];
  for (let round = 0; round < 3; round++) {
    rates[0].push(await rate(api));
    rates[1].push(await rate(sqlInsert));
  }
  const [apiRate, sqlRate] = rates.map((r) => pct(r, 50)!) as [number, number];
  console.log(
    `${'insert: 32 in flight into one Table, rec/s'.padEnd(44)} ${Math.round(apiRate).toLocaleString('en').padStart(9)} ${''.padStart(9)} ${Math.round(sqlRate).toLocaleString('en').padStart(9)} ${''.padStart(9)} ${`${(sqlRate / apiRate).toFixed(2)}x`.padStart(10)}`,
  );
  return { table, writeKey };
}

/**
 * The one-record requests on the Table that measureInserts filled (thousands of records): GET one
 * record, PATCH it, DELETE one (each side deletes its own ids), and GET /schema, each beside the
 * statement the service runs for it (without the row check the service adds; for the schema, whose
 * answer is the cached row, that check is the statement).
 */
async function measureRecordRequests(
  db: DbOrTx,
  site: { slug: string },
  base: string,
  direct: postgres.Sql,
  notes: { table: TableRow; writeKey: string },
): Promise<void> {
  const { table, writeKey } = notes;
  const dialect = new PgDialect();
  const statement = (q: SQL) => {
    const { sql: text, params } = dialect.sqlToQuery(q);
    return async () => void (await direct.unsafe(text, params as never[]));
  };
  const request = (method: string, path: string, body?: unknown) => async () => {
    const res = await fetch(`${base}/api/data/${site.slug}/notes${path}`, {
      method,
      headers: { 'content-type': 'application/json', [WRITE_KEY_HEADER]: writeKey },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
  };
  const row = async (label: string, n: number, api: () => Promise<void>, sqlSide: () => Promise<void>) => {
    const [apiTimes, sqlTimes] = await timeInterleaved(n, api, sqlSide);
    printLatencies(label, apiTimes, sqlTimes);
  };
  await row('GET one record', 500, request('GET', '/7'), statement(recordByIdStatement(table, recordSource(table), 7)));
  const fields = { qty: 4, active: false };
  await row(
    'PATCH one record (2 fields)',
    500,
    request('PATCH', '/7', { fields }),
    statement(setRecordFieldsStatement(table.id, 7, 'merge', fields, new Date())),
  );
  // Ids from 1001 up, alternately (the warm-up takes a few of each side's).
  let apiId = 1001;
  let sqlId = 1002;
  await row(
    'DELETE one record',
    400,
    async () => {
      await request('DELETE', `/${apiId}`)();
      apiId += 2;
    },
    async () => {
      await statement(deleteRecordStatement(table.id, sqlId))();
      sqlId += 2;
    },
  );
  const current = await lookupVersionedTable(db, site.slug, 'notes');
  await row('GET /schema (SQL: the row check)', 500, request('GET', '/schema'), statement(sql`select ${currentRowsGuard(current)}`));
}

export async function run(): Promise<void> {
  await withScratchDatabase('svc_bench_tables', async (dbUrl) => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-tables-'));
    let svc: ReturnType<typeof spawnService> | undefined;
    try {
      const database = await openDb({ databaseUrl: dbUrl });
      const config = loadConfig({ SVC_DATA_DIR: dataDir, DATABASE_URL: dbUrl, SVC_LOG_LEVEL: 'silent' });
      const deps = {
        config,
        db: database.db,
        clock: systemClock,
        log: createLogger('silent'),
        secret: 'bench',
        siteCache: new SiteCache(0),
        purges: new PurgeOutbox(database.db, null, systemClock, createLogger('silent'), 0),
      } as unknown as Deps;
      const account = await createAccount(database.db, { email: 'bench@example.com' });
      const site = await createSite(deps, accountOwner(account.id), { html: '<p>bench</p>', slug: 'bench', status: 'published' }).catch(async () => {
        // The blob store is not wired here (no files needed); create the row through SQL instead.
        await database.db.execute(
          `insert into sites (id, slug, owner_account_id, published, status) values ('site_bench', 'bench', '${account.id}', true, 'published')` as never,
        );
        return { id: 'site_bench', slug: 'bench' };
      });
      const { table } = await createTable(deps, site, { name: 'Items', slug: 'items', schema: SCHEMA, kind: 'dataset' });
      const { secret: personalKey } = await createPersonalKey(database.db, { accountId: account.id, name: 'bench', scopes: ['svc.data.read'] });

      const t0 = performance.now();
      await database.db.transaction((tx) => bulkInsertRecords(tx, table.id, rows(ROWS), { batchSize: 5000 }));
      const seedS = (performance.now() - t0) / 1000;
      await database.db.execute('analyze table_records' as never);
      console.log(
        `seeded ${ROWS.toLocaleString('en')} records with bulkInsertRecords in ${seedS.toFixed(1)} s (${Math.round(ROWS / seedS).toLocaleString('en')} rows/s, one transaction, GIN + btree maintained)`,
      );

      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      svc = spawnService({
        DATABASE_URL: dbUrl,
        PORT: String(port),
        SVC_BASE_URL: base,
        SVC_DATA_DIR: dataDir,
        SVC_LOG_LEVEL: 'warn',
        SVC_TABLE_STATEMENT_TIMEOUT_MS: '30000',
        ...UNREACHED_LIMITS,
      });
      await waitForHttp(`${base}/healthz`);

      const direct = postgres(dbUrl, { max: 10, onnotice: () => {} });
      // Pass JSON parameters through as text, exactly as drizzle's postgres.js driver (the service) does.
      const serializers = (direct as unknown as { options: { serializers: Record<string, (v: unknown) => unknown> } }).options.serializers;
      serializers['114'] = serializers['3802'] = (v) => v;
      const dialect = new PgDialect();
      const cases: { label: string; qs: string; n: number; aggregate?: boolean }[] = [
        { label: 'list: filter + sort + limit 50', qs: 'field=category&value=cat-7&sortField=price&sortDir=desc&limit=50', n: 200 },
        { label: 'list: range filter + sort + limit 50', qs: 'filter[price][gte]=990&sortField=qty&limit=50', n: 100 },
        { label: 'aggregate avg + groupBy (50 groups)', qs: 'aggregate=avg&aggregateField=price&groupBy=category', n: 20, aggregate: true },
        { label: 'q-search (substring, limit 50)', qs: 'q=item%20123456%20&searchFields=name&limit=50', n: 30 },
      ];
      const version = (await direct`show server_version`)[0]!.server_version;
      const header = () =>
        console.log(
          `${'query'.padEnd(44)} ${'API p50'.padStart(9)} ${'API p95'.padStart(9)} ${'SQL p50'.padStart(9)} ${'SQL p95'.padStart(9)} ${'p50 ratio'.padStart(10)}`,
        );
      const measure = async (c: (typeof cases)[number]) => {
        const plan = parseTableQuery(table.schema, new URLSearchParams(c.qs));
        const src = recordSource(table);
        const q = dialect.sqlToQuery(c.aggregate ? compileAggregateQuery(src, plan) : compileListQuery(src, plan));
        let n = 0;
        const [api, sqlTimes] = await timeInterleaved(
          c.n,
          async () => {
            const res = await fetch(`${base}/api/data/bench/items?${c.qs}`);
            const body = (await res.json()) as { records?: unknown[]; groups?: unknown[] };
            if (res.status !== 200) throw new Error(`${c.qs}: ${res.status} ${JSON.stringify(body)}`);
            n = (body.records ?? body.groups ?? []).length;
          },
          async () => {
            await direct.unsafe(q.sql, q.params as never[]);
          },
        );
        printLatencies(`${c.label} [${n}]`, api, sqlTimes);
      };
      console.log(`\nTable API on ${ROWS.toLocaleString('en')} records, sequential requests, PostgreSQL ${version}`);
      if (!FLOOR_ONLY && !ONLY_HAND_WRITTEN) {
        console.log('1) no field indexes (GIN on fields + btree (table_id, id) only):');
        header();
        for (const c of cases.slice(0, 2)) await measure(c);
      }
      const ti = performance.now();
      const indexed = await indexTableFields(database.db, table);
      await database.db.execute('analyze table_records' as never);
      if (!FLOOR_ONLY && !ONLY_HAND_WRITTEN) {
        console.log(`2) after indexTableFields (${indexed.join(', ')}: ${((performance.now() - ti) / 1000).toFixed(1)} s, concurrently):`);
        header();
        for (const c of cases) await measure(c);
      }
      await measureAgainstHandWritten(deps, dbUrl, base, svc.pid!, site, table);
      if (!ONLY_HAND_WRITTEN)
        await measureBesideBareServer(
          database.db,
          dbUrl,
          base,
          svc.pid!,
          table,
          [
            { label: 'list: first page (limit 50)', qs: 'limit=50' },
            { label: 'record: GET one', qs: '', recordId: 7 },
            { label: cases[0]!.label, qs: cases[0]!.qs },
            { label: cases[2]!.label, qs: cases[2]!.qs, aggregate: true },
            // What a signed-in caller adds: the check of the key this node keeps, in the read's statement
            // (service/tables/read-keys.ts).
            { label: 'list: first page, personal key', qs: 'limit=50', headers: { [API_KEY_HEADER]: personalKey } },
          ].filter((_, i) => FLOOR_CASES === null || FLOOR_CASES.includes(i)),
        );
      if (!FLOOR_ONLY && !ONLY_HAND_WRITTEN) await measureRecordRequests(database.db, site, base, direct, await measureInserts(deps, site, base, direct));
      const [floor] = await timeInterleaved(
        200,
        async () => void (await (await fetch(`${base}/healthz`)).arrayBuffer()),
        async () => {},
      );
      console.log(`${'HTTP floor: GET /healthz (no database)'.padEnd(44)} ${pct(floor, 50)!.toFixed(1).padStart(9)} ${pct(floor, 95)!.toFixed(1).padStart(9)}`);
      await database.close();
      console.log(
        'ms; "SQL" = the statement the compiler (or, for inserts, insertRecordsStatement) emits, run directly through postgres.js on the same database; the 32-in-flight row is records/s, its ratio SQL/API (interleaved rounds, medians). Goal for the indexed list query: ≤ 1.2x, ≤ 0.5 ms of our own (beyond the HTTP floor).',
      );
      await direct.end();
    } finally {
      if (svc) {
        svc.kill('SIGTERM');
        await new Promise((r) => svc!.once('exit', r));
      }
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
