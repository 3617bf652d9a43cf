import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf, sqlStateOf } from '../../service/db/client.js';
import { compileListQuery, parseTableQuery, recordSource } from '../../service/tables/query.js';
import { currentRowsGuard, lookupVersionedTable, plannedRowsGuard } from '../../service/tables/table-rows.js';
import { deleteTable, getTableBySlugs, hashWriteKey } from '../../service/tables/tables.js';
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

  // A function is PARALLEL UNSAFE by default, and one such function in a statement keeps PostgreSQL
  // from using parallel workers for any of it: big scans ran on one core (migration 0004).
  it.skipIf(kind !== 'postgres').each([
    ['the function', currentRowsGuard],
    ['the check written into the statement', plannedRowsGuard],
  ])('the guard (%s) leaves the read free to use parallel workers; it runs once, in the leader', async (_, guard) => {
    const versioned = await lookupVersionedTable(h.deps.db, t.siteSlug, t.table.slug);
    const plan = parseTableQuery(versioned.table.schema, new URLSearchParams('q=ex'));
    const read = compileListQuery(recordSource(versioned.table, guard(versioned)), plan);
    const explained = await h.deps.db.transaction(async (tx) => {
      // The table is tiny: a scan of all of it, with workers made free, so the planner picks them
      // whenever it may (as it does on a large dataset).
      const settings = ['parallel_setup_cost = 0', 'parallel_tuple_cost = 0', 'min_parallel_table_scan_size = 0', 'max_parallel_workers_per_gather = 2'];
      for (const setting of [...settings, 'enable_bitmapscan = off', 'enable_indexscan = off']) await tx.execute(sql.raw(`set local ${setting}`));
      return rowsOf<{ 'QUERY PLAN': string }>(await tx.execute(sql`explain (costs off) ${read}`))
        .map((r) => r['QUERY PLAN'])
        .join('\n');
    });
    expect(explained).toContain('InitPlan');
    expect(explained, explained).toMatch(/Gather/);
    // The guard's InitPlan gates the whole plan from its top, above the Gather: evaluated once, by the
    // leader, before any worker starts.
    const [top, filter] = explained.split('\n');
    expect(top, explained).toBe('Result');
    expect(filter!.trim()).toMatch(/^One-Time Filter: (\$0|CASE WHEN \$\d+ THEN true ELSE svc_table_rows_current\(.*\) END)$/);
    expect(explained.indexOf('InitPlan')).toBeLessThan(explained.indexOf('Gather'));
  });

  // The read pool forces custom plans (cli/runtime.ts); inside the guard's PL/pgSQL that re-planned
  // its join at every read (migration 0013). The setting the guard runs under is the catalog's word,
  // and the guard still refuses a stale row under it.
  it('the guard keeps its own cached plan under the read pool’s forced custom plans, and still refuses a stale row', async () => {
    const [fn] = rowsOf<{ config: string[] | null }>(
      await h.deps.db.execute(sql`select proconfig as config from pg_proc where proname = 'svc_table_rows_current'`),
    );
    expect(fn?.config).toEqual(['plan_cache_mode=auto']);
    const versioned = await lookupVersionedTable(h.deps.db, t.siteSlug, t.table.slug);
    const underForcedCustomPlans = (n: number) =>
      h.deps.db.transaction(async (tx) => {
        await tx.execute(sql`set local plan_cache_mode = force_custom_plan`);
        for (let i = 0; i < n; i++) await tx.execute(sql`select ${currentRowsGuard(versioned)}`);
      });
    await underForcedCustomPlans(8); // past the 5 runs after which a cached plan may turn generic
    await setRow(sql`name = name`); // a new row version
    const refused = await underForcedCustomPlans(1).then(
      () => null,
      (e: unknown) => e,
    );
    expect(sqlStateOf(refused)).toBe('SV001');
  });

  // On PostgreSQL a read's plan is kept (the read pool's plan-reusing twin) and the check is written
  // into it (plannedRowsGuard): after the runs that make the cached plan generic, a row changed
  // elsewhere is still seen at the next read, by a record, a page in id order and a filtered page.
  it('a read whose plan is kept sees a row changed elsewhere at its next read', async () => {
    const id = (await getJson(h, `${t.path}?limit=1`)).body.records[0].id as string;
    const reads = [`${t.path}/${id}`, `${t.path}?limit=1`, `${t.path}?field=name&value=Rex`];
    for (const path of reads) {
      for (let i = 0; i < 8; i++) expect((await getJson(h, path)).status).toBe(200);
      await setRow(sql`methods = array['POST']`);
      expect((await getJson(h, path)).status, path).toBe(405);
      await setRow(sql`methods = array['GET', 'POST', 'PATCH', 'PUT', 'DELETE']`);
      expect((await getJson(h, path)).status, path).toBe(200);
    }
  });

  // Writes take the same cached row and carry the same check in their one statement.
  it('writes too: a write key replaced elsewhere is refused at once and the new one taken; a field made required is asked for', async () => {
    const post = (key: string, record: Record<string, unknown>) => h.fetch(t.path, { method: 'POST', headers: { 'x-svc-write-key': key }, json: { record } });
    expect((await post(t.table.writeKey, { name: 'Kit' })).status).toBe(201); // this node now holds the row
    const newKey = `${t.table.writeKey}2`;
    await setRow(sql`write_key_hash = ${hashWriteKey(newKey)}`);
    const stale = await post(t.table.writeKey, { name: 'Old' });
    expect(stale.status).toBe(401);
    expect((await post(newKey, { name: 'New' })).status).toBe(201);
    const { table } = await getTableBySlugs(h.deps, t.siteSlug, t.table.slug);
    await setRow(sql`schema = ${JSON.stringify({ fields: [...table.schema.fields, { name: 'legs', label: 'Legs', type: 'number', required: true }] })}::jsonb`);
    const missing = await post(newKey, { name: 'Ageless' });
    expect(missing.status).toBe(400);
    expect(JSON.stringify(await missing.json())).toContain('legs');
    expect((await post(newKey, { name: 'Aged', legs: 3 })).status).toBe(201);
    // A field added elsewhere is written at once (the cached schema did not know it), and changed.
    const aged = await getTableBySlugs(h.deps, t.siteSlug, t.table.slug);
    await setRow(sql`schema = ${JSON.stringify({ fields: [...aged.table.schema.fields, { name: 'color', label: 'Color', type: 'string' }] })}::jsonb`);
    const colored = await post(newKey, { name: 'Red', legs: 1, color: 'red' });
    expect(colored.status, JSON.stringify(await colored.clone().json())).toBe(201);
    const id = ((await colored.json()) as { record: { id: string } }).record.id;
    await setRow(
      sql`schema = ${JSON.stringify({ fields: [...aged.table.schema.fields, { name: 'color', label: 'Color', type: 'string' }, { name: 'size', label: 'Size', type: 'number' }] })}::jsonb`,
    );
    const patched = await h.fetch(`${t.path}/${id}`, { method: 'PATCH', headers: { 'x-svc-write-key': newKey }, json: { fields: { size: 2 } } });
    expect(patched.status).toBe(200);
    await setRow(sql`write_key_hash = ${hashWriteKey(t.table.writeKey)}`);
    const staleDelete = await h.fetch(`${t.path}/${id}`, { method: 'DELETE', headers: { 'x-svc-write-key': newKey } });
    expect(staleDelete.status).toBe(401);
    expect((await h.fetch(`${t.path}/${id}`, { method: 'DELETE', headers: { 'x-svc-write-key': t.table.writeKey } })).status).toBe(200);
    // Nothing of the refused writes was kept.
    const all = await getJson(h, `${t.path}?limit=10`);
    expect(names(all.body)).toEqual(['Rex', 'Tom', 'Kit', 'New', 'Aged']);
    // Back as the other tests found it.
    await h.deps.db.execute(sql`delete from table_records where table_id = ${t.table.id} and fields->>'name' not in ('Rex', 'Tom')`);
    await setRow(sql`write_key_hash = ${hashWriteKey(t.table.writeKey)}, schema = ${JSON.stringify(table.schema)}::jsonb`);
  });

  // One record and the schema take the same cached row: the record's statement carries the check,
  // and the schema (answered from the row) checks it alone.
  it('one record and the schema: a read key required elsewhere is asked for, a field added elsewhere is in the schema at once', async () => {
    const first = (await getJson(h, `${t.path}?limit=1`)).body.records[0] as { id: string };
    const one = `${t.path}/${first.id}`;
    expect((await getJson(h, one)).body.record.fields).toEqual({ name: 'Rex' });
    expect((await getJson(h, `${t.path}/schema`)).body.requireReadKey).toBe(false); // this node now holds the row
    await setRow(sql`require_read_key = true`);
    const refused = await getJson(h, one);
    expect(refused.status).toBe(401);
    expect(refused.body.error.message).toMatch(/requires a key for reads/);
    expect((await getJson(h, `${t.path}/schema`)).status).toBe(401);
    expect((await getJson(h, one, { 'x-svc-write-key': t.table.writeKey })).body.record.fields).toEqual({ name: 'Rex' });
    await setRow(sql`require_read_key = false`);
    const { table } = await getTableBySlugs(h.deps, t.siteSlug, t.table.slug);
    const before = table.schema.fields.map((f) => f.name);
    await setRow(sql`schema = ${JSON.stringify({ fields: [...table.schema.fields, { name: 'weight', label: 'Weight', type: 'number' }] })}::jsonb`);
    const schema = await getJson(h, `${t.path}/schema`);
    expect(schema.status).toBe(200);
    expect(schema.body.schema.fields.map((f: { name: string }) => f.name)).toEqual([...before, 'weight']);
    expect(schema.body.requireReadKey).toBe(false);
    // A record that is not there is a 404 from a current row, and the same from a stale one.
    expect((await getJson(h, `${t.path}/999999`)).status).toBe(404);
    await setRow(sql`schema = ${JSON.stringify(table.schema)}::jsonb`);
    const missing = await getJson(h, `${t.path}/999999`);
    expect(missing.status).toBe(404);
    expect(missing.body.error.message).toBe('record 999999 not found');
    expect((await getJson(h, `${t.path}/schema`)).body.schema.fields.map((f: { name: string }) => f.name)).toEqual(before);
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
