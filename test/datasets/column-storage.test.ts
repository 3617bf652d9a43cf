import { Readable } from 'node:stream';
import { type SQL, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../service/db/client.js';
import {
  columnAnswerJson,
  columnFieldsJsonExpr,
  columnJsonExpr,
  columnOutputExpr,
  columnTableName,
  copyIntoColumnTable,
  CopyBinaryRows,
  createColumnTable,
  finishColumnTable,
} from '../../service/db/column-storage.js';
import { GUESS_RECORDS } from '../../service/datasets/load.js';
import { scanCsvForCopy } from '../../service/datasets/parsers/csv-scan.js';
import { DEFAULT_PARSE_LIMITS } from '../../service/datasets/records.js';
import { deleteSite, deleteSiteBlobs } from '../../service/sites/sites.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { mixedParquet } from './fixtures.js';
import { newWallet, uploadAndConvert, walletApp } from './helpers.js';

/**
 * Datasets live in column storage (a typed table of their own, loaded with COPY). These tests load
 * files down each of the loader's ways — the CSV fast path (PostgreSQL parses the file), its retry
 * when the whole file widens the guessed schema, its fall back when PostgreSQL refuses a byte, the
 * guess-and-verify pass of the other kinds and its fall back to two passes — and read the results
 * through the Table API as a client does.
 */
describe.each(dbKinds())('Dataset column storage (%s)', (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(kind);
  });
  afterAll(async () => h?.close());

  const get = async (siteSlug: string, slug: string, query = '') => {
    const res = await fetch(`${h.url}/api/data/${siteSlug}/${slug}${query}`);
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };

  /** Every record of a dataset, paged with the cursor, in id order. */
  const all = async (siteSlug: string, slug: string) => {
    const out: { id: string; fields: Record<string, unknown> }[] = [];
    let cursor = '';
    for (;;) {
      const { status, body } = await get(siteSlug, slug, `?limit=1000${cursor ? `&cursor=${cursor}` : ''}`);
      expect(status).toBe(200);
      out.push(...body.records);
      if (!body.nextCursor) return out;
      cursor = body.nextCursor;
    }
  };

  const columnTables = async () =>
    rowsOf<{ name: string }>(await h.deps.db.execute(sql`select tablename as name from pg_tables where schemaname = 'svc_datasets'`)).map((r) => r.name);

  const csvRows = (n: number) =>
    Array.from({ length: n }, (_, i) =>
      [
        i,
        i % 7 === 0 ? '' : `"name ${i}, ""quoted"" ${'é'.repeat(i % 3)}"`,
        (i * 1.25).toString(),
        i % 2 === 0 ? 'TRUE' : 'false',
        `2024-${String((i % 12) + 1).padStart(2, '0')}-${String((i % 28) + 1).padStart(2, '0')}`,
        i % 5 === 0 ? '2024-03-01 10:00:00+02:00' : `2024-03-01T10:${String(i % 60).padStart(2, '0')}:00.250Z`,
        String(i).padStart(5, '0'),
        i % 3 === 0 ? `"multi\nline ${i}"` : 'x',
      ].join(','),
    );
  const CSV_HEADER = 'n,name,price,active,day,at,zip,note';

  it('binary COPY round-trips every type, edge values included; the JSON the database writes of a row is what JSON.stringify writes', async () => {
    const fields = [
      { name: 'n', type: 'number' as const },
      { name: 'i', type: 'integer' as const },
      { name: 'b', type: 'boolean' as const },
      { name: 'd', type: 'date' as const },
      { name: 'dt', type: 'datetime' as const },
      { name: 's', type: 'string' as const },
      { name: 'j', type: 'json' as const },
    ];
    const controls = Array.from({ length: 31 }, (_, c) => String.fromCharCode(c + 1)).join(''); // no NUL: PostgreSQL text holds none
    const rows: unknown[][] = [
      [-1.5, -9007199254740991, true, '0001-01-01', '1969-12-31T23:59:59.999Z', 'ascii', { a: [1, 'é', null] }],
      [-0, 9007199254740991, false, '1999-12-31', '1900-02-28T12:00:00.000Z', 'Zürich — 東京 🚀', 'text'],
      [1.7976931348623157e308, 0, null, '2000-01-01', '2000-01-01T00:00:00.000Z', `${'x'.repeat(70)}é`, [1, 2]],
      [5e-324, 1, true, '9999-12-31', '9999-12-31T23:59:59.999Z', 'tab\there, line\nbreak, back\\slash, quote"', 42],
      [null, null, null, null, null, null, null],
      // Numbers on each side of the bounds where PostgreSQL and JavaScript write them alike (1e-4, 1e15).
      ...[0.0001, 0.00009999, 0.00001, 1e-7, 1.5e-7, 999999999999999.9, 1e15, 123456789012345680, 1e21, 1.5e300, -2.5e-5, 0.1 + 0.2, 655.15, 1e-4 * 3].map(
        (n) => [n, null, null, null, null, null, null],
      ),
      [Number.NaN, 1e15, null, null, null, `${controls}\u007f\u2028\u2029 \ud83d\ude80`, { n: 1e21, s: 'a\nb', z: 0.1 + 0.2, e: 1e-7 }],
      [Number.POSITIVE_INFINITY, -5e15, null, null, null, '', {}],
      [Number.NEGATIVE_INFINITY, null, null, null, null, null, []],
    ];
    const tableId = `tbl_${'roundtrip'.padEnd(16, '0')}`;
    const select = async (list: SQL) =>
      rowsOf<Record<string, unknown>>(await h.deps.db.execute(sql`select ${list} from ${sql.raw(columnTableName(tableId))} r order by id`));
    await h.deps.db.transaction(async (tx) => {
      await createColumnTable(tx, tableId, fields);
      const enc = new CopyBinaryRows(fields.map((f) => f.type));
      const chunks: Buffer[] = [];
      for (const r of rows) {
        enc.add(r);
        chunks.push(enc.take()); // one tuple per chunk: PGlite's statement-per-chunk path too
      }
      await copyIntoColumnTable(
        tx,
        tableId,
        fields.map((f) => f.name),
        { kind: 'binary' },
        (async function* () {
          yield* chunks;
        })(),
      );
      await finishColumnTable(tx, tableId);
      // A JSON null reads as no value, as the driver reads it (jsonb `null` parses to null).
      await tx.execute(sql.raw(`insert into ${columnTableName(tableId)} (id, j) values (${rows.length + 1}, 'null'::jsonb)`));
    });
    const typed = await select(sql.join([sql`r.id`, ...fields.map((f) => sql`${columnOutputExpr(f.name, f.type)} as ${sql.raw(`"${f.name}"`)}`)], sql`, `));
    const written = await select(
      sql.join(
        [sql`r.id`, sql`${columnFieldsJsonExpr(fields)} as fields`, ...fields.map((f) => sql`${columnJsonExpr(f.name, f.type)} as ${sql.raw(`"${f.name}"`)}`)],
        sql`, `,
      ),
    );
    await h.deps.db.execute(sql.raw(`drop table ${columnTableName(tableId)}`));
    expect(typed.map((r) => Number(r.id))).toEqual(Array.from({ length: rows.length + 1 }, (_, k) => k + 1));
    // Each value back as it went in (as the driver reads the typed columns).
    const present = (r: Record<string, unknown>) => Object.fromEntries(fields.map((f) => [f.name, r[f.name]]).filter(([, v]) => v !== null && v !== undefined));
    expect(typed.map(present)).toEqual([...rows.map((r) => Object.fromEntries(fields.map((f, k) => [f.name, r[k]]).filter(([, v]) => v !== null))), {}]);
    // The answer's bytes as before: JSON.stringify of the fields the typed columns read.
    expect(written.map((r) => columnAnswerJson(r.fields as string))).toEqual(typed.map((r) => JSON.stringify(present(r))));
    for (const [k, r] of written.entries())
      for (const f of fields) {
        const json = r[f.name];
        const value = present(typed[k]!)[f.name];
        expect(typeof json === 'string' ? columnAnswerJson(json) : undefined, `${f.name} of row ${k + 1}`).toBe(
          value === undefined ? undefined : JSON.stringify(value),
        );
      }
    // Numbers inside the bounds are placed as written (nothing parsed); the others are marked.
    expect(written.filter((r) => !(r.fields as string).includes('\n')).length).toBeGreaterThan(5);
  });

  it('the CSV fast path and the two-pass path load the same dataset', async () => {
    const wallet = newWallet();
    const app = await walletApp(h, wallet);
    const fast = Buffer.from(`${CSV_HEADER}\n${csvRows(2500).join('\n')}\n`);
    const slow = Buffer.concat([fast, Buffer.from('\n')]); // a blank line: the scan leaves the file to papaparse
    const limits = { ...DEFAULT_PARSE_LIMITS, maxColumns: 100 };
    expect(await scanCsvForCopy(Readable.from([fast]), limits)).not.toBeNull();
    expect(await scanCsvForCopy(Readable.from([slow]), limits)).toBeNull();

    const a = await uploadAndConvert(h, wallet, app.id, 'fast.csv', fast);
    const b = await uploadAndConvert(h, wallet, app.id, 'slow.csv', slow);
    expect(a.asset.recordCount).toBe(2500);
    expect(b.asset.recordCount).toBe(2500);
    expect(a.asset.fields).toEqual(b.asset.fields);
    expect(a.asset.fields.map((f) => f.type)).toEqual(['integer', 'string', 'number', 'boolean', 'date', 'datetime', 'string', 'string']);
    const fastRecords = await all(app.slug, 'fast');
    expect(fastRecords).toEqual(await all(app.slug, 'slow'));
    expect(fastRecords.map((r) => r.id)).toEqual(Array.from({ length: 2500 }, (_, i) => String(i + 1)));
    expect(fastRecords[0]!.fields).toEqual({
      n: 0,
      price: 0,
      active: true,
      day: '2024-01-01',
      at: '2024-03-01T08:00:00.000Z',
      zip: '00000',
      note: 'multi\nline 0',
    });
    expect(fastRecords[4]!.fields).toEqual({
      n: 4,
      name: 'name 4, "quoted" é',
      price: 5,
      active: true,
      day: '2024-05-05',
      at: '2024-03-01T10:04:00.250Z',
      zip: '00004',
      note: 'x',
    });
    // Both ways COPY the rows in frozen (COPY FREEZE): every page is all-visible from the start, so
    // the first reads dirty no page to set hint bits and vacuum never rewrites the dataset to freeze it.
    for (const { asset } of [a, b]) {
      const [pages] = rowsOf<{ relpages: number; relallvisible: number }>(
        await h.deps.db.execute(sql`select relpages, relallvisible from pg_class where oid = ${columnTableName(asset.tableId)}::regclass`),
      );
      expect(pages!.relpages).toBeGreaterThan(0);
      // PGlite takes one COPY a chunk: a page two chunks share is not all-visible.
      if (kind === 'postgres') expect(pages!.relallvisible, asset.slug).toBe(pages!.relpages);
      else expect(pages!.relallvisible, asset.slug).toBeGreaterThan(pages!.relpages * 0.75);
    }
  });

  it('sub-millisecond date-times are stored as shown (milliseconds, rounded alike on both paths): cursors never repeat a row', async () => {
    const wallet = newWallet();
    const app = await walletApp(h, wallet);
    const body = `at,k\n${Array.from({ length: 12 }, (_, i) => `2024-05-01T10:00:00.${String(1230 + i * 3).padStart(4, '0')}Z,${i}`).join('\n')}\n`;
    const fast = await uploadAndConvert(h, wallet, app.id, 'subms.csv', Buffer.from(body));
    const slow = await uploadAndConvert(h, wallet, app.id, 'subms2.csv', Buffer.from(`${body}\n`));
    for (const slug of [fast.asset.slug, slow.asset.slug]) {
      const seen: string[] = [];
      let cursor = '';
      for (let page = 0; page < 20; page++) {
        const { body: b } = await get(app.slug, slug, `?sortField=at&limit=1${cursor ? `&cursor=${cursor}` : ''}`);
        seen.push(...b.records.map((r: { fields: { at: string; k: number } }) => `${r.fields.k}@${r.fields.at}`));
        if (!b.nextCursor) break;
        cursor = b.nextCursor;
      }
      expect(seen.length).toBe(12);
      expect(new Set(seen).size).toBe(12);
      expect(seen.slice(0, 3)).toEqual(['0@2024-05-01T10:00:00.123Z', '1@2024-05-01T10:00:00.123Z', '2@2024-05-01T10:00:00.124Z']);
    }
  });

  it('a CSV whose columns widen after the first MiB: the COPY is redone with the whole file’s schema', async () => {
    const wallet = newWallet();
    const app = await walletApp(h, wallet);
    const rows = Array.from({ length: 120_000 }, (_, i) => `${i},${i},${i % 2 === 0}`);
    const bytes = Buffer.from(`n,s,b\n${rows.join('\n')}\n1.5,x,\n`);
    expect(bytes.length).toBeGreaterThan(1024 * 1024);
    const { asset } = await uploadAndConvert(h, wallet, app.id, 'wide.csv', bytes);
    expect(asset.fields.map((f) => [f.name, f.type])).toEqual([
      ['n', 'number'],
      ['s', 'string'],
      ['b', 'boolean'],
    ]);
    expect(asset.recordCount).toBe(120_001);
    const last = await get(app.slug, 'wide', '?sortField=id&sortDir=desc&limit=2');
    expect(last.body.records.map((r: { fields: unknown }) => r.fields)).toEqual([
      { n: 1.5, s: 'x' },
      { n: 119_999, s: '119999', b: false },
    ]);
    const schema = await get(app.slug, 'wide', '/schema');
    expect(schema.body.schema.fields.map((f: { type: string }) => f.type)).toEqual(['number', 'string', 'boolean']);
    const sum = await get(app.slug, 'wide', '?aggregate=sum&aggregateField=n');
    expect(sum.body.value).toBe((119_999 * 120_000) / 2 + 1.5);
  });

  it('a byte PostgreSQL refuses (invalid UTF-8 past the sniffed head) sends the CSV down the two-pass path', async () => {
    const wallet = newWallet();
    const app = await walletApp(h, wallet);
    const head = Array.from({ length: 8000 }, (_, i) => `${i},plain text ${i}`).join('\n');
    const bytes = Buffer.concat([Buffer.from(`n,t\n${head}\n8000,bad `), Buffer.from([0xff]), Buffer.from(' byte\n')]);
    expect(bytes.indexOf(0xff)).toBeGreaterThan(64 * 1024);
    const { asset } = await uploadAndConvert(h, wallet, app.id, 'bytes.csv', bytes);
    expect(asset.recordCount).toBe(8001);
    const last = await get(app.slug, 'bytes', '?sortField=n&sortDir=desc&limit=1');
    expect(last.body.records[0].fields).toEqual({ n: 8000, t: 'bad \uFFFD byte' });
  });

  it(`JSON whose record ${GUESS_RECORDS + 1} widens a field and adds one: the guess is dropped and the file read twice`, async () => {
    const wallet = newWallet();
    const app = await walletApp(h, wallet);
    const records: Record<string, unknown>[] = Array.from({ length: GUESS_RECORDS + 50 }, (_, i) => ({ n: i, s: `s${i}` }));
    records.push({ n: 1.5, s: 'last', extra: true });
    const { asset } = await uploadAndConvert(h, wallet, app.id, 'guess.json', Buffer.from(JSON.stringify(records)));
    expect(asset.fields.map((f) => [f.name, f.type])).toEqual([
      ['n', 'number'],
      ['s', 'string'],
      ['extra', 'boolean'],
    ]);
    expect(asset.recordCount).toBe(GUESS_RECORDS + 51);
    const last = await get(app.slug, 'guess', '?filter[extra][isnull]=false');
    expect(last.body.records.map((r: { id: string; fields: unknown }) => [r.id, r.fields])).toEqual([
      [String(GUESS_RECORDS + 51), { n: 1.5, s: 'last', extra: true }],
    ]);
    // The guess held for this one: read once.
    const { asset: held } = await uploadAndConvert(h, wallet, app.id, 'held.json', Buffer.from(JSON.stringify(records.slice(0, -1))));
    expect(held.fields.map((f) => f.type)).toEqual(['integer', 'string']);
    expect(held.recordCount).toBe(GUESS_RECORDS + 50);
  });

  it(`Parquet: guessed from the first ${GUESS_RECORDS} rows and verified on every row, or read twice when a later row widens a column`, async () => {
    const wallet = newWallet();
    const app = await walletApp(h, wallet);
    const rows = GUESS_RECORDS + 500;
    const held = await uploadAndConvert(h, wallet, app.id, 'held.parquet', mixedParquet(rows, 42));
    expect(held.asset.fields.map((f) => [f.name, f.type])).toEqual([
      ['n', 'integer'],
      ['price', 'integer'],
      ['flag', 'boolean'],
      ['name', 'string'],
      ['at', 'datetime'],
      ['meta', 'json'],
    ]);
    const missed = await uploadAndConvert(h, wallet, app.id, 'missed.parquet', mixedParquet(rows, 2.5));
    expect(missed.asset.fields.map((f) => f.type)).toEqual(['integer', 'number', 'boolean', 'string', 'datetime', 'json']);
    for (const [slug, last] of [
      ['held', 42],
      ['missed', 2.5],
    ] as const) {
      const records = await all(app.slug, slug);
      expect(records.length).toBe(rows);
      const expected = (i: number) => {
        const f: Record<string, unknown> = {
          price: i === rows - 1 ? last : i % 100,
          at: `2024-01-01T12:00:${String(i % 60).padStart(2, '0')}.000Z`,
          meta: { i, even: i % 2 === 0 },
        };
        if (i !== 3) f.n = i;
        if (i % 5 !== 0) f.flag = i % 2 === 0;
        if (i % 7 !== 0) f.name = `row ${i}`;
        return f;
      };
      for (const i of [0, 1, 3, 5, 7, 3999, 4000, GUESS_RECORDS, rows - 1])
        expect(records[i], `${slug} row ${i}`).toEqual({ id: String(i + 1), fields: expected(i) });
      const sum = await get(app.slug, slug, '?aggregate=sum&aggregateField=n');
      expect(sum.body.value).toBe(((rows - 1) * rows) / 2 - 3);
    }
  });

  it('reads every type: filters, date ranges, search, sorting with cursors, aggregates, one record', async () => {
    const wallet = newWallet();
    const app = await walletApp(h, wallet);
    const records = Array.from({ length: 40 }, (_, i) => ({
      name: i % 10 === 0 ? null : `item ${String(i).padStart(2, '0')}`,
      price: i * 0.5,
      qty: i % 4,
      ok: i % 3 === 0,
      day: `2024-01-${String((i % 28) + 1).padStart(2, '0')}`,
      at: `2024-02-01T${String(i % 24).padStart(2, '0')}:30:00.000Z`,
      tags: { list: [i, `t${i}`] },
    }));
    const { asset } = await uploadAndConvert(h, wallet, app.id, 'types.json', Buffer.from(JSON.stringify({ data: records })));
    expect(asset.fields.map((f) => f.type)).toEqual(['string', 'number', 'integer', 'boolean', 'date', 'datetime', 'json']);
    const q = async (query: string) => {
      const r = await get(app.slug, 'types', query);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body;
    };
    const ids = (b: Record<string, any>) => b.records.map((r: { id: string }) => Number(r.id));
    expect(ids(await q('?field=qty&value=3&limit=100'))).toEqual(records.map((r, i) => (r.qty === 3 ? i + 1 : 0)).filter(Boolean));
    expect(ids(await q('?filter[ok][eq]=true&filter[price][gte]=15'))).toEqual([31, 34, 37, 40]);
    expect(ids(await q('?filter[day][gt]=2024-01-26&limit=100'))).toEqual([27, 28]);
    expect(ids(await q('?dateField=at&dateFrom=2024-02-01T22:00:00Z&limit=100'))).toEqual([23, 24]);
    expect(ids(await q('?dateField=day&dateFrom=2024-01-02&dateTo=2024-01-02'))).toEqual([2, 30]);
    expect(ids(await q('?filter[name][isnull]=true'))).toEqual([1, 11, 21, 31]);
    expect(ids(await q('?q=ITEM%200&searchFields=name'))).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(ids(await q('?filter[qty][in]=0,1&filter[name][ilike]=*3*'))).toEqual([14, 33, 34, 37, 38]);
    expect((await q('?fields=tags&limit=1&offset=5')).records[0].fields).toEqual({ tags: { list: [5, 't5'] } });

    const sorted: number[] = [];
    let cursor = '';
    for (;;) {
      const b = await q(`?sort=-day,name&limit=7${cursor ? `&cursor=${cursor}` : ''}`);
      sorted.push(...ids(b));
      if (!b.nextCursor) break;
      cursor = b.nextCursor;
    }
    const expected = records
      .map((r, i) => ({ ...r, id: i + 1 }))
      .sort((x, y) =>
        x.day === y.day ? (x.name === null ? 1 : y.name === null ? -1 : x.name < y.name ? -1 : x.name > y.name ? 1 : 0) : x.day < y.day ? 1 : -1,
      )
      .map((r) => r.id);
    expect(sorted).toEqual(expected);

    expect(await q('?aggregate=max&aggregateField=day')).toMatchObject({ value: '2024-01-28', count: 40 });
    expect(await q('?aggregate=min&aggregateField=at')).toMatchObject({ value: '2024-02-01T00:30:00.000Z' });
    expect(await q('?aggregate=avg&aggregateField=price')).toMatchObject({ value: 9.75 });
    const groups = await q('?aggregate=count&groupBy=ok');
    expect(groups.groups).toEqual([
      { key: false, value: 26, count: 26 },
      { key: true, value: 14, count: 14 },
    ]);
    expect((await q('?aggregate=count&groupBy=day&filter[qty][eq]=0')).groups[0]).toEqual({ key: '2024-01-01', value: 2, count: 2 });

    const one = await get(app.slug, 'types', '/2');
    expect(one.status).toBe(200);
    expect(one.body.record).toMatchObject({ id: '2', fields: { ...records[1] } });
    expect((await get(app.slug, 'types', '/41')).status).toBe(404);
    // A date the query accepts but a date column cannot hold: a 400, never a 500.
    const bad = await get(app.slug, 'types', '?filter[day][gte]=0000-01-01');
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('validation_failed');
  });

  it('a replacement drops the old column table after commit; deleting the app drops them all', async () => {
    const wallet = newWallet();
    const app = await walletApp(h, wallet);
    const v1 = await uploadAndConvert(h, wallet, app.id, 'data.csv', Buffer.from('v\n1\n'), { slug: 'data' });
    const other = await uploadAndConvert(h, wallet, app.id, 'other.csv', Buffer.from('v\n1\n'));
    expect(await columnTables()).toEqual(expect.arrayContaining([v1.asset.tableId, other.asset.tableId]));
    const v2 = await uploadAndConvert(h, wallet, app.id, 'data.csv', Buffer.from('v\n2\n'), { slug: 'data', replaceExisting: true });
    const after = await columnTables();
    expect(after).toContain(v2.asset.tableId);
    expect(after).not.toContain(v1.asset.tableId);
    expect((await get(app.slug, 'data')).body.records).toEqual([{ id: '1', fields: { v: 2 } }]);
    await deleteSite(h.deps, app);
    await deleteSiteBlobs(h.deps, app.id);
    const left = await columnTables();
    expect(left).not.toContain(v2.asset.tableId);
    expect(left).not.toContain(other.asset.tableId);
  });
});

