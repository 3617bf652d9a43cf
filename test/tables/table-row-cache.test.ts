import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteTable, getTableBySlugs } from '../../service/tables/tables.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { getJson, makeTable, type TableFixture } from './helpers.js';

// Record reads keep each node's table rows in memory and have the database check them inside the read
// statement. Here the rows change under the node the way another node (or an operator) changes them,
// straight in the database: every read must answer from the current row, never the remembered one.
describe.each(dbKinds())('Table API reads from a table row changed elsewhere (%s)', (kind) => {
  let h: Harness;
  let t: TableFixture;
  const setRow = (assignment: ReturnType<typeof sql>) => h.deps.db.execute(sql`update tables set ${assignment} where id = ${t.table.id}`);
  const names = (body: { records: { fields: { name: string } }[] }) => body.records.map((r) => r.fields.name);

  beforeAll(async () => {
    h = await startHarness(kind);
    t = await makeTable(h, { name: 'Pets', schema: { fields: [{ name: 'name', label: 'Name', type: 'string' }] } });
    const res = await h.fetch(t.path, {
      method: 'POST',
      headers: { 'x-svc-write-key': t.table.writeKey },
      json: { records: [{ name: 'Rex' }, { name: 'Tom' }] },
    });
    expect(res.status).toBe(201);
  });
  afterAll(async () => h?.close());

  it('a read key required since the last read is asked for, and a public table again is read without one', async () => {
    expect(names((await getJson(h, t.path)).body)).toEqual(['Rex', 'Tom']);
    await setRow(sql`require_read_key = true`);
    const refused = await getJson(h, t.path);
    expect(refused.status).toBe(401);
    expect(refused.body.error.message).toMatch(/requires a key for reads/);
    expect((await getJson(h, t.path, { 'x-svc-write-key': t.table.writeKey })).status).toBe(200);
    await setRow(sql`require_read_key = false`);
    expect(names((await getJson(h, t.path)).body)).toEqual(['Rex', 'Tom']);
  });

  it('a field added elsewhere can be filtered on at once, and a disabled GET answers 405', async () => {
    await getJson(h, t.path);
    const { table } = await getTableBySlugs(h.deps, t.siteSlug, t.table.slug);
    const schema = { fields: [...table.schema.fields, { name: 'age', label: 'Age', type: 'number' }] };
    await setRow(sql`schema = ${JSON.stringify(schema)}::jsonb`);
    const filtered = await getJson(h, `${t.path}?filter[age][gte]=1`);
    expect(filtered.status, JSON.stringify(filtered.body)).toBe(200);
    expect(filtered.body.records).toEqual([]);
    await setRow(sql`methods = array['POST']`);
    expect((await getJson(h, t.path)).status).toBe(405);
    await setRow(sql`methods = array['GET', 'POST', 'PATCH', 'PUT', 'DELETE']`);
    expect((await getJson(h, t.path)).status).toBe(200);
  });

  it('a renamed table answers under its new slug only, and a deleted one 404', async () => {
    expect((await getJson(h, t.path)).status).toBe(200);
    await setRow(sql`slug = 'animals'`);
    expect((await getJson(h, t.path)).status).toBe(404);
    const renamed = t.path.replace(/[^/]+$/, 'animals');
    expect(names((await getJson(h, renamed)).body)).toEqual(['Rex', 'Tom']);
    const { table } = await getTableBySlugs(h.deps, t.siteSlug, 'animals');
    await deleteTable(h.deps, table);
    const gone = await getJson(h, renamed);
    expect(gone.status).toBe(404);
    expect(gone.body.error.code).toBe('not_found');
  });
});
