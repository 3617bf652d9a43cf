import { type SQL, sql } from 'drizzle-orm';
import { LruMap } from '../../shared/lru-map.js';
import { TABLE_LIMITS } from '../../shared/tables/schema.js';
import { type CompiledStatement, compileStatement, type DbOrTx, executeCompiled, keepsPlans, takeRows } from '../db/client.js';
import { readCounter, tableSubject } from '../db/counters.js';
import type { TableRow } from '../db/schema/tables.js';
import type { ReadRoute } from '../db/read-pools.js';
import type { Metrics } from '../metrics/metrics.js';
import { CoalescedReads } from './coalesced-reads.js';
import {
  compileAggregateQuery,
  compileCountQuery,
  compileListQuery,
  nextCursorFor,
  type PageColumns,
  pageColumns,
  parseTableQuery,
  type RecordSource,
  recordSource,
  type TableQueryPlan,
} from './query.js';
import { plannedReadKeyGuard, type ReadKey, readKeyGuard, ReadKeys, readKeyValues } from './read-keys.js';
import { currentRowsGuard, plannedRowsGuard, TableRowCache, type VersionedTable } from './table-rows.js';
import { parseRecordId, recordByIdStatement, recordNotFound, recordTimesOf } from './record-rows.js';

/**
 * A list read compiled for one version of a table and one query string: its plan, and its
 * statements rendered once (db/client.ts, CompiledStatement), each carrying the row check.
 */
export interface CompiledList {
  /** Identical reads share a run (coalesced-reads.ts) by this key: the table's version and the query. */
  key: string;
  table: TableRow;
  plan: TableQueryPlan;
  src: RecordSource;
  /** The record page, or the aggregate. */
  main: CompiledStatement;
  /** How a row of the page reads: its record fields, and a shown field's JSON where it comes as text (pageColumns). */
  columns: PageColumns;
  /** The count of a narrowed list asked with its total; null when none is asked or the kept count answers. */
  count: CompiledStatement | null;
}

/** Runs the compiled statements of Table API reads (db/client.ts, `executeCompiled`). */
export interface ReadStatements {
  /** `db`: the pool the read's route chose (db/read-pools.ts); the primary's read pool when not given. */
  run(statement: CompiledStatement, values?: Record<string, unknown>, db?: DbOrTx): Promise<unknown>;
}

/** Compiled list reads kept per node: a query string asked again skips the parse and the rendering. */
const COMPILED_LISTS = 1000;

/**
 * The Table API's record reads (GET on a table or one record), shared by its route (table-api.ts)
 * and its fast path (read-fast-path.ts): this node's table rows by slug (table-rows.ts), each read
 * compiled once per table version, and the reads in flight (coalesced-reads.ts).
 */
export class TableLists {
  /** This node's most recently read tables, by `tableListKey`. */
  readonly rows = new TableRowCache();
  private readonly reads: CoalescedReads<Buffer>;
  private readonly lists = new LruMap<string, CompiledList>(COMPILED_LISTS);
  /** The personal keys this node looked up lately for reads, each read checking its key is unchanged. */
  readonly readKeys = new ReadKeys();
  /** A version's one-record read, the record id a placeholder; dropped with the version's row. */
  private readonly records = new WeakMap<VersionedTable, RecordRead>();
  /** The same, carrying the check of a kept personal key (`readKeyGuard`). */
  private readonly keyedRecords = new WeakMap<VersionedTable, RecordRead>();
  /** Every statement a read runs goes through `statements.run`. */
  readonly statements: ReadStatements;
  /** The checks of a read: written into its statement where PostgreSQL keeps the statement's plan. */
  private readonly guards: { rows: (current: VersionedTable) => SQL; key: SQL };

  constructor(
    private readonly db: DbOrTx,
    metrics: Pick<Metrics, 'tableReads'>,
  ) {
    this.reads = new CoalescedReads<Buffer>((shared) => metrics.tableReads.inc({ run: shared ? 'shared' : 'own' }));
    this.statements = { run: (statement, values, on = db) => executeCompiled(on, statement, values) };
    this.guards = keepsPlans(db) ? { rows: plannedRowsGuard, key: plannedReadKeyGuard } : { rows: currentRowsGuard, key: readKeyGuard };
  }

  /** The checks a read of `current` carries: its table rows, and with `keyed` a kept personal key (values: `readKeyValues`). */
  private guardOf(current: VersionedTable, keyed: boolean): SQL {
    return keyed ? sql`${this.guards.rows(current)} and ${this.guards.key}` : this.guards.rows(current);
  }

  /**
   * The list read of query string `search` (`?…` or empty) on `current`; throws the query's 400 as
   * parseTableQuery does. `keyed`: the read carries the check of a kept personal key (read-keys.ts).
   */
  list(current: VersionedTable, search: string, keyed = false): CompiledList {
    const key = `${current.table.id} ${current.tableVersion} ${current.siteVersion}${keyed ? ' keyed' : ''} ${search}`;
    let compiled = this.lists.get(key);
    if (!compiled) {
      compiled = compileList(key, current, parseTableQuery(current.table.schema, new URLSearchParams(search)), this.guardOf(current, keyed));
      this.lists.set(key, compiled);
    }
    return compiled;
  }

