import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { parquetRead } from 'hyparquet';
import { ByteWriter, parquetWrite, schemaFromColumnData } from 'hyparquet-writer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareDataFile } from '../../service/datasets/pipeline.js';
import { DEFAULT_PARSE_LIMITS } from '../../service/datasets/records.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { newWallet, uploadAndConvert, walletApp } from './helpers.js';

/**
 * Parquet columns are nullable as most writers make them (OPTIONAL), in small pages: each column of
 * a row group spans many pages, and nulls sit in some pages only. Pages without nulls arrive as
 * their typed values (bin/patch-deps.mjs's changes to hyparquet), pages with nulls as plain arrays;
 * a slice joins them. Every value must come out as written, by columns, by records and through a
 * dataset, from files with data pages of both versions: version 1 is what pyarrow and DuckDB write
 * by default (parquetjs-lite writes either), version 2 what hyparquet-writer writes.
 */
const ROWS = 5000;
const GROUP = 2000;

const value = {
  n: (i: number) => i * 3 - 7000, // INT32
  big: (i: number) => (i === 4321 ? null : 2n ** 40n + BigInt(i)), // INT64, one null
  price: (i: number) => (i >= 2100 && i < 2200 ? null : i / 8), // DOUBLE, nulls in a run of pages
  flag: (i: number) => i % 3 === 0, // BOOLEAN
  name: (i: number) => (i % 7 === 0 ? null : `row ${i}`), // STRING, nulls on every page
  day: (i: number) => (i === 10 ? null : new Date(Date.UTC(2024, 0, 1 + (i % 400)))), // DATE, one null
  at: (i: number) => new Date(Date.UTC(1999, 11, 31, 23, 0, 0, i * 7)), // TIMESTAMP (milliseconds)
};
type Column = keyof typeof value;
const COLUMNS = Object.keys(value) as Column[];

function smallPagesParquet(): Buffer {
  const idx = Array.from({ length: ROWS }, (_, i) => i);
  const types = { n: 'INT32', big: 'INT64', price: 'DOUBLE', flag: 'BOOLEAN', name: 'STRING', day: undefined, at: 'TIMESTAMP' } as const;
  const columnData = COLUMNS.map((c) => ({ name: c, data: idx.map((i) => value[c](i)) as never, type: types[c] }));
  // A DATE column takes a schema of its own (hyparquet-writer has no basic type for it).
  const schema = schemaFromColumnData({
    columnData,
    schemaOverrides: { day: { name: 'day', type: 'INT32', converted_type: 'DATE', repetition_type: 'OPTIONAL' } },
  });
  const writer = new ByteWriter();
  parquetWrite({
    writer,
    columnData: columnData.map(({ name, data }) => ({ name, data })),
    schema,
    codec: 'SNAPPY',
    rowGroupSize: GROUP,
    pageSize: 1024,
  });
  return Buffer.from(writer.getBuffer());
}

interface ParquetjsLite {
  ParquetSchema: new (fields: Record<string, { type: string; optional?: boolean }>) => unknown;
  ParquetWriter: {
    openFile(
      schema: unknown,
      file: string,
      options: Record<string, unknown>,
    ): Promise<{ appendRow(row: Record<string, unknown>): Promise<void>; close(): Promise<void> }>;
  };
}

