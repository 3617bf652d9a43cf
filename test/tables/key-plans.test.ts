import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileStatement, executeCompiled, rowsOf } from '../../service/db/client.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { bulkInsertRecords } from '../../service/tables/tables.js';
import { makeTable } from './helpers.js';

/**
 * The Table API's reads run on a pool whose sessions force custom plans (a generic plan cannot see
 * which JSONB values a filter names); a read whose plan cannot depend on its parameters (`keyPlan`: a
 * record by id, a page in id order that nothing narrows, a read with its values written in its text)
 * runs on the pool's twin, which keeps PostgreSQL's own plan cache, so it is not planned again at
 * every run (cli/runtime.ts, issue 53).
 */
describe.runIf(process.env.TEST_DATABASE_URL)('key reads on sessions that reuse plans (postgres)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('postgres');
  });
  afterAll(() => h?.close());

  const modeOf = async (keyPlan: boolean) =>
    rowsOf<{ m: string; t: string }>(
      await executeCompiled(
        h.deps.tableReads,
        compileStatement(sql`select current_setting('plan_cache_mode') as m, current_setting('statement_timeout') as t`, { keyPlan }),
      ),
    )[0]!;

  it('a key read runs where plans are reused, any other where custom plans are forced; both under the statement timeout', async () => {
    const timeout = `${h.config.tables.statementTimeoutMs}ms`;
    expect(await modeOf(true)).toEqual({ m: 'auto', t: timeout.replace(/000ms$/, 's') });
    expect(await modeOf(false)).toEqual({ m: 'force_custom_plan', t: timeout.replace(/000ms$/, 's') });
  });

  it('answers are the same on either: one record, a page in id order, its next page, a filtered page', async () => {
    const t = await makeTable(h, {
      name: 'items',
      schema: {
        fields: [
          { name: 'name', type: 'string' },
          { name: 'qty', type: 'integer' },
        ],
      },
    });
    const records = Array.from({ length: 30 }, (_, i) => ({ name: `n${i}`, qty: i }));
    const created = await h.fetch(t.path, { method: 'POST', headers: { 'x-svc-write-key': t.table.writeKey }, json: { records } });
    expect(created.status).toBe(201);
    // Several times each: a prepared statement's plan is reused from its sixth run.
    for (let round = 0; round < 7; round++) {
      const one = (await (await h.fetch(`${t.path}/3`)).json()) as { record: { fields: { qty: number } } };
      expect(one.record.fields.qty).toBe(2);
      const page = (await (await h.fetch(`${t.path}?limit=10`)).json()) as { records: { id: string }[]; nextCursor: string };
      expect(page.records.map((r) => r.id)).toEqual(Array.from({ length: 10 }, (_, i) => String(i + 1)));
      const next = (await (await h.fetch(`${t.path}?limit=10&cursor=${encodeURIComponent(page.nextCursor)}`)).json()) as { records: { id: string }[] };
      expect(next.records.map((r) => r.id)).toEqual(Array.from({ length: 10 }, (_, i) => String(i + 11)));
      const filtered = (await (await h.fetch(`${t.path}?filter[qty][gte]=25&sortField=qty&sortDir=desc`)).json()) as { records: { fields: { qty: number } }[] };
      expect(filtered.records.map((r) => r.fields.qty)).toEqual([29, 28, 27, 26, 25]);
    }
  });

  it('a page in id order is planned once, then its plan reused (its limit in the text, not a parameter)', async () => {
    const t = await makeTable(h, { name: 'reused', schema: { fields: [{ name: 'name', type: 'string' }] } });
    // Enough records that a tenth of them is no longer a page: 20,000, written as the bulk load does.
    await h.deps.db.transaction((tx) =>
      bulkInsertRecords(
        tx,
        t.table.id,
        Array.from({ length: 20_000 }, (_, i) => ({ name: `n${i}` })),
      ),
    );
    await h.deps.db.execute(sql`analyze table_records`);
    for (let round = 0; round < 12; round++) expect((await h.fetch(`${t.path}?limit=7`)).status).toBe(200);
    // Sequential reads run on one connection of the twin pool; its statements as PostgreSQL counts their plans.
    const plans = rowsOf<{ generic: number; custom: number }>(
      await executeCompiled(
        h.deps.tableReads,
        compileStatement(
          sql`select generic_plans::int as generic, custom_plans::int as custom from pg_prepared_statements where statement like ${'%order by r.id asc limit%'}`,
          { keyPlan: true },
        ),
      ),
    );
    // With a parameter as its limit, PostgreSQL costed the reusable plan for a tenth of the rows and planned every run anew.
    expect(plans.some((p) => p.generic >= 6)).toBe(true);
  });

  it('a filtered, sorted page has its values written in its text: planned once, its plan reused from the first run', async () => {
    const t = await makeTable(h, {
      name: 'filtered',
      schema: {
        fields: [
          { name: 'category', type: 'string' },
          { name: 'price', type: 'number' },
        ],
      },
    });
    const records = Array.from({ length: 40 }, (_, i) => ({ category: `cat-${i % 4}`, price: i }));
    expect((await h.fetch(t.path, { method: 'POST', headers: { 'x-svc-write-key': t.table.writeKey }, json: { records } })).status).toBe(201);
    for (let round = 0; round < 8; round++) {
      const page = (await (await h.fetch(`${t.path}?field=category&value=cat-3&sortField=price&sortDir=desc&limit=3`)).json()) as {
        records: { fields: { price: number } }[];
      };
      expect(page.records.map((r) => r.fields.price)).toEqual([39, 35, 31]);
    }
    const plans = rowsOf<{ generic: number; custom: number }>(
      await executeCompiled(
        h.deps.tableReads,
        compileStatement(
          sql`select generic_plans::int as generic, custom_plans::int as custom from pg_prepared_statements where statement like ${`%E'{"category":"cat-3"}'::jsonb%`}`,
          { keyPlan: true },
        ),
      ),
    );
    // One statement, every run on its one plan (a statement without parameters gets no custom plans).
    expect(plans).toEqual([{ generic: 8, custom: 0 }]);
  });
});
