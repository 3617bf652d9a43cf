import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LruMap } from '../../shared/lru-map.js';
import { lookupVersionedTable } from '../../service/tables/table-rows.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { getJson, makeTable, type TableFixture } from './helpers.js';

describe('LruMap', () => {
  it('keeps the most recently used entries up to its capacity, and tells of each it drops for room', () => {
    const dropped: [string, number][] = [];
    const m = new LruMap<string, number>(2, (k, v) => dropped.push([k, v]));
    m.set('a', 1);
    m.set('b', 2);
    expect(m.get('a')).toBe(1); // a is now the most recently used
    m.set('c', 3);
    expect([m.get('a'), m.get('b'), m.get('c'), m.size]).toEqual([1, undefined, 3, 2]);
    m.delete('a');
    m.set('c', 4); // replaced, not dropped
    expect(dropped).toEqual([['b', 2]]);
  });
});

// A read is compiled once per table version and query string (table-lists.ts); a page of records
// places each record's fields in the answer as the database wrote them. What a client reads back
// must be exactly what was written, in every shape, and a changed table must be compiled afresh.
describe.each(dbKinds())('Table API reads compiled once per table version (%s)', (kind) => {
  let h: Harness;
  let t: TableFixture;
  const tricky = {
    name: 'He said "hi"\\n</script>\u2028 ü 🐈',
    notes: { nested: [1, 'two', { three: null }], 'key with "quotes"': true },
    size: 1e21,
    ratio: 0.30000000000000004,
  };
  const plain = { name: 'Tom', notes: null, size: -0.5, ratio: 2 };

  beforeAll(async () => {
    h = await startHarness(kind);
    t = await makeTable(h, {
      name: 'Odd',
      schema: {
        fields: [
          { name: 'name', label: 'Name', type: 'string' },
          { name: 'notes', label: 'Notes', type: 'json' },
          { name: 'size', label: 'Size', type: 'number' },
          { name: 'ratio', label: 'Ratio', type: 'number' },
        ],
      },
    });
    const res = await h.fetch(t.path, { method: 'POST', headers: { 'x-svc-write-key': t.table.writeKey }, json: { records: [tricky, plain] } });
    expect(res.status).toBe(201);
  });
  afterAll(async () => h?.close());

  it('a page answers every field as written, in the default, projected and compact shapes, and as the one-record read does', async () => {
    const page = await getJson(h, `${t.path}?limit=1`);
    expect(page.status).toBe(200);
    expect(page.body.records).toEqual([{ id: expect.any(String), fields: tricky }]);
    expect(page.body.nextCursor).toEqual(expect.any(String));
    const next = await getJson(h, `${t.path}?limit=1&cursor=${encodeURIComponent(page.body.nextCursor)}`);
    expect(next.body.records.map((r: { fields: unknown }) => r.fields)).toEqual([plain]);
    expect(next.body.nextCursor).toBeNull();

    const one = await getJson(h, `${t.path}/${page.body.records[0].id}`);
    expect(one.body.record.fields).toEqual(tricky);

    const projected = await getJson(h, `${t.path}?fields=name,notes`);
    expect(projected.body.records.map((r: { fields: unknown }) => r.fields)).toEqual([
      { name: tricky.name, notes: tricky.notes },
      { name: plain.name, notes: null },
    ]);
    const compact = await getJson(h, `${t.path}?compact=true&fields=size`);
    expect(compact.status, JSON.stringify(compact.body)).toBe(200);
    expect(compact.body.rows.map((r: unknown[]) => r[1])).toEqual([tricky.size, plain.size]);
  });

  it('the same query string reuses its compiled read until the table changes, which is compiled afresh', async () => {
    const current = async () => {
      await getJson(h, t.path); // the node reads the table row
      return h.deps.tableLists.rows.get(`${t.siteSlug}/${t.table.slug}`.toLowerCase())!;
    };
    const before = await current();
    expect(h.deps.tableLists.list(before, '?limit=5')).toBe(h.deps.tableLists.list(before, '?limit=5'));
    await h.deps.db.execute(sql`update tables set name = 'Odder' where id = ${t.table.id}`);
    const after = await lookupVersionedTable(h.deps.db, t.siteSlug, t.table.slug);
    expect(h.deps.tableLists.list(after, '?limit=5')).not.toBe(h.deps.tableLists.list(before, '?limit=5'));
    // The node's old row is refused by the database and read afresh: the answer is right either way.
    expect((await getJson(h, `${t.path}?limit=5`)).body.records).toHaveLength(2);
    expect(() => h.deps.tableLists.list(after, '?sortField=nope')).toThrow(/nope/);
  });
});