/** The same rows written by parquetjs-lite, with data pages of version 1 or 2 (250 rows a page). */
async function parquetjsLiteFile(pageVersion: 1 | 2): Promise<Buffer> {
  const parquet = createRequire(import.meta.url)('parquetjs-lite') as ParquetjsLite;
  const types = { n: 'INT32', big: 'INT64', price: 'DOUBLE', flag: 'BOOLEAN', name: 'UTF8', day: 'DATE', at: 'TIMESTAMP_MILLIS' } as const;
  const schema = new parquet.ParquetSchema(Object.fromEntries(COLUMNS.map((c) => [c, { type: types[c], optional: true }])));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-parquet-'));
  try {
    const file = path.join(dir, 'rows.parquet');
    const writer = await parquet.ParquetWriter.openFile(schema, file, {
      rowGroupSize: GROUP,
      pageSize: 250,
      compression: 'SNAPPY',
      useDataPageV2: pageVersion === 2,
    });
    for (let i = 0; i < ROWS; i++) {
      const row: Record<string, unknown> = {};
      for (const c of COLUMNS) {
        const v = value[c](i);
        if (v !== null) row[c] = typeof v === 'bigint' ? Number(v) : v;
      }
      await writer.appendRow(row);
    }
    await writer.close();
    return fs.readFileSync(file);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const bytes = smallPagesParquet();
const files: [string, () => Promise<Buffer>][] = [
  ['hyparquet-writer, pages v2', async () => bytes],
  ['parquetjs-lite, pages v1', () => parquetjsLiteFile(1)],
  ['parquetjs-lite, pages v2', () => parquetjsLiteFile(2)],
];

describe('Parquet decoding', () => {
  it('every dependency patch of bin/patch-deps.mjs is in place (`npm install` runs it; a version bump must carry or drop its patches)', () => {
    expect(() => execFileSync(process.execPath, [path.resolve('bin/patch-deps.mjs'), '--check'], { stdio: 'pipe' })).not.toThrow();
  });

  it('pages of a nullable column without nulls arrive as their typed values', async () => {
    const chunks: { column: string; data: ArrayLike<unknown> }[] = [];
    const buffer = new Uint8Array(bytes).buffer;
    await parquetRead({ file: buffer, rowEnd: GROUP, onChunk: ({ columnName, columnData }) => chunks.push({ column: columnName, data: columnData }) });
    const price = chunks.filter((c) => c.column === 'price');
    expect(price.length, 'one chunk a page').toBeGreaterThan(3);
    expect(price.every((c) => c.data instanceof Float64Array)).toBe(true);
    expect(chunks.filter((c) => c.column === 'n').every((c) => c.data instanceof Int32Array)).toBe(true);
  });

  for (const [label, make] of files) {
    it(`${label}: by columns and by records, every value as written (typed pages, pages with nulls, across row groups)`, async () => {
      const buf = await make();
      const file = await prepareDataFile(async () => Readable.from([buf]), 'parquet', { limits: DEFAULT_PARSE_LIMITS });
      try {
        let row = 0;
        for await (const slice of file.columnSlices!()) {
          expect(slice.firstRow).toBe(row + 1);
          for (let r = 0; r < slice.length; r++, row++)
            for (const [c, name] of slice.names.entries()) expect(slice.columns[c]![r] ?? null, `${name} of row ${row}`).toEqual(value[name as Column](row));
        }
        expect(row).toBe(ROWS);
        row = 0;
        for await (const record of file.records()) {
          for (const c of COLUMNS) expect(record.fields[c] ?? null, `${c} of record ${row}`).toEqual(value[c](row));
          row++;
        }
        expect(row).toBe(ROWS);
      } finally {
        await file.close();
      }
    });
  }
});

describe.each(dbKinds())('Parquet in small pages into a dataset (%s)', (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(kind);
  });
  afterAll(async () => h?.close());

  for (const [label, make] of files) {
    it(`${label}: every value of every row as written`, async () => {
      const wallet = newWallet();
      const app = await walletApp(h, wallet);
      const done = await uploadAndConvert(h, wallet, app.id, 'pages.parquet', await make());
      expect(done.asset.fields.map((f) => [f.name, f.type])).toEqual([
        ['n', 'integer'],
        ['big', 'integer'],
        ['price', 'number'],
        ['flag', 'boolean'],
        ['name', 'string'],
        ['day', 'date'],
        ['at', 'datetime'],
      ]);
      let row = 0;
      let cursor = '';
      do {
        const res = await fetch(`${h.url}/api/data/${app.slug}/pages?limit=1000${cursor ? `&cursor=${cursor}` : ''}`);
        const body = (await res.json()) as { records: { id: string; fields: Record<string, unknown> }[]; nextCursor?: string };
        expect(res.status).toBe(200);
        for (const record of body.records) {
          const expected = Object.fromEntries(
            COLUMNS.map((c) => [c, value[c](row)] as const)
              .filter(([, v]) => v !== null)
              .map(([c, v]) => [c, typeof v === 'bigint' ? Number(v) : v instanceof Date ? (c === 'day' ? v.toISOString().slice(0, 10) : v.toISOString()) : v]),
          );
          expect(record, `row ${row}`).toEqual({ id: String(row + 1), fields: expected });
          row++;
        }
        cursor = body.nextCursor ?? '';
      } while (cursor);
      expect(row).toBe(ROWS);
    });
  }
});
