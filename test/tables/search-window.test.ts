import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgDialect } from 'drizzle-orm/pg-core';
import { columnTableName, createColumnTable, finishColumnTable } from '../../service/db/column-storage.js';
import { rowsOf } from '../../service/db/client.js';
import type { TableRow } from '../../service/db/schema/tables.js';
import { compileListQuery, nextCursorFor, parseTableQuery, recordSource, SEARCH_WINDOW, searchesWindowFirst } from '../../service/tables/query.js';
import { lookupVersionedTable } from '../../service/tables/table-rows.js';
import { createTable } from '../../service/tables/tables.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { makeTable } from './helpers.js';

/**
 * A substring search's page in id order looks at a window of records first (query.ts,
 * `windowFirst`), and runs the plain statement only when the window holds fewer matches than the
 * page and more records follow it. Whatever the window's size, the rows must be those of the plain
 * statement, in its order: compared here for windows from 1 record (the plain statement nearly
 * always runs after it) to more than the table (the window alone answers), on both storages.
 */

const SCHEMA = {
  fields: [
    { name: 'name', label: 'Name', type: 'string' as const },
    { name: 'category', label: 'Category', type: 'string' as const },
    { name: 'price', label: 'Price', type: 'number' as const },
    { name: 'n', label: 'N', type: 'integer' as const },
  ],
};

const RECORDS = 300;
const WORDS = ['apple', 'Banana', 'cherry', 'ÜBER', '100% juice', 'snake_case'];

function records(): Record<string, unknown>[] {
  return Array.from({ length: RECORDS }, (_, i) => {
    // Matches spread through the table: common words, every seventh record, and one near the end.
    const word = i === 290 ? 'needle' : i % 7 === 3 ? 'seventh' : WORDS[i % WORDS.length];
    const r: Record<string, unknown> = { name: `rec ${i} ${word}`, category: `cat-${i % 5}`, price: (i * 37) % 101, n: i };
    if (i % 23 === 11) delete r.name; // no name at all: not a match, not an error
    return r;
  });
}

/** Query strings whose pages take the window (each checked to), and a few that do not. */
const WINDOWED = [
  '?q=needle',
  '?q=needle&sort=-id&limit=1',
  '?q=apple',
  '?q=apple&limit=5',
  '?q=apple&sort=-id&limit=6',
  '?q=e&limit=3',
  '?q=seventh&limit=40',
  '?q=zzz',
  '?q=%25',
  '?q=_',
  '?q=über&limit=4',
  '?q=rec 1&limit=10',
  '?q=cat-1&searchFields=name,category&limit=7',
  '?q=apple&field=category&value=cat-2&limit=3',
  '?q=seventh&filter[price][gt]=50&limit=4',
  '?q=apple&fields=name&limit=5',
  '?q=cherry&compact=true&fields=price&limit=5',
  '?filter[name][ilike]=*apple*&limit=4',
  '?filter[name][ilike]=rec 2*&limit=9',
  '?filter[name][ilike]=*needle&sort=-id',
];
const NOT_WINDOWED = ['?q=apple&sort=name&limit=5', '?q=apple&limit=5&offset=2', '?field=category&value=cat-1&limit=5', '?limit=5'];
/** Window sizes compared with none: below, at and above the table's size. */
const WINDOWS = [1, 2, 3, 5, 8, 50, 149, 299, 300, 301, 1000];

