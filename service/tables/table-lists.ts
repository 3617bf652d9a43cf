import type { SQL } from 'drizzle-orm';
import { TABLE_LIMITS } from '../../shared/tables/schema.js';
import type { DbOrTx } from '../db/client.js';
import { rowsOf } from '../db/client.js';
import type { Metrics } from '../metrics/metrics.js';
import { CoalescedReads } from './coalesced-reads.js';
import { compileAggregateQuery, compileCountQuery, compileListQuery, nextCursorFor, type RecordSource, recordSource, type TableQueryPlan } from './query.js';
import { currentRowsGuard, TableRowCache, type VersionedTable } from './table-rows.js';
import type { TableRow } from '../db/schema/tables.js';
import { readCounter, tableSubject } from '../db/counters.js';

/**
 * The Table API's record reads (GET on a table), shared by its route (table-api.ts) and its fast
 * path (read-fast-path.ts): this node's table rows by slug (table-rows.ts) and the reads in flight
 * (coalesced-reads.ts).
 */
export class TableLists {
  /** This node's most recently read tables, by `tableListKey`. */
  readonly rows = new TableRowCache();
  private readonly reads: CoalescedReads<Buffer>;

  constructor(
    private readonly db: DbOrTx,
    metrics: Pick<Metrics, 'tableReads'>,
  ) {
    this.reads = new CoalescedReads<Buffer>((shared) => metrics.tableReads.inc({ run: shared ? 'shared' : 'own' }));
  }

  /**
   * The JSON answer of `plan` (parsed from the query string `search`) on `current`, from a run that
   * starts after this call. The answer depends on the table and site rows and the query only, not
   * on who asks (each request is authorized before it asks): identical reads share a run, and its
   * bytes (encoded once). Rejects with SQLSTATE SV001 when `current` is stale (table-rows.ts).
   */
  answer(current: VersionedTable, plan: TableQueryPlan, search: string): Promise<Buffer> {
    const key = `${current.table.id} ${current.tableVersion} ${current.siteVersion} ${search}`;
    return this.reads.read(key, async () => Buffer.from(JSON.stringify(await runTableQuery(this.db, current.table, plan, currentRowsGuard(current)))));
  }
}

/** The key of a table in `TableLists.rows`: its slugs, as URLs may spell them in any case. */
export function tableListKey(siteSlug: string, tableSlug: string): string {
  return `${siteSlug.toLowerCase()}/${tableSlug.toLowerCase()}`;
}

/**
 * `total`: a Table's kept record count when nothing narrows the list (db/counters.ts: the same at
 * any size), else a count(*) of the matches. The kept count carries no row check: the page beside
 * it does, and a stale Table fails there.
 */
async function totalOf(db: DbOrTx, table: TableRow, plan: TableQueryPlan, src: RecordSource): Promise<number> {
  const narrowed = plan.filters.length > 0 || plan.search || plan.dateRange || plan.bbox;
  if (!narrowed && table.storage === 'records') return readCounter(db, tableSubject(table.id), 'records');
  return Number(rowsOf<{ n: number }>(await db.execute(compileCountQuery(src, plan)))[0]?.n ?? 0);
}

/**
 * Executes a checked plan (the record page, default or compact shape, or an aggregate), each
 * statement carrying `guard` (table-rows.ts). With a total, the page and the count run side by side
 * on two connections: each is exact for its own snapshot.
 */
async function runTableQuery(db: DbOrTx, table: TableRow, plan: TableQueryPlan, guard: SQL): Promise<Record<string, unknown>> {
  const src = recordSource(table, guard);
  if (plan.aggregate) {
    const rows = rowsOf<{ key?: unknown; value: unknown; count: number }>(await db.execute(compileAggregateQuery(src, plan)));
    const a = plan.aggregate;
    const base = { ok: true as const, aggregate: a.fn, field: a.field?.name ?? null };
    if (!a.groupBy) return { ...base, value: numeric(rows[0]?.value), count: Number(rows[0]?.count ?? 0) };
    const truncated = rows.length > TABLE_LIMITS.maxGroups;
    return {
      ...base,
      groupBy: a.groupBy.name,
      groups: rows.slice(0, TABLE_LIMITS.maxGroups).map((r) => ({ key: r.key ?? null, value: numeric(r.value), count: Number(r.count) })),
      truncated,
    };
  }
  const [list, total] = await Promise.all([db.execute(compileListQuery(src, plan)), plan.includeTotal ? totalOf(db, table, plan, src) : undefined]);
  const raw = rowsOf<Record<string, unknown>>(list);
  const more = raw.length > plan.limit;
  const page = raw.slice(0, plan.limit).map((r) => ({ id: Number(r.id), fields: src.rowFields(r) }));
  const last = page.at(-1);
  const nextCursor = more && last ? nextCursorFor(plan, last) : null;
  const paging = { limit: plan.limit, offset: plan.cursor ? 0 : plan.offset, ...(total !== undefined ? { total } : {}), nextCursor };
  const names = plan.projection ?? table.schema.fields.map((f) => f.name);
  if (plan.compact) {
    return { ok: true, columns: ['id', ...names], rows: page.map((r) => [String(r.id), ...names.map((n) => r.fields[n] ?? null)]), ...paging };
  }
  const pick = plan.projection
    ? (f: Record<string, unknown>) => Object.fromEntries(plan.projection!.filter((n) => n in f).map((n) => [n, f[n]]))
    : (f: Record<string, unknown>) => f;
  return { ok: true, records: page.map((r) => ({ id: String(r.id), fields: pick(r.fields) })), ...paging };
}

/** min/max of text fields stay text; numbers arrive as numbers (float8) under both drivers. */
function numeric(v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint') return Number(v);
  return v;
}