describe('CopyBinaryRows', () => {
  it('a Date (a decoded Parquet date or timestamp) makes the very tuple its ISO text makes', () => {
    const instants = [
      '1969-12-31T23:59:59.999Z',
      '1900-02-28T12:00:00.000Z',
      '0001-01-01T00:00:00.000Z',
      '2000-01-01T00:00:00.000Z',
      '2024-02-29T23:59:59.999Z',
      '2285-06-01T00:00:00.001Z', // past 2^53 microseconds after 2000: the exact BigInt path
      '9999-12-31T23:59:59.999Z',
    ];
    const tuples = (values: unknown[][]) => {
      const rows = new CopyBinaryRows(['date', 'datetime']);
      for (const v of values) rows.add(v);
      return rows.take();
    };
    const asText = tuples(instants.map((iso) => [iso.slice(0, 10), iso]));
    const asDates = tuples(instants.map((iso) => [new Date(iso), new Date(iso)]));
    expect(asDates.equals(asText)).toBe(true);
    // Each tuple: field count (2), id (4 + 8), date (4 + 4), date-time (4 + 8): microseconds since 2000.
    instants.forEach((iso, i) => {
      const us = (BigInt(Date.parse(iso)) - BigInt(Date.UTC(2000, 0, 1))) * 1000n;
      expect(asDates.readBigInt64BE(i * 34 + 26), iso).toBe(us);
    });
  });
});
