import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountOwner } from '../../service/db/owner.js';
import { createSite } from '../../service/sites/sites.js';
import {
  bulkInsertRecords,
  countRecords,
  createTable,
  deleteRecord,
  deleteTable,
  getTableBySlugs,
  insertRecords,
  listSiteTables,
  dropOrphanFieldIndexes,
  indexTableFields,
  promoteTable,
  writeKeyMatches,
} from '../../service/tables/tables.js';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../../service/db/client.js';
import { deleteSite } from '../../service/sites/sites.js';
import { AppError } from '../../service/kernel/app-error.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';

const schema = {
  fields: [
    { name: 'title', label: 'Title', type: 'string', required: true },
    { name: 'price', label: 'Price', type: 'number' },
    { name: 'qty', type: 'integer' },
    { name: 'active', type: 'boolean' },
    { name: 'day', type: 'date' },
    { name: 'at', type: 'datetime' },
    { name: 'meta', type: 'json' },
  ],
};

async function caught(p: Promise<unknown>): Promise<AppError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof AppError) return e;
    throw e;
  }
  throw new Error('expected an AppError');
}

describe.each(dbKinds())('Table domain API (%s)', (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(kind);
  });
  afterAll(async () => h?.close());

  async function site() {
    const { accountId } = await h.account();
    return createSite(h.deps, accountOwner(accountId), { html: '<p>x</p>', status: 'published' });
  }

  it('creates a table with a one-time write key, finds it by slugs, lists it', async () => {
    const s = await site();
    const { table, writeKey } = await createTable(h.deps, s, { name: 'My Products!', schema });
    expect(table.slug).toBe('my-products');
    expect(writeKey).toMatch(/^svc_tk_/);
    expect(table.writeKeyHash).not.toContain(writeKey);
    expect(writeKeyMatches(table, writeKey)).toBe(true);
    expect(writeKeyMatches(table, `${writeKey}x`)).toBe(false);
    expect(table.schema.fields[2]).toEqual({ name: 'qty', label: 'qty', type: 'integer' });
    const again = await createTable(h.deps, s, { name: 'My Products', schema });
    expect(again.table.slug).toBe('my-products-2');
    const found = await getTableBySlugs(h.deps, s.slug, 'my-products');
    expect(found.table.id).toBe(table.id);
    expect((await listSiteTables(h.deps, s)).map((t) => t.slug)).toEqual(['my-products', 'my-products-2']);
    const taken = await caught(createTable(h.deps, s, { name: 'x', slug: 'my-products', schema }));
    expect(taken.status).toBe(409);
  });

  it('rejects a bad schema naming the field', async () => {
    const s = await site();
    const e = await caught(
      createTable(h.deps, s, { name: 'x', schema: { fields: [{ name: 'ok' }, { name: '1bad', type: 'string' }, { name: 'z', type: 'money' }] } }),
    );
    expect(e.status).toBe(400);
    const fields = (e.details as { issues: { field: string }[] }).issues.map((i) => i.field);
    expect(fields).toEqual(expect.arrayContaining(['schema.fields.1.name', 'schema.fields.2.type']));
  });

  it('inserts valid records normalised; a bad record writes nothing and names the field', async () => {
    const s = await site();
    const { table } = await createTable(h.deps, s, { name: 't', schema });
    const out = await insertRecords(h.deps, table, [
      { title: 'a', price: '1.5', qty: 2, active: 'true', day: '2024-02-29', at: '2024-03-01T10:00:00+02:00', meta: { x: [1] } },
      { title: 'b' },
    ]);
    expect(out[0]!.fields).toEqual({ title: 'a', price: 1.5, qty: 2, active: true, day: '2024-02-29', at: '2024-03-01T08:00:00.000Z', meta: { x: [1] } });
    const bad = await caught(insertRecords(h.deps, table, [{ title: 'ok' }, { title: 'c', qty: 1.5 }, { price: 1, nope: 1 }]));
    expect(bad.status).toBe(400);
    const fields = (bad.details as { issues: { field: string }[] }).issues.map((i) => i.field);
    expect(fields).toEqual(['records.1.qty', 'records.2.nope', 'records.2.title']);
    expect(await countRecords(h.deps.db, table)).toBe(2);
    const date = await caught(insertRecords(h.deps, table, [{ title: 'x', day: '2023-02-29' }]));
    expect(date.message).toContain('records.0.day');
  });

  it('bulk-loads rows in batches inside a transaction, all or nothing', async () => {
    const s = await site();
    const { table } = await createTable(h.deps, s, { name: 'big', schema, kind: 'dataset', methods: ['GET', 'POST'] });
    expect(table.methods).toEqual(['GET']);
    function* rows(n: number) {
      for (let i = 0; i < n; i++) yield { title: `r${i}`, qty: i };
    }
    const n = await bulkInsertRecords(h.deps.db, table.id, rows(5000), { schema: table.schema as never, batchSize: 1200 });
    expect(n).toBe(5000);
    expect(await countRecords(h.deps.db, table)).toBe(5000);
    await expect(
      h.deps.db.transaction(async (tx) => {
        await bulkInsertRecords(tx, table.id, [{ title: 'ok' }, { title: 'x', qty: 'many' }], { schema: table.schema as never, batchSize: 1 });
      }),
    ).rejects.toThrow(/rows\.1\.qty/);
    expect(await countRecords(h.deps.db, table)).toBe(5000);
  });

  const ids = (records: { id: string }[]) => records.map((r) => r.id);

  it("numbers each Table's records from 1 in insertion order, whatever other Tables hold", async () => {
    const s = await site();
    const other = await site();
    const { table: a } = await createTable(h.deps, s, { name: 'first', schema });
    const { table: b } = await createTable(h.deps, s, { name: 'second', schema });
    const { table: c } = await createTable(h.deps, other, { name: 'elsewhere', schema });
    expect(ids(await insertRecords(h.deps, a, [{ title: 'a1' }, { title: 'a2' }]))).toEqual(['1', '2']);
    expect(ids(await insertRecords(h.deps, b, [{ title: 'b1' }]))).toEqual(['1']);
    expect(ids(await insertRecords(h.deps, c, [{ title: 'c1' }, { title: 'c2' }, { title: 'c3' }]))).toEqual(['1', '2', '3']);
    // An id is never given again: not after a delete, nor after a rolled-back insert (3 is skipped).
    await deleteRecord(a, '2', h.deps.db);
    await expect(
      h.deps.db.transaction(async (tx) => {
        await insertRecords(h.deps, a, [{ title: 'lost' }], tx);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(ids(await insertRecords(h.deps, a, [{ title: 'a3' }]))).toEqual(['4']);
    // The bulk path numbers from the same sequence.
    await bulkInsertRecords(h.deps.db, b.id, [{ title: 'b2' }, { title: 'b3' }]);
    expect(ids(await insertRecords(h.deps, b, [{ title: 'b4' }]))).toEqual(['4']);
    // The sequence goes with its Table; the other Tables keep theirs.
    await deleteTable(h.deps, a);
    const sequences = async () =>
      rowsOf<{ name: string }>(
        await h.deps.db.execute(sql`select sequence_name as name from information_schema.sequences where sequence_schema = 'svc_record_ids'`),
      )
        .map((r) => r.name)
        .filter((n) => [a.id, b.id, c.id].includes(n))
        .sort();
    expect(await sequences()).toEqual([b.id, c.id].sort());
    await deleteSite(h.deps, other);
    expect(await sequences()).toEqual([b.id]);
  });

  it('gives concurrent inserts into one Table distinct ids, ascending in each call', async () => {
    const s = await site();
    const { table } = await createTable(h.deps, s, { name: 'busy', schema });
    const calls = await Promise.all(
      Array.from({ length: 12 }, (_, i) => insertRecords(h.deps, table, [{ title: `${i}a` }, { title: `${i}b` }, { title: `${i}c` }])),
    );
    const all = calls.flatMap(ids).map(Number);
    expect([...all].sort((x, y) => x - y)).toEqual(Array.from({ length: 36 }, (_, i) => i + 1));
    calls.forEach((records, i) => {
      const n = records.map((r) => Number(r.id));
      expect([...n].sort((x, y) => x - y)).toEqual(n);
      expect(records.map((r) => r.fields.title)).toEqual([`${i}a`, `${i}b`, `${i}c`]);
    });
  });

  it('promoteTable swaps a freshly loaded table into a slug atomically', async () => {
    const s = await site();
    const old = await createTable(h.deps, s, { name: 'data', slug: 'data', schema });
    await insertRecords(h.deps, old.table, [{ title: 'old' }]);
    const fresh = await createTable(h.deps, s, { name: 'data', slug: 'data-loading-1', schema });
    await insertRecords(h.deps, fresh.table, [{ title: 'new' }, { title: 'new2' }]);
    const promoted = await promoteTable(h.deps, fresh.table, 'data');
    expect(promoted.slug).toBe('data');
    const found = await getTableBySlugs(h.deps, s.slug, 'data');
    expect(found.table.id).toBe(fresh.table.id);
    expect(await countRecords(h.deps.db, old.table)).toBe(0);
    expect((await listSiteTables(h.deps, s)).map((t) => t.slug)).toEqual(['data']);
  });

  it('field indexes: created concurrently for a big table, used by queries with the same answers, dropped with the table', async () => {
    const s = await site();
    const { table } = await createTable(h.deps, s, { name: 'indexed', schema });
    await bulkInsertRecords(
      h.deps.db,
      table.id,
      Array.from({ length: 300 }, (_, i) => ({ title: `t${i % 7}`, price: (i * 37) % 101, qty: i })),
      { schema: table.schema as never },
    );
    const path = `/api/data/${s.slug}/${table.slug}?filter[price][gte]=50&sort=-price,title&limit=20`;
    const before = await (await h.fetch(path)).json();
    const fields = await indexTableFields(h.deps.db, table);
    expect(fields).toEqual(['price', 'qty', 'at', 'day', 'title', 'active']);
    const indexNames = async () =>
      rowsOf<{ indexname: string }>(
        await h.deps.db.execute(sql`select indexname from pg_indexes where tablename = 'table_records' and indexdef like ${`%${table.id}%`}`),
      ).map((r) => r.indexname);
    expect(await indexNames()).toHaveLength(6);
    expect(await indexTableFields(h.deps.db, table)).toHaveLength(6); // idempotent
    const after = await (await h.fetch(path)).json();
    expect(after.records).toEqual(before.records);
    expect(after.records).toHaveLength(20);

    const fresh = await createTable(h.deps, s, { name: 'indexed2', schema });
    await promoteTable(h.deps, fresh.table, table.slug);
    expect(await indexNames()).toEqual([]);

    const fresh2 = await getTableBySlugs(h.deps, s.slug, table.slug);
    await indexTableFields(h.deps.db, fresh2.table, { fields: ['price'] });
    await deleteSite(h.deps, s);
    expect(await dropOrphanFieldIndexes(h.deps.db)).toBeGreaterThanOrEqual(1);
    const left = rowsOf<{ indexname: string }>(
      await h.deps.db.execute(sql`select indexname from pg_indexes where tablename = 'table_records' and indexdef like ${`%${fresh2.table.id}%`}`),
    );
    expect(left).toEqual([]);
  });
});
