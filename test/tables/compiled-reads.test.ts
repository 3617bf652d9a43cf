import { sql } from 'drizzle-orm';
import { compileStatement, executeCompiled, rowsOf, SESSION_POOL_PREPARED } from '../../service/db/client.js';
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

    const id: string = page.body.records[0].id;
    const one = await getJson(h, `${t.path}/${id}`);
    const iso = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(one.body).toEqual({ ok: true, record: { id, fields: tricky, createdAt: iso, updatedAt: iso } });
    // The same read through the app (a percent-encoded path is the app's to decode): the same answer.
    const viaApp = await getJson(h, `${t.path}/%${id.charCodeAt(0).toString(16)}${id.slice(1)}`);
    expect(viaApp.body).toEqual(one.body);

    const projected = await getJson(h, `${t.path}?fields=name,notes`);
    expect(projected.body.records.map((r: { fields: unknown }) => r.fields)).toEqual([
      { name: tricky.name, notes: tricky.notes },
      { name: plain.name, notes: null },
    ]);
    const compact = await getJson(h, `${t.path}?compact=true&fields=size`);
    expect(compact.status, JSON.stringify(compact.body)).toBe(200);
    expect(compact.body.rows.map((r: unknown[]) => r[1])).toEqual([tricky.size, plain.size]);
  });

  it('a value with quotes, backslashes or a $1 in it is read as written (a read whose values are written in its text: db/client.ts, inlineValues)', async () => {
    const odd = [`O'Brien \\' ); drop table table_records; --`, 'back\\slash \\\\ $1 $2::text', "it''s", "E'x'"];
    const quoted = await makeTable(h, {
      name: 'Quoted',
      schema: {
        fields: [
          { name: 'name', label: 'Name', type: 'string' },
          { name: 'size', label: 'Size', type: 'number' },
        ],
      },
    });
    const res = await h.fetch(quoted.path, {
      method: 'POST',
      headers: { 'x-svc-write-key': quoted.table.writeKey },
      json: { records: odd.map((name, i) => ({ name, size: 100 + i })) },
    });
    expect(res.status).toBe(201);
    const names = async (query: string) => {
      const r = await getJson(h, `${quoted.path}?${query}`);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body.records.map((rec: { fields: { name: string } }) => rec.fields.name);
    };
    for (const name of odd) {
      expect(await names(`field=name&value=${encodeURIComponent(name)}`)).toEqual([name]);
      expect(await names(`filter[name][neq]=${encodeURIComponent(name)}&filter[size][gte]=100&sort=size`)).toEqual(odd.filter((n) => n !== name));
      expect(await names(`q=${encodeURIComponent(name)}&searchFields=name`)).toEqual([name]);
    }
    expect(await names(`filter[name][in]=${odd.map(encodeURIComponent).join(',')}&sort=size`)).toEqual(odd);
    expect(await names(`filter[name][ilike]=${encodeURIComponent("*'*")}&sort=size`)).toEqual([odd[0], odd[2], odd[3]]);
    expect(await names('filter[size][gte]=100&filter[size][lte]=101.5&sort=-size')).toEqual([odd[1], odd[0]]);
    // Nothing else was touched.
    expect((await getJson(h, `${quoted.path}?includeTotal=true&limit=1`)).body.total).toBe(odd.length);
    expect((await getJson(h, `${t.path}?includeTotal=true&limit=1`)).body.total).toBe(2);
  });

  // A projected page reads only the fields it shows from the database, and those its cursor holds.
  it('a projected page sorted on a field it does not show pages on by its cursor', async () => {
    for (const shape of ['fields=name', 'compact=true&fields=name']) {
      const first = await getJson(h, `${t.path}?${shape}&sort=-size&limit=1`);
      expect(first.status, JSON.stringify(first.body)).toBe(200);
      const next = await getJson(h, `${t.path}?${shape}&sort=-size&limit=1&cursor=${encodeURIComponent(first.body.nextCursor)}`);
      expect(next.body.nextCursor).toBeNull();
      const shown = [first.body, next.body].map((b) => (b.records ? b.records[0].fields : b.rows[0].slice(1)));
      expect(shown).toEqual(shape.startsWith('compact') ? [[tricky.name], [plain.name]] : [{ name: tricky.name }, { name: plain.name }]);
    }
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

// PostgreSQL: every read is kept prepared on the connection of the read pool that runs it (parsed and
// described once there). A key read has one text whatever the table and values; a read whose plan
// depends on its values has them written in its text (db/client.ts, `inlineValues`) and runs on the
// pool's plan-reusing twin too. A connection keeps at most SESSION_POOL_PREPARED of them however many
// tables and queries it serves (postgres.js as patched by bin/patch-deps.mjs closes the least recently
// used; test/tables/prepared-statements.test.ts).
describe.runIf(process.env.TEST_DATABASE_URL)('Table API reads kept prepared (postgres)', () => {
  let h: Harness;
  const kept = async () => rowsOf<{ statement: string }>(await h.deps.tableReads.execute(sql`select statement from pg_prepared_statements`));
  /** What the read pool's plan-reusing twin keeps: every Table API read (test/tables/key-plans.test.ts). */
  const keptOnTwin = async () =>
    rowsOf<{ statement: string }>(
      await executeCompiled(h.deps.tableReads, compileStatement(sql`select statement from pg_prepared_statements`, { keyPlan: true })),
    ).filter((k) => !k.statement.includes('pg_prepared_statements'));
  beforeAll(async () => {
    h = await startHarness('postgres', { SVC_DATABASE_POOL_MAX: '1' }); // one read connection: what it keeps is what the pool keeps
  });
  afterAll(async () => h?.close());

  it('keeps every read prepared, filtered and sorted ones too, and answers each read right', async () => {
    const schema = { fields: [{ name: 'name', label: 'Name', type: 'string' }] };
    const tables = [await makeTable(h, { name: 'One', schema }), await makeTable(h, { name: 'Two', requireReadKey: true, schema })];
    for (const t of tables) {
      const names = Array.from({ length: 5 }, (_, i) => ({ name: `${t.table.slug}-${i}` }));
      expect((await h.fetch(t.path, { method: 'POST', headers: { 'x-svc-write-key': t.table.writeKey }, json: { records: names } })).status).toBe(201);
      const key = { 'x-svc-api-key': t.key };
      const read = async (path: string) => {
        const r = await getJson(h, `${t.path}${path}`, key);
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        return r.body;
      };
      for (let round = 0; round < 2; round++) {
        const page = await read('?limit=2');
        expect(page.records.map((r: { fields: { name: string } }) => r.fields.name)).toEqual([`${t.table.slug}-0`, `${t.table.slug}-1`]);
        const next = await read(`?limit=2&cursor=${encodeURIComponent(page.nextCursor)}`);
        expect(next.records[0].fields.name).toBe(`${t.table.slug}-2`);
        expect((await read('?limit=1&offset=4')).records[0].fields.name).toBe(`${t.table.slug}-4`);
        expect((await read(`/${page.records[1].id}`)).record.fields.name).toBe(`${t.table.slug}-1`);
        for (let i = 0; i < 5; i++) expect((await read(`?field=name&value=${t.table.slug}-${i}`)).records).toHaveLength(1);
        expect((await read('?sortField=name&sortDir=desc&limit=1')).records[0].fields.name).toBe(`${t.table.slug}-4`);
        expect((await read(`?q=${t.table.slug}-3`)).records.map((r: { fields: { name: string } }) => r.fields.name)).toEqual([`${t.table.slug}-3`]);
      }
    }
    const texts = (await keptOnTwin()).map((k) => k.statement);
    expect(texts.some((s) => s.includes('r.id = $'))).toBe(true); // the record read
    expect(texts.some((s) => s.includes('order by r.id asc limit 3'))).toBe(true); // the page in id order
    // A filter's, a sort's and a search's reads: their values in their text, one text per table and value.
    const filters = texts.filter((s) => s.includes('@>'));
    expect(filters).toHaveLength(10);
    for (const t of tables) for (let i = 0; i < 5; i++) expect(filters.filter((s) => s.includes(`E'{"name":"${t.table.slug}-${i}"}'::jsonb`))).toHaveLength(1);
    expect(texts.filter((s) => s.includes("->>'name'") && s.includes('desc'))).toHaveLength(2);
    expect(texts.filter((s) => s.includes('ilike'))).toHaveLength(2);
    // Read in both rounds, each text was prepared once.
    expect(new Set(texts).size).toBe(texts.length);
    // The pool that forces custom plans runs none of them.
    expect((await kept()).map((k) => k.statement).filter((s) => s.includes('table_records'))).toEqual([]);
  });

  it(`keeps at most ${SESSION_POOL_PREPARED} per connection, the most recently used, however many texts the reads have`, async () => {
    const t = await makeTable(h, { name: 'Many', schema: { fields: [{ name: 'name', label: 'Name', type: 'string' }] } });
    const names = Array.from({ length: 5 }, (_, i) => ({ name: `n${i}` }));
    expect((await h.fetch(t.path, { method: 'POST', headers: { 'x-svc-write-key': t.table.writeKey }, json: { records: names } })).status).toBe(201);
    // An in-list of n values (1 to 100) is a text of its own for each n, and each order another: 300 texts.
    const inList = (n: number) => Array.from({ length: n }, (_, i) => `n${i}`).join(',');
    for (const order of ['', '&sort=name', '&sort=-name']) {
      for (let n = 1; n <= 100; n++) {
        const r = await getJson(h, `${t.path}?filter[name][in]=${inList(n)}${order}`);
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        expect(r.body.records).toHaveLength(Math.min(n, 5));
      }
    }
    const texts = (await keptOnTwin()).map((k) => k.statement).filter((s) => s.includes(' in ('));
    expect(texts.length).toBeLessThanOrEqual(SESSION_POOL_PREPARED);
    expect(texts.length).toBeGreaterThan(SESSION_POOL_PREPARED - 10); // (a few slots hold the other reads)
    expect(texts.filter((s) => s.includes('nulls first'))).toHaveLength(100); // the last 100 used, all kept
    expect(texts.filter((s) => !s.includes('nulls'))).toEqual([]); // the first 100, all closed
  });
});