  /**
   * The JSON answer of `list`, from a run that starts after this call. The answer depends on the
   * table and site rows and the query only, not on who asks (each request is authorized before it
   * asks): identical reads share a run, and its bytes (encoded once). Rejects with SQLSTATE SV001
   * when the table row it was compiled from is stale (table-rows.ts). A keyed list is answered with
   * the check of `key` (rejecting with SV002 when it changed); reads with the same key share a run.
   */
  answer(list: CompiledList, key?: ReadKey, route?: ReadRoute): Promise<Buffer> {
    const values = key ? readKeyValues(key) : undefined;
    const shared = (key ? `${list.key}\n${key.keyId} ${key.versions.key} ${key.versions.account}` : list.key) + (route?.label ? `\n${route.label}` : '');
    const run = (db: DbOrTx) => runList(db, this.statements, list, values);
    return this.reads.read(shared, async () => Buffer.from(route ? await route.run(run) : await run(this.db)));
  }

  /**
   * The JSON answer of one record of `current` by id; 404 when there is none. Rejects with SV001 as
   * `answer` does; with `key`, carries its check as a keyed list does. A record's fields are placed
   * in the answer as the database wrote them, as a page's are (runList).
   */
  async recordAnswer(current: VersionedTable, recordId: string, key?: ReadKey, route?: ReadRoute): Promise<string> {
    const id = parseRecordId(recordId);
    if (id === null) throw recordNotFound(recordId);
    const compiled = key ? this.keyedRecords : this.records;
    let read = compiled.get(current);
    if (!read) {
      const src = recordSource(current.table, this.guardOf(current, key !== undefined));
      read = {
        src,
        statement: compileStatement(recordByIdStatement(current.table, src, sql.placeholder('id')), { prepared: hasFixedText(current.table), keyPlan: true }),
      };
      compiled.set(current, read);
    }
    const values = key ? { id, ...readKeyValues(key) } : { id };
    const statement = read.statement;
    const run = (db: DbOrTx) => this.statements.run(statement, values, db);
    const [row] = takeRows<Record<string, unknown>>(route ? await route.run(run) : await run(this.db));
    if (!row) throw recordNotFound(recordId);
    const { createdAt, updatedAt } = recordTimesOf(current.table, row);
    return `{"ok":true,"record":{"id":"${Number(row.id)}","fields":${read.src.fieldsJson(row)},"createdAt":"${createdAt.toISOString()}","updatedAt":"${updatedAt.toISOString()}"}}`;
  }
}

/** A version's one-record read: its record source and its statement. */
interface RecordRead {
  src: RecordSource;
  statement: CompiledStatement;
}

function compileList(key: string, current: VersionedTable, plan: TableQueryPlan, guard: SQL): CompiledList {
  const { table } = current;
  const src = recordSource(table, guard);
  // A read whose plan depends on its values has them written in its text (db/client.ts, `inlineValues`):
  // planned once per connection, where a parameter would have it planned at every run.
  if (plan.aggregate) return { key, table, plan, src, main: compileStatement(compileAggregateQuery(src, plan), { inline: true }), columns: src, count: null };
  const narrowed = plan.filters.length > 0 || plan.search !== undefined || plan.dateRange !== undefined || plan.bbox !== undefined;
  const count = plan.includeTotal && (narrowed || table.storage !== 'records') ? compileStatement(compileCountQuery(src, plan), { inline: true }) : null;
  // A page in id order that nothing narrows walks the key whatever its values: one plan serves every read.
  const keyOrder = !narrowed && plan.sort.every((k) => k.field === 'id');
  const columns = pageColumns(src, plan);
  return {
    key,
    table,
    plan,
    src,
    main: compileStatement(
      compileListQuery(src, plan, undefined, columns),
      keyOrder ? { prepared: hasFixedText(table) && !plan.projection, keyPlan: true } : { inline: true },
    ),
    columns,
    count,
  };
}

/**
 * Whether reads of `table` may be kept prepared on the read pool's connections (CompiledStatement,
 * db/client.ts): a read of the shared `table_records` names its table, version and values as
 * parameters, so a record by id, or a page in id order with nothing narrowing it, has one text for
 * every table (a few in all: keyed or not, ascending or descending, with a cursor or not, and the
 * page's limit and offset). A filter, a sort or the fields a page shows name fields in the text, a
 * dataset its own column table: those are never kept (on a pool that bounds its statements, every
 * statement is: `executeCompiled`).
 */
