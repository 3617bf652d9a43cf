import { and, eq, sql, type SQL } from 'drizzle-orm';
import { type DbOrTx, sqlStateOf } from '../db/client.js';
import { sites, tables } from '../db/schema/index.js';
import { AppError } from '../kernel/app-error.js';
import { SLUG_PATTERN } from '../sites/slugs.js';
import type { SiteRow } from '../db/schema/sites.js';
import type { TableRow } from '../db/schema/tables.js';
import { LruMap } from '../../shared/lru-map.js';

/**
 * A table and its site as one node last read them, with the row versions (`xmin`) they had then.
 * A read that uses them carries `currentRowsGuard`, so PostgreSQL itself refuses (SQLSTATE SV001)
 * a statement built on rows that another request or node has changed since.
 */
export interface VersionedTable {
  site: SiteRow;
  table: TableRow;
  tableVersion: string;
  siteVersion: string;
}

/** SQLSTATE raised by `svc_table_rows_current` (migration 0003) when a cached row is stale. */
export const STALE_TABLE_ROWS = 'SV001';

/**
 * Whether a read failed because the rows it was built on are stale: refused by the guard (SV001),
 * or its dataset replaced and the old column table dropped (42P01). A fresh lookup reads again.
 */
export function builtOnStaleRows(e: unknown): boolean {
  const state = sqlStateOf(e);
  return state === STALE_TABLE_ROWS || state === '42P01';
}

/** A table by its public slugs, with its row versions. 404 when there is none. */
export async function lookupVersionedTable(db: DbOrTx, siteSlug: string, tableSlug: string): Promise<VersionedTable> {
  const s = siteSlug.toLowerCase();
  const t = tableSlug.toLowerCase();
  if (!SLUG_PATTERN.test(s) || !SLUG_PATTERN.test(t)) throw new AppError('not_found', `table ${siteSlug}/${tableSlug} not found`);
  const [row] = await db
    .select({ site: sites, table: tables, tableVersion: sql<string>`${tables}.xmin::text`, siteVersion: sql<string>`${sites}.xmin::text` })
    .from(tables)
    .innerJoin(sites, eq(sites.id, tables.siteId))
    .where(and(eq(sites.slug, s), eq(tables.slug, t)));
  if (!row) throw new AppError('not_found', `table ${siteSlug}/${tableSlug} not found`);
  return row;
}

/**
 * A predicate true when both rows are still current, raising SV001 otherwise. Uncorrelated, it is a
 * one-time filter: checked once, before the statement reads any record, in the statement's snapshot.
 */
export function currentRowsGuard(v: VersionedTable): SQL {
  return sql`(select svc_table_rows_current(${v.table.id}, ${v.tableVersion}, ${v.siteVersion}))`;
}

/**
 * `currentRowsGuard` with the check written into the statement, the function called only to raise
 * SV001 when the rows changed (in the same snapshot it finds them changed too). For statements whose
 * plan PostgreSQL keeps (`keepsPlans`, db/client.ts): planned with the statement, the check is two
 * primary-key lookups in the plan's InitPlan, where the function call costs twice that in the database
 * (a PL/pgSQL frame and its query's executor: ~25 against ~12 µs of a one-record read,
 * docs/performance.md, issue 53). A statement planned at every run (PGlite's, the writes') keeps the
 * function, whose query's plan outlives the statement.
 */
export function plannedRowsGuard(v: VersionedTable): SQL {
  const [id, tableVersion, siteVersion] = [v.table.id, v.tableVersion, v.siteVersion];
  return sql`(case when exists (select from tables t join sites s on s.id = t.site_id where t.id = ${id} and t.xmin::text = ${tableVersion} and s.xmin::text = ${siteVersion}) then true else svc_table_rows_current(${id}, ${tableVersion}, ${siteVersion}) end)`;
}

/** Raises SV001 when either row has changed since `v` was read: a statement of the guard alone. */
export async function assertRowsCurrent(db: DbOrTx, v: VersionedTable): Promise<void> {
  await db.execute(sql`select ${currentRowsGuard(v)}`);
}

/**
 * Each node's most recently used tables, by `site/table` slug (least recently used dropped past
 * `capacity`). Nothing needs invalidating: every read checks its rows with `currentRowsGuard`, and a
 * refusal (wrong key, stale row) from a cached entry is checked again against a fresh lookup.
 */
export class TableRowCache extends LruMap<string, VersionedTable> {
  constructor(capacity = 1000) {
    super(capacity);
  }
}