describe.each(dbKinds())('substring search pages: the window first, the same rows (%s)', (kind) => {
  let h: Harness;
  let tables: { records: TableRow; columns: TableRow };
  let apiPath: string;
  const dialect = new PgDialect();

  beforeAll(async () => {
    h = await startHarness(kind);
    const t = await makeTable(h, { name: 'Items', schema: SCHEMA });
    const all = records();
    for (let i = 0; i < all.length; i += 100) {
      const res = await h.fetch(t.path, { method: 'POST', headers: { 'x-svc-write-key': t.table.writeKey }, json: { records: all.slice(i, i + 100) } });
      expect(res.status).toBe(201);
    }
    const { table: columns } = await createTable(
      h.deps,
      { id: t.siteId, slug: t.siteSlug },
      { name: 'Cols', slug: 'cols', kind: 'dataset', storage: 'columns', schema: SCHEMA },
    );
    await h.deps.db.transaction(async (tx) => {
      await createColumnTable(tx, columns.id, SCHEMA.fields);
      const rows = all.map((r, i) => ({ id: i + 1, ...r }));
      await tx.execute(
        sql`insert into ${sql.raw(columnTableName(columns.id))} select * from jsonb_populate_recordset(null::${sql.raw(columnTableName(columns.id))}, ${JSON.stringify(rows)}::jsonb)`,
      );
      await finishColumnTable(tx, columns.id);
    });
    apiPath = t.path;
    tables = { records: (await lookupVersionedTable(h.deps.db, t.siteSlug, t.table.slug)).table, columns };
  });
  afterAll(async () => h?.close());

  /** The rows of `qs`'s page with a window of `size` records (0: none), as the driver returns them. */
  async function page(table: TableRow, qs: string, size: number, cursorAfter?: { id: number }): Promise<Record<string, unknown>[]> {
    let plan = parseTableQuery(table.schema, new URLSearchParams(qs));
    if (cursorAfter) plan = parseTableQuery(table.schema, new URLSearchParams(`${qs}&cursor=${nextCursorFor(plan, { id: cursorAfter.id, fields: {} })}`));
    return rowsOf<Record<string, unknown>>(await h.deps.db.execute(compileListQuery(recordSource(table), plan, size)));
  }

  for (const storage of ['records', 'columns'] as const) {
    it(`${storage}: every window answers the plain statement's rows, in its order, page after page`, async () => {
      const table = tables[storage];
      let compared = 0;
      for (const qs of WINDOWED) {
        const plan = parseTableQuery(table.schema, new URLSearchParams(qs));
        expect(searchesWindowFirst(plan), qs).toBe(true);
        // Walk every page by its cursor (the plain statement's pages), comparing each window's.
        let after: { id: number } | undefined;
        for (let pages = 0; pages < 60; pages++) {
          const plain = await page(table, qs, 0, after);
          for (const size of WINDOWS) {
            expect(await page(table, qs, size, after), `${storage} ${qs} window ${size} after ${after?.id}`).toEqual(plain);
            compared++;
          }
          if (plain.length <= plan.limit) break;
          after = { id: Number(plain[plan.limit - 1]!.id) };
        }
      }
      expect(compared).toBeGreaterThan(WINDOWED.length * WINDOWS.length);
    });

    it(`${storage}: other reads are the statement they were`, async () => {
      const table = tables[storage];
      for (const qs of NOT_WINDOWED) {
        const plan = parseTableQuery(table.schema, new URLSearchParams(qs));
        expect(searchesWindowFirst(plan), qs).toBe(false);
        expect(dialect.sqlToQuery(compileListQuery(recordSource(table), plan)).sql).toBe(
          dialect.sqlToQuery(compileListQuery(recordSource(table), plan, 0)).sql,
        );
      }
      expect(SEARCH_WINDOW).toBeGreaterThan(RECORDS); // so the Table API's own reads here are the window's alone
    });
  }

  /** Whether the plain statement after the window ran (EXPLAIN ANALYZE: the loops of what the window's `not complete` gates). */
  async function plainStatementRan(table: TableRow, qs: string, size: number): Promise<boolean> {
    const plan = parseTableQuery(table.schema, new URLSearchParams(qs));
    const [row] = rowsOf<{ 'QUERY PLAN': unknown }>(
      await h.deps.db.execute(sql`explain (analyze, format json) ${compileListQuery(recordSource(table), plan, size)}`),
    );
    const raw = row!['QUERY PLAN'];
    type Node = { 'One-Time Filter'?: string; 'Parent Relationship'?: string; 'Actual Loops'?: number; Plans?: Node[] };
    const nodes: Node[] = [];
    const walk = (n: Node) => {
      nodes.push(n);
      for (const c of n.Plans ?? []) walk(c);
    };
    walk(((typeof raw === 'string' ? JSON.parse(raw) : raw) as { Plan: Node }[])[0]!.Plan);
    const gate = nodes.filter((n) => n['One-Time Filter']?.startsWith('(NOT '));
    expect(gate, qs).toHaveLength(1);
    const gated = gate[0]!.Plans?.find((n) => n['Parent Relationship'] === 'Outer');
    expect(gated, qs).toBeDefined();
    return gated!['Actual Loops']! > 0;
  }

  for (const storage of ['records', 'columns'] as const) {
    it(`${storage}: the plain statement runs only when the window is full and short of a page`, async () => {
      const table = tables[storage];
      expect(await plainStatementRan(table, '?q=needle', 1000)).toBe(false); // the whole table in the window: one match
      expect(await plainStatementRan(table, '?q=needle', 50)).toBe(true); // 50 records, no match, more after them
      expect(await plainStatementRan(table, '?q=apple&limit=5', 50)).toBe(false); // 6 matches among the first 50
      expect(await plainStatementRan(table, '?q=zzz', RECORDS - 1)).toBe(true); // one record after the window
      expect(await plainStatementRan(table, '?q=zzz', RECORDS)).toBe(false); // none after it
    });
  }

  it("the Table API answers a search page with the plain statement's records", async () => {
    const res = await h.fetch(`${apiPath}?q=seventh&limit=4`);
    const body = (await res.json()) as { records: { id: string; fields: Record<string, unknown> }[] };
    expect(res.status).toBe(200);
    const plain = await page(tables.records, '?q=seventh&limit=4', 0);
    expect(body.records.map((r) => r.id)).toEqual(plain.slice(0, 4).map((r) => String(r.id)));
    expect(body.records.map((r) => r.fields)).toEqual(plain.slice(0, 4).map((r) => JSON.parse(String(r.fields))));
    expect(body.records.every((r) => String(r.fields.name).includes('seventh'))).toBe(true);
  });
});
