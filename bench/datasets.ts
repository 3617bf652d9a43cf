import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { profileFlags, seededRandom, withScratchDatabase } from './lib.js';

/**
 * Data-file conversion on 1,000,000 rows (real PostgreSQL on 127.0.0.1:5432, a scratch database
 * created and dropped here): the same rows as a CSV and as a Parquet file, each converted by the
 * real pipeline (blob store → schema → COPY into the dataset's column table, one transaction: see
 * service/datasets/load.ts), beside `COPY … FROM STDIN` of the same CSV into a typed table through
 * postgres.js — the physical limit on this machine — and, for scale, COPY of the same rows as JSON
 * into the shared JSONB `table_records` of hand-made Tables (where datasets lived before column
 * storage). Then the same on PGlite, the embedded default, beside its own bare `COPY` of the CSV (in
 * 4 MiB statements, as PGlite takes a COPY). Each case runs in its own process so its peak RSS is its
 * own. Goal (issue 14): conversion ≤ 1.2× COPY time, RSS bounded (independent of file size: try
 * BENCH_DATASET_ROWS=200000). The cases of each table run in BENCH_DATASET_ROUNDS (default 3)
 * interleaved rounds; the tables show medians.
 */
const ROWS = Number(process.env.BENCH_DATASET_ROWS ?? 1_000_000);
const ROUNDS = Math.max(1, Number(process.env.BENCH_DATASET_ROUNDS ?? 3));
const here = path.dirname(fileURLToPath(import.meta.url));

interface Figure {
  label: string;
  seconds: number;
  rows: number;
  maxRssMb: number;
}

function* rows(n: number): Generator<[number, string, string, number, number, boolean, string, number, number]> {
  const rnd = seededRandom();
  for (let i = 0; i < n; i++) {
    yield [
      i + 1,
      `item ${i} ${['red', 'green', 'blue', 'amber'][i % 4]} widget`,
      `cat-${i % 50}`,
      Math.round(rnd() * 100000) / 100,
      Math.floor(rnd() * 1000),
      rnd() < 0.5,
      new Date(Date.UTC(2020, 0, 1) + Math.floor(rnd() * 1500) * 86400000).toISOString().slice(0, 10),
      Math.round((rnd() * 180 - 90) * 1e5) / 1e5,
      Math.round((rnd() * 360 - 180) * 1e5) / 1e5,
    ];
  }
}

const HEADER = ['item_id', 'name', 'category', 'price', 'qty', 'active', 'day', 'lat', 'lon'];

async function writeCsv(file: string): Promise<void> {
  const out = fs.createWriteStream(file);
  out.write(`${HEADER.join(',')}\n`);
  let buf: string[] = [];
  for (const r of rows(ROWS)) {
    buf.push(r.join(','));
    if (buf.length === 10_000) {
      if (!out.write(`${buf.join('\n')}\n`)) await new Promise<void>((res) => out.once('drain', () => res()));
      buf = [];
    }
  }
  if (buf.length) out.write(`${buf.join('\n')}\n`);
  await new Promise<void>((res, rej) => out.end((e?: Error | null) => (e ? rej(e) : res())));
}

async function writeParquet(file: string): Promise<void> {
  const { ByteWriter, parquetWrite, schemaFromColumnData } = await import('hyparquet-writer');
  const cols: unknown[][] = HEADER.map(() => []);
  // `day` as a DATE column, as a dataframe library writes dates (the CSV has the same day as text).
  for (const r of rows(ROWS)) for (const [i, v] of r.entries()) cols[i]!.push(i === 6 ? new Date(`${v}T00:00:00Z`) : v);
  const types = ['INT32', 'STRING', 'STRING', 'DOUBLE', 'INT32', 'BOOLEAN', undefined, 'DOUBLE', 'DOUBLE'] as const;
  const writer = new ByteWriter();
  const columnData = HEADER.map((name, i) => ({ name, data: cols[i] as never, type: types[i] }));
  const schema = schemaFromColumnData({
    columnData,
    schemaOverrides: { day: { name: 'day', type: 'INT32', converted_type: 'DATE', repetition_type: 'OPTIONAL' } },
  });
  parquetWrite({ writer, columnData: columnData.map(({ name, data }) => ({ name, data })), schema, codec: 'SNAPPY', rowGroupSize: 100_000 });
  fs.writeFileSync(file, Buffer.from(writer.getBuffer()));
}