function hasFixedText(table: TableRow): boolean {
  return table.storage === 'records';
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
async function totalOf(db: DbOrTx, statements: ReadStatements, list: CompiledList, values: Record<string, unknown> | undefined): Promise<number> {
  if (!list.count) return readCounter(db, tableSubject(list.table.id), 'records');
  return Number(takeRows<{ n: number }>(await statements.run(list.count, values, db))[0]?.n ?? 0);
}

/**
 * The JSON answer of a compiled list read (the record page, default or compact shape, or an
 * aggregate). With a total, the page and the count run side by side on two connections: each is
 * exact for its own snapshot.
 */
async function runList(db: DbOrTx, statements: ReadStatements, list: CompiledList, values: Record<string, unknown> | undefined): Promise<string> {
  const { table, plan, src } = list;
  const { rowFields, fieldJson } = list.columns;
  if (plan.aggregate) {
    const rows = takeRows<{ key?: unknown; value: unknown; count: number }>(await statements.run(list.main, values, db));
    const a = plan.aggregate;
    const base = { ok: true as const, aggregate: a.fn, field: a.field?.name ?? null };
    if (!a.groupBy) return JSON.stringify({ ...base, value: numeric(rows[0]?.value), count: Number(rows[0]?.count ?? 0) });
    const truncated = rows.length > TABLE_LIMITS.maxGroups;
    return JSON.stringify({
      ...base,
      groupBy: a.groupBy.name,
      groups: rows.slice(0, TABLE_LIMITS.maxGroups).map((r) => ({ key: r.key ?? null, value: numeric(r.value), count: Number(r.count) })),
      truncated,
    });
  }
  const [result, total] = plan.includeTotal
    ? await Promise.all([statements.run(list.main, values, db), totalOf(db, statements, list, values)])
    : [await statements.run(list.main, values, db), undefined];
  const raw = takeRows<Record<string, unknown>>(result);
  const more = raw.length > plan.limit;
  const rows = raw.slice(0, plan.limit);
  const last = rows.at(-1);
  // A cursor holds the last record's sort values: its fields are parsed only when a field is sorted on.
  const sortsOnFields = plan.sort.some((k) => k.field !== 'id');
  const nextCursor = more && last ? nextCursorFor(plan, { id: Number(last.id), fields: sortsOnFields ? rowFields(last) : {} }) : null;
  const paging = { limit: plan.limit, offset: plan.cursor ? 0 : plan.offset, ...(total !== undefined ? { total } : {}), nextCursor };
  if (plan.projection) return shownFieldsAnswer(rows, plan.projection, fieldJson!, plan.compact, paging);
  if (plan.compact) {
    const names = table.schema.fields.map((f) => f.name);
    return JSON.stringify({ ok: true, columns: ['id', ...names], rows: rows.map((r) => compactRow(r, rowFields(r), names)), ...paging });
  }
  // Every field, in the default shape: each record's fields as the database wrote them, never parsed
  // here (JSONB records: the same JSON as encoding the parsed fields, up to spacing; column tables:
  // the same bytes).
  const records = rows.map((r) => `{"id":"${Number(r.id)}","fields":${src.fieldsJson(r)}}`).join(',');
  return `{"ok":true,"records":[${records}],${JSON.stringify(paging).slice(1)}`;
}

/**
 * The answer of a page that shows the fields `names` (`fields=`, default or compact shape), each
 * field's JSON placed as the row carries it (`fieldJson`): the bytes JSON.stringify writes of the
 * parsed rows (`answerJson`, `columnAnswerJson`), without parsing them. A field a record lacks is left out of its
 * fields, or null in its compact row.
 */
function shownFieldsAnswer(
  rows: Record<string, unknown>[],
  names: readonly string[],
  fieldJson: NonNullable<PageColumns['fieldJson']>,
  compact: boolean,
  paging: Record<string, unknown>,
): string {
  const end = JSON.stringify(paging).slice(1);
  if (compact) {
    const out = rows.map((r) => {
      let row = `["${Number(r.id)}"`;
      for (const n of names) row += `,${fieldJson(r, n) ?? 'null'}`;
      return `${row}]`;
    });
    return `{"ok":true,"columns":${JSON.stringify(['id', ...names])},"rows":[${out.join(',')}],${end}`;
  }
  const keys = names.map((n) => `${JSON.stringify(n)}:`);
  const out = rows.map((r) => {
    const fields: string[] = [];
    for (let i = 0; i < names.length; i++) {
      const json = fieldJson(r, names[i]!);
      if (json !== undefined) fields.push(keys[i]! + json);
    }
    return `{"id":"${Number(r.id)}","fields":{${fields.join(',')}}}`;
  });
  return `{"ok":true,"records":[${out.join(',')}],${end}`;
}

/** A compact page's row: the record's id, then the value of each of `names` (null when absent). */
function compactRow(row: Record<string, unknown>, fields: Record<string, unknown>, names: readonly string[]): unknown[] {
  const out: unknown[] = [String(Number(row.id))];
  for (const n of names) out.push(fields[n] ?? null);
  return out;
}

/** min/max of text fields stay text; numbers arrive as numbers (float8) under both drivers. */
function numeric(v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint') return Number(v);
  return v;
}
