/**
 * postgres.js statements: the same drizzle queries through postgres.js as published and as svc runs
 * it (bin/patch-deps.mjs: a statement that is not kept prepared, drizzle's every query, goes in one
 * round trip instead of two when its parameters are scalars). Both copies in this process, over one
 * scratch database on the local PostgreSQL (BENCH_PG_URL), interleaved call by call; p50 per
 * statement and this process's CPU per statement.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/postgres-js';
import type postgres from 'postgres';
import { withScratchDatabase } from './lib.js';

const ROUNDS = 3;
const PER_ROUND = 700;

interface PatchDeps {
  PATCHES: { pkg: string; file: string; edits: { find: string; replace: string }[] }[];
  unpatched(patch: PatchDeps['PATCHES'][number], text: string): string;
}

/** A copy of the installed postgres.js with svc's patch undone: postgres.js as published. */
async function publishedPostgres(dir: string): Promise<typeof postgres> {
  const installed = path.dirname(path.dirname(fileURLToPath(import.meta.resolve('postgres')))); // …/postgres/src/index.js
  fs.cpSync(installed, dir, { recursive: true });
  // @ts-expect-error: a plain .mjs script without type declarations
  const { PATCHES, unpatched } = (await import('../bin/patch-deps.mjs')) as PatchDeps;
  for (const patch of PATCHES.filter((p) => p.pkg === 'postgres')) {
    const file = path.join(dir, patch.file);
    fs.writeFileSync(file, unpatched(patch, fs.readFileSync(file, 'utf8')));
  }
  return (await import(pathToFileURL(path.join(dir, 'src', 'index.js')).href)).default as typeof postgres;
}

const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

export async function run(): Promise<void> {
  const svcPostgres = (await import('postgres')).default;
  const copy = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-postgres-'));
  try {
    const published = await publishedPostgres(copy);
    await withScratchDatabase('svc_bench_postgres', async (url) => {
      const clients = [published(url, { max: 4, onnotice: () => {} }), svcPostgres(url, { max: 4, onnotice: () => {} })];
      const [before, after] = clients.map((c) => drizzle(c));
      await after!.execute(sql`create table items (id bigserial primary key, name text not null, doc jsonb)`);
      await after!.execute(sql`insert into items (name, doc) values ('fixed', '{}')`);
      const cases: [string, (db: typeof after) => Promise<unknown>][] = [
        ['select one row by primary key', (db) => db!.execute(sql`select id, name, doc from items where id = ${1}`)],
        ['insert one row, returning its id', (db) => db!.execute(sql`insert into items (name, doc) values (${'bench'}, ${'{"a":1}'}::jsonb) returning id`)],
        ['update one row (3 parameters)', (db) => db!.execute(sql`update items set name = ${'b'}, doc = ${'{"b":2}'}::jsonb where id = ${1}`)],
        [
          'transaction: select + update',
          (db) =>
            db!.transaction(async (tx) => {
              await tx.execute(sql`select id from items where id = ${1}`);
              await tx.execute(sql`update items set name = ${'c'} where id = ${1}`);
            }),
        ],
      ];
      console.log(
        `${'statement (through drizzle)'.padEnd(34)} ${'published p50'.padStart(14)} ${'svc p50'.padStart(9)} ${'ratio'.padStart(7)}   CPU/statement, published → svc`,
      );
      for (const [name, fn] of cases) {
        for (let i = 0; i < 50; i++) for (const db of [before, after]) await fn(db);
        const times: [number[], number[]] = [[], []];
        const cpu = [0, 0];
        for (let r = 0; r < ROUNDS; r++)
          for (let i = 0; i < PER_ROUND; i++)
            for (const [k, db] of [before, after].entries()) {
              const c0 = process.cpuUsage();
              const t = performance.now();
              await fn(db);
              times[k]!.push(performance.now() - t);
              const c = process.cpuUsage(c0);
              cpu[k]! += c.user + c.system;
            }
        const n = ROUNDS * PER_ROUND;
        const [a, b] = times.map(p50) as [number, number];
        console.log(
          `${name.padEnd(34)} ${a.toFixed(3).padStart(14)} ${b.toFixed(3).padStart(9)} ${`${(b / a).toFixed(2)}x`.padStart(7)}   ${(cpu[0]! / n / 1000).toFixed(3)} → ${(cpu[1]! / n / 1000).toFixed(3)} ms`,
        );
      }
      await Promise.all(clients.map((c) => c.end()));
    });
    console.log(
      'ms; "published": postgres.js as on the registry (Parse and Describe, then Bind and Execute: two round trips); "svc": with bin/patch-deps.mjs (one).',
    );
  } finally {
    fs.rmSync(copy, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