type Mode = 'copy' | 'copy-jsonb' | 'copy-pglite' | 'convert';

/** One measured case, in this process (spawned by `run`). Prints its figure as JSON. `dbUrl` 'pglite': an embedded database. */
async function worker(mode: Mode, dbUrl: string, file: string): Promise<void> {
  const started = performance.now();
  let count = 0;
  if (mode === 'copy-jsonb') {
    // The storage of hand-made Tables: table_records (JSONB + the same indexes), rows as JSON via COPY.
    const sql = postgres(dbUrl, { max: 1, onnotice: () => {} });
    await sql.unsafe('drop table if exists copy_jsonb');
    await sql.unsafe('create table copy_jsonb (like table_records including all)');
    const t = performance.now();
    const writable = await sql`copy copy_jsonb (table_id, id, fields) from stdin`.writable();
    const { Readable } = await import('node:stream');
    const types = [Number, String, String, Number, Number, (v: string) => v === 'true', String, Number, Number];
    async function* lines() {
      let carry = '';
      let header = true;
      let id = 0;
      for await (const chunk of fs.createReadStream(file, 'utf8')) {
        const parts = (carry + chunk).split('\n');
        carry = parts.pop()!;
        const out: string[] = [];
        for (const l of parts) {
          if (header) {
            header = false;
            continue;
          }
          const cells = l.split(',');
          const o: Record<string, unknown> = {};
          for (const [i, h] of HEADER.entries()) o[h] = (types[i] as (v: string) => unknown)(cells[i]!);
          out.push(`tbl_bench\t${++id}\t${JSON.stringify(o).replace(/\\/g, '\\\\')}\n`);
        }
        yield out.join('');
      }
    }
    await pipeline(Readable.from(lines()), writable);
    const seconds = (performance.now() - t) / 1000;
    count = Number((await sql`select count(*)::int as n from copy_jsonb`)[0]!.n);
    await sql.end();
    console.log(JSON.stringify({ seconds, rows: count, maxRssMb: process.resourceUsage().maxRSS / 1024 }));
    return;
  }
  if (mode === 'copy') {
    const sql = postgres(dbUrl, { max: 1, onnotice: () => {} });
    await sql.unsafe('drop table if exists copy_target');
    await sql.unsafe(
      'create table copy_target (item_id integer, name text, category text, price double precision, qty integer, active boolean, day date, lat double precision, lon double precision)',
    );
    const t = performance.now();
    const writable = await sql`copy copy_target from stdin with (format csv, header true)`.writable();
    await pipeline(fs.createReadStream(file), writable);
    const seconds = (performance.now() - t) / 1000;
    count = Number((await sql`select count(*)::int as n from copy_target`)[0]!.n);
    await sql.end();
    console.log(JSON.stringify({ seconds, rows: count, maxRssMb: process.resourceUsage().maxRSS / 1024 }));
    return;
  }
  if (mode === 'copy-pglite') {
    const { csvRecordChunks } = await import('../service/datasets/parsers/csv-scan.js');
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-pglite-'));
    try {
      const { loadConfig } = await import('../service/config.js');
      const { openDatabase } = await import('../cli/runtime.js');
      const database = await openDatabase(loadConfig({ SVC_DATA_DIR: dataDir }));
      const pglite = (database.db as unknown as { $client: { query(q: string, p: unknown[], o?: { blob: Blob }): Promise<{ rows: { n: number }[] }> } })
        .$client;
      await pglite.query(
        'create table copy_target (item_id integer, name text, category text, price double precision, qty integer, active boolean, day date, lat double precision, lon double precision)',
        [],
      );
      const t = performance.now();
      let header = true;
      for await (const chunk of csvRecordChunks(fs.createReadStream(file) as AsyncIterable<Buffer>)) {
        await pglite.query(`copy copy_target from '/dev/blob' with (format csv, header ${header})`, [], { blob: new Blob([new Uint8Array(chunk)]) });
        header = false;
      }
      const seconds = (performance.now() - t) / 1000;
      count = (await pglite.query('select count(*)::int as n from copy_target', [])).rows[0]!.n;
      await database.close();
      console.log(JSON.stringify({ seconds, rows: count, maxRssMb: process.resourceUsage().maxRSS / 1024 }));
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
    return;
  }
  const embedded = dbUrl === 'pglite';
  const { loadConfig } = await import('../service/config.js');
  const { openDb } = await import('../service/db/client.js');
  const { systemClock } = await import('../service/deps.js');
  const { createLogger } = await import('../service/logger.js');
  const { SiteCache } = await import('../service/sites/site-cache.js');
  const { LocalBlobStore } = await import('../service/storage/local-store.js');
  const { createAccount } = await import('../service/accounts/accounts.js');
  const { accountOwner } = await import('../service/sites/owner.js');
  const { createSite } = await import('../service/sites/sites.js');
  const { createUpload } = await import('../service/datasets/uploads.js');
  const { planConversion, convertDataFile } = await import('../service/datasets/datasets.js');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-datasets-'));
  try {
    const config = loadConfig({
      SVC_DATA_DIR: dataDir,
      ...(embedded ? {} : { DATABASE_URL: dbUrl }),
      SVC_LOG_LEVEL: 'silent',
      SVC_DATASET_MAX_FILE_BYTES: String(8 * 1024 ** 3),
    });
    // PGlite as the service opens it; PostgreSQL's scratch database is migrated once by `run`.
    const database = embedded ? await (await import('../cli/runtime.js')).openDatabase(config) : await openDb({ databaseUrl: dbUrl, migrate: false });
    const blobs = new LocalBlobStore(path.join(dataDir, 'blobs'), 'http://127.0.0.1:1', 'bench');
    const deps = { config, db: database.db, blobs, clock: systemClock, log: createLogger('silent'), secret: 'bench', siteCache: new SiteCache(0) } as never;
    const account = await createAccount(database.db, { email: `bench-${randomBytes(4).toString('hex')}@example.com` });
    const site = await createSite(deps, accountOwner(account.id), {
      html: '<p>bench</p>',
      slug: `bench-${randomBytes(3).toString('hex')}`,
      status: 'published',
    });
    const fileName = path.basename(file);
    const size = fs.statSync(file).size;
    const slot = await createUpload(deps, site, { fileName, fileSize: size });
    fs.copyFileSync(file, path.join(dataDir, 'copy'));
    await blobs.putFile(slot.key, path.join(dataDir, 'copy'));
    const t = performance.now();
    const plan = await planConversion(deps, site, { key: slot.key, fileName });
    const { view } = await database.db.transaction((tx) => convertDataFile(deps, site, plan, tx));
    const seconds = (performance.now() - t) / 1000;
    // Counted in the database, not taken from the answer.
    const { columnTableName } = await import('../service/db/column-storage.js');
    const { sql } = await import('drizzle-orm');
    const { rowsOf } = await import('../service/db/client.js');
    count = Number(rowsOf<{ n: number }>(await database.db.execute(sql.raw(`select count(*)::int as n from ${columnTableName(view.tableId)}`)))[0]!.n);
    if (count !== view.recordCount) throw new Error(`loaded ${count} rows, answered ${view.recordCount}`);
    await database.close();
    console.log(JSON.stringify({ seconds, rows: count, maxRssMb: process.resourceUsage().maxRSS / 1024 }));
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  void started;
}

function measure(label: string, mode: Mode, dbUrl: string, file: string): Figure {
  const r = spawnSync(process.execPath, [...profileFlags(), '--import', 'tsx', path.join(here, 'datasets.ts'), '--datasets-worker', mode, dbUrl, file], {
    encoding: 'utf8',
    maxBuffer: 16 * 1024 * 1024,
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  const line = r.stdout.trim().split('\n').pop() ?? '';
  if (r.status !== 0 || !line.startsWith('{')) throw new Error(`${label} failed (${r.status}): ${r.stderr.slice(-2000)}`);
  return { label, ...(JSON.parse(line) as Omit<Figure, 'label'>) };
}

export async function run(): Promise<void> {
  await withScratchDatabase('svc_bench_datasets', async (dbUrl, admin) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-files-'));
    try {
      const { openDb } = await import('../service/db/client.js');
      await (await openDb({ databaseUrl: dbUrl })).close(); // migrate once
      const csv = path.join(dir, 'items.csv');
      const parquet = path.join(dir, 'items.parquet');
      await writeCsv(csv);
      await writeParquet(parquet);
      const mb = (f: string) => (fs.statSync(f).size / 1024 / 1024).toFixed(1);
      console.log(
        `${ROWS.toLocaleString('en')} rows × 9 columns: CSV ${mb(csv)} MB, Parquet (snappy, 100k-row groups) ${mb(parquet)} MB; PostgreSQL ${(await admin`show server_version`)[0]!.server_version}`,
      );
      // Interleaved rounds, medians: the machine is shared, and one run can land on a busy moment.
      printConversions(
        [
          ['COPY csv → typed table (postgres.js)', 'copy', dbUrl, csv],
          ['convert CSV → dataset', 'convert', dbUrl, csv],
          ['convert Parquet → dataset', 'convert', dbUrl, parquet],
        ],
        () => measure('COPY same rows as JSON → table_records', 'copy-jsonb', dbUrl, csv),
      );
      console.log('goal (issue 14): convert ≤ 1.20x COPY; RSS bounded (does not grow with the file). Row 2, for scale: the JSONB');
      console.log('storage of hand-made Tables (GIN jsonb_path_ops + btree), where datasets lived before column storage.');
      console.log('\nPGlite (the embedded default), each case a new database from the template:');
      printConversions([
        ['COPY csv → typed table (PGlite)', 'copy-pglite', 'pglite', csv],
        ['convert CSV → dataset (PGlite)', 'convert', 'pglite', csv],
        ['convert Parquet → dataset (PGlite)', 'convert', 'pglite', parquet],
      ]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}

/**
 * Runs `cases` (the first is the reference) in interleaved rounds and prints their medians, each with
 * its ratio to the reference and each round's; `extra` (one run, measured after the rounds) goes after the reference.
 */
function printConversions(cases: [label: string, mode: Mode, dbUrl: string, file: string][], extra?: () => Figure): void {
  const runs: Figure[][] = cases.map(() => []);
  for (let round = 0; round < ROUNDS; round++) for (const [i, c] of cases.entries()) runs[i]!.push(measure(...c));
  const median = (fs: Figure[]) => [...fs].sort((a, b) => a.seconds - b.seconds)[Math.floor(fs.length / 2)]!;
  const figures = runs.map((r) => ({ ...median(r), maxRssMb: Math.max(...r.map((f) => f.maxRssMb)) }));
  if (extra) figures.splice(1, 0, extra());
  const ref = figures[0]!;
  console.log(`median of ${ROUNDS} interleaved rounds${extra ? ' (row 2: one run)' : ''}; peak RSS: the largest of the rounds`);
  console.log(
    `${'case'.padEnd(40)} ${'seconds'.padStart(8)} ${'rows/s'.padStart(10)} ${'peak RSS MB'.padStart(12)} ${'vs COPY'.padStart(8)}   rounds (vs that round's COPY)`,
  );
  for (const f of figures) {
    const i = cases.findIndex(([label]) => label === f.label);
    const perRound = i < 0 ? '' : runs[i]!.map((r, k) => `${(r.seconds / runs[0]![k]!.seconds).toFixed(2)}x`).join(' ');
    console.log(
      `${f.label.padEnd(40)} ${f.seconds.toFixed(2).padStart(8)} ${Math.round(f.rows / f.seconds)
        .toLocaleString('en')
        .padStart(10)} ${f.maxRssMb.toFixed(0).padStart(12)} ${`${(f.seconds / ref.seconds).toFixed(2)}x`.padStart(8)}   ${perRound}`,
    );
  }
}

if (process.argv.includes('--datasets-worker')) {
  const i = process.argv.indexOf('--datasets-worker');
  await worker(process.argv[i + 1] as Mode, process.argv[i + 2]!, process.argv[i + 3]!);
  process.exit(0);
}
