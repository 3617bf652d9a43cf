import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { and, asc, count, eq, inArray, ne, sql, type SQL } from 'drizzle-orm';
import {
  TableSchemaSchema,
  TABLE_LIMITS,
  TABLE_METHODS,
  type TableMethod,
  type TableRecord,
  type TableSchema,
  type TableView,
} from '../../shared/tables/schema.js';
import type { Config } from '../kernel/config.js';
import type { Db, DbOrTx } from '../db/client.js';
import { countOf, isUniqueViolation, onlyRow, rowsOf } from '../db/client.js';
import { lockKey } from '../db/locks.js';
import { newId } from '../kernel/ids.js';
import { datasets, sites, tables } from '../db/schema/index.js';
import type { TableRow } from '../db/schema/tables.js';
import type { Deps } from '../deps.js';
import { AppError } from '../kernel/app-error.js';
import { validationError } from '../http/handle-error.js';
import { SLUG_PATTERN } from '../sites/slugs.js';
import type { SiteRow } from '../sites/sites.js';
import { createRecordIdSequence, recordIdSequence } from '../db/record-ids.js';
import { dropTableStorage } from '../db/table-storage.js';
import { dropTableFieldIndexes } from './field-indexes.js';
import { recordSource } from './query.js';
import { parseRecordId, type RawRecordRow, type RecordRow, recordRowOf, toRecord } from './record-rows.js';
import { slugFromName } from '../../shared/slug.js';
import { normaliseRecord, normaliseRecords, recordValidationError, type FieldIssue } from './records.js';
import { siteOwnerQuotas } from '../accounts/quotas.js';
import { readCounters, tableSubject } from '../db/counters.js';

export { dropOrphanFieldIndexes, indexTableFields } from './field-indexes.js';

/**
 * The transport-free Table domain: the Account API, the Agent API handlers, the Table API and the
 * datasets importer all call these. Each takes `deps` (or a db) explicitly, plus an optional
 * transaction to run in.
 */

export type { TableRow };
export type TableKind = TableRow['kind'];

export const WRITE_KEY_PREFIX = 'svc_tk_';

export interface CreateTableInput {
  name: string;
  slug?: string;
  requireReadKey?: boolean;
  /** `{fields:[{name,label?,type?,required?}]}`; validated here (400 naming the bad field). */
  schema: unknown;
  /** Enabled Table API methods; default all. Datasets are always GET only. */
  methods?: readonly TableMethod[];
  publicInsert?: boolean;
  kind?: TableKind;
  /** Where the records live (service/db/column-storage.ts); the datasets importer asks for `columns`. */
  storage?: TableRow['storage'];
}

export function hashWriteKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** Constant-time check of a presented write key against the stored hash. */
export function writeKeyMatches(table: Pick<TableRow, 'writeKeyHash'>, presented: string): boolean {
  const a = Buffer.from(hashWriteKey(presented), 'hex');
  const b = Buffer.from(table.writeKeyHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Parses a schema; a 400 names each bad field as `schema.fields.N.name`. */
export function parseTableSchema(input: unknown): TableSchema {
  const r = TableSchemaSchema.safeParse(input);
  if (!r.success) {
    const err = validationError(r.error, 'schema');
    const details = err.details as { issues: FieldIssue[] };
    throw new AppError('validation_failed', err.message, { issues: details.issues.map((i) => ({ ...i, field: `schema.${i.field}` })) });
  }
  return { fields: r.data.fields.map((f) => ({ name: f.name, label: f.label ?? f.name, type: f.type, ...(f.required ? { required: true } : {}) })) };
}

/** A Table's slug from its name: `My Table!` → `my-table`; empty → `table`. */
export const tableSlugFromName = (name: string): string => slugFromName(name, 'table');

function parseSlug(slug: string): string {
  const s = slug.trim().toLowerCase();
  if (!SLUG_PATTERN.test(s)) {
    throw new AppError('validation_failed', 'invalid slug: use 1–63 lower-case letters, digits and inner hyphens', {
      issues: [{ field: 'slug', message: 'use 1–63 lower-case letters, digits and inner hyphens' }],
    });
  }
  return s;
}

async function slugTaken(db: DbOrTx, siteId: string, slug: string): Promise<boolean> {
  const [row] = await db
    .select({ id: tables.id })
    .from(tables)
    .where(and(eq(tables.siteId, siteId), eq(tables.slug, slug)));
  return Boolean(row);
}

/** The public addresses of a table: on the site's host, and on the service host (path fallback). */
export function tableUrls(config: Config, siteSlug: string, tableSlug: string): { url: string; pathUrl: string } {
  const base = new URL(config.baseUrl);
  const port = base.port ? `:${base.port}` : '';
  return {
    url: `${base.protocol}//${siteSlug}.${config.sitesDomain}${port}/api/data/${siteSlug}/${tableSlug}`,
    pathUrl: `${config.baseUrl}/api/data/${siteSlug}/${tableSlug}`,
  };
}

export function toTableView(config: Config, site: Pick<SiteRow, 'slug'>, t: TableRow, recordCount?: number): TableView {
  return {
    id: t.id,
    siteId: t.siteId,
    slug: t.slug,
    name: t.name,
    kind: t.kind,
    ...tableUrls(config, site.slug, t.slug),
    requireReadKey: t.requireReadKey,
    publicInsert: t.publicInsert,
    methods: TABLE_METHODS.filter((m) => t.methods.includes(m)),
    schema: t.schema,
    ...(recordCount !== undefined ? { recordCount } : {}),
    createdAt: t.createdAt.toISOString(),
    updatedAt: t.updatedAt.toISOString(),
  };
}

/**
 * Creates a table (or a dataset's table) on `site` and returns it with its write key, the only
 * time the key is visible. Explicit slug taken → 409 slug_taken; a derived slug gets a suffix.
 */
export async function createTable(
  deps: Deps,
  site: Pick<SiteRow, 'id' | 'slug'>,
  input: CreateTableInput,
  db: DbOrTx = deps.db,
): Promise<{ table: TableRow; writeKey: string }> {
  const schema = parseTableSchema(input.schema);
  const name = input.name?.trim();
  if (!name) throw new AppError('validation_failed', 'invalid body: name: required', { issues: [{ field: 'name', message: 'required' }] });
  const kind = input.kind ?? 'table';
  // The count and the insert under one lock per site: concurrent creates cannot pass the limit together.
  return db.transaction(async (tx) => {
    await lockKey(tx, `tables:${site.id}`);
    const n = countOf(await tx.select({ n: count() }).from(tables).where(eq(tables.siteId, site.id)));
    const max = (await siteOwnerQuotas(deps.config, tx, site.id)).tablesPerSite;
    if (Number(n) >= max)
      throw new AppError('quota_exceeded', `table limit reached (${max} tables per site); delete a table first`, {
        limit: 'tablesPerSite',
        max,
        current: Number(n),
      });

    let slug: string;
    if (input.slug !== undefined && input.slug !== '') {
      slug = parseSlug(input.slug);
      if (await slugTaken(tx, site.id, slug)) throw new AppError('slug_taken', `the table name "${slug}" is taken in this site`, { slug });
    } else {
      const base = tableSlugFromName(name);
      slug = base;
      for (let i = 2; await slugTaken(tx, site.id, slug); i++) slug = `${base}-${i}`;
    }
    const methods = kind === 'dataset' ? (['GET'] as TableMethod[]) : [...new Set(input.methods ?? TABLE_METHODS)];
    const writeKey = `${WRITE_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
    const now = deps.clock.now();
    try {
      const table = onlyRow(
        await tx
          .insert(tables)
          .values({
            id: newId('tbl'),
            siteId: site.id,
            slug,
            name,
            kind,
            storage: input.storage ?? 'records',
            schema,
            requireReadKey: input.requireReadKey ?? false,
            writeKeyHash: hashWriteKey(writeKey),
            methods,
            publicInsert: kind === 'dataset' ? false : (input.publicInsert ?? false),
            createdAt: now,
            updatedAt: now,
          })
          .returning(),
        'insert the table',
      );
      if (table.storage === 'records') await createRecordIdSequence(tx, table.id);
      return { table, writeKey };
    } catch (e) {
      if (isUniqueViolation(e)) throw new AppError('slug_taken', `the table name "${slug}" is taken in this site`, { slug });
      throw e;
    }
  });
}

/** The site and table for a Table API address; 404 when either is missing. */
export async function getTableBySlugs(deps: Deps, siteSlug: string, tableSlug: string, db: DbOrTx = deps.db): Promise<{ site: SiteRow; table: TableRow }> {
  const s = siteSlug.toLowerCase();
  const t = tableSlug.toLowerCase();
  if (!SLUG_PATTERN.test(s) || !SLUG_PATTERN.test(t)) throw new AppError('not_found', `table ${siteSlug}/${tableSlug} not found`);
  const [row] = await db
    .select({ site: sites, table: tables })
    .from(tables)
    .innerJoin(sites, eq(sites.id, tables.siteId))
    .where(and(eq(sites.slug, s), eq(tables.slug, t)));
  if (!row) throw new AppError('not_found', `table ${siteSlug}/${tableSlug} not found`);
  return row;
}

/** A table by id with its site (Agent API: `/api/x402/tables/:tableId/records`). */
export async function getTableById(deps: Deps, tableId: string, db: DbOrTx = deps.db): Promise<{ site: SiteRow; table: TableRow } | null> {
  const [row] = await db.select({ site: sites, table: tables }).from(tables).innerJoin(sites, eq(sites.id, tables.siteId)).where(eq(tables.id, tableId));
  return row ?? null;
}

export async function listSiteTables(deps: Deps, site: Pick<SiteRow, 'id'>, db: DbOrTx = deps.db, kind?: TableKind): Promise<TableRow[]> {
  return db
    .select()
    .from(tables)
    .where(kind ? and(eq(tables.siteId, site.id), eq(tables.kind, kind)) : eq(tables.siteId, site.id))
    .orderBy(asc(tables.createdAt), asc(tables.id));
}

/** Exact record counts of the given tables: the kept counts of `records` storage (db/counters.ts), a dataset's count kept by its row. */
export async function recordCounts(db: DbOrTx, tableIds: string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>(tableIds.map((id) => [id, 0]));
  if (tableIds.length === 0) return out;
  const [kept, loaded] = await Promise.all([
    readCounters(db, tableIds.map(tableSubject)),
    db
      .select({ tableId: datasets.tableId, n: datasets.recordCount })
      .from(datasets)
      .innerJoin(tables, eq(tables.id, datasets.tableId))
      .where(and(inArray(datasets.tableId, tableIds), eq(tables.storage, 'columns'))),
  ]);
  for (const id of tableIds) out.set(id, kept.get(tableSubject(id))?.records ?? 0);
  for (const r of loaded) out.set(r.tableId, (out.get(r.tableId) ?? 0) + r.n);
  return out;
}

/** Deletes a table: its row (and records, by cascade), field indexes, and its column storage or record id sequence. */
export async function deleteTable(deps: Deps, table: Pick<TableRow, 'id' | 'schema' | 'storage'>, db: DbOrTx = deps.db): Promise<void> {
  await dropTableFieldIndexes(db, table);
  await dropTableStorage(db, table);
  await db.delete(tables).where(eq(tables.id, table.id));
}

/**
 * Gives `table` the slug `slug` in its site, deleting whichever other table held it, in one
 * transaction (datasets' replaceExisting: load into a new table, then swap atomically).
 */
export async function promoteTable(deps: Deps, table: Pick<TableRow, 'id' | 'siteId'>, slug: string, db: DbOrTx = deps.db): Promise<TableRow> {
  const s = parseSlug(slug);
  const swap = async (tx: DbOrTx) => {
    const replaced = await tx
      .delete(tables)
      .where(and(eq(tables.siteId, table.siteId), eq(tables.slug, s), ne(tables.id, table.id)))
      .returning();
    for (const old of replaced) {
      await dropTableFieldIndexes(tx, old);
      await dropTableStorage(tx, old);
    }
    const [row] = await tx.update(tables).set({ slug: s, updatedAt: deps.clock.now() }).where(eq(tables.id, table.id)).returning();
    if (!row) throw new AppError('not_found', `table ${table.id} not found`);
    return row;
  };
  // On the bare database, make the swap its own transaction; inside the caller's, join it.
  return db === deps.db ? (db as Db).transaction((tx) => swap(tx)) : swap(db);
}

// ---------------------------------------------------------------------------------------------
// Records

/**
 * Validates every record against the schema, then inserts them in one statement: all or nothing.
 * At most TABLE_LIMITS.maxBatch records per call (the bulk path below has no such cap).
 */
export async function insertRecords(
  deps: Deps,
  table: Pick<TableRow, 'id' | 'schema'>,
  records: unknown[],
  db: DbOrTx = deps.db,
  guard?: SQL,
): Promise<TableRecord[]> {
  if (!Array.isArray(records) || records.length === 0) {
    throw new AppError('validation_failed', 'invalid body: records: give at least one record', {
      issues: [{ field: 'records', message: 'give at least one record' }],
    });
  }
  if (records.length > TABLE_LIMITS.maxBatch) {
    throw new AppError('payload_too_large', `at most ${TABLE_LIMITS.maxBatch} records per call (got ${records.length}); split the batch`, {
      max: TABLE_LIMITS.maxBatch,
      got: records.length,
    });
  }
  const values = normaliseRecords(table.schema, records);
  const rows = await insertNumbered(db, table.id, values, deps.clock.now(), guard);
  return rows.map(toRecord);
}

/**
 * The ONE statement that inserts `values` (normalised fields) as the Table's next records, numbered
 * in their order from the Table's sequence (service/db/record-ids.ts). The values travel as one JSON
 * parameter. `now` null: the database's time and no rows back (the bulk path). `guard`: the Table
 * API's check that the table row it authorized against is still current (table-rows.ts).
 */
export function insertRecordsStatement(tableId: string, values: Record<string, unknown>[], now: Date | null, guard?: SQL): SQL {
  const at = now === null ? sql`now()` : sql`${now.toISOString()}::timestamptz`;
  return sql`
    insert into table_records (table_id, id, fields, created_at, updated_at)
    select ${tableId}, nextval(${recordIdSequence(tableId)}::regclass), e.value, ${at}, ${at}
    from (select value, ord from jsonb_array_elements(${JSON.stringify(values)}::jsonb) with ordinality as a(value, ord) order by ord) e
    ${guard ? sql`where ${guard}` : sql``}
    ${now === null ? sql`` : sql`returning id, fields, created_at, updated_at`}`;
}

async function insertNumbered(db: DbOrTx, tableId: string, values: Record<string, unknown>[], now: Date | null, guard?: SQL): Promise<RecordRow[]> {
  return rowsOf<RawRecordRow>(await db.execute(insertRecordsStatement(tableId, values, now, guard)))
    .map(recordRowOf)
    .sort((a, b) => a.id - b.id);
}

export interface BulkInsertOptions {
  /** Validate and normalise each row against this schema (400 naming row and field; nothing of this call's batches is kept if the caller's transaction rolls back). */
  schema?: TableSchema;
  /** Rows per INSERT statement (default 2000). */
  batchSize?: number;
}

/**
 * The fast path for large loads (datasets: a million rows). Each batch is ONE statement with ONE
 * parameter, a JSON array expanded server-side by jsonb_array_elements, so the cost is parsing,
 * not round trips or parameter limits. Run it in a transaction to make the load all-or-nothing.
 * Returns the number of rows inserted.
 */
export async function bulkInsertRecords(
  db: DbOrTx,
  tableId: string,
  rows: Iterable<Record<string, unknown>> | AsyncIterable<Record<string, unknown>>,
  options: BulkInsertOptions = {},
): Promise<number> {
  const batchSize = Math.max(1, options.batchSize ?? 2000);
  let batch: Record<string, unknown>[] = [];
  let total = 0;
  const issues: FieldIssue[] = [];
  const flush = async () => {
    if (batch.length === 0) return;
    // A 64 MB GIN pending list for this transaction: fewer, larger merges into the GIN index made
    // million-row loads ~1.8x faster here. Set per batch so it also holds outside a transaction.
    await db.execute(sql`select set_config('gin_pending_list_limit', '65536', true)`);
    await insertNumbered(db, tableId, batch, null);
    total += batch.length;
    batch = [];
  };
  let index = 0;
  for await (const row of rows as AsyncIterable<Record<string, unknown>>) {
    const fields = options.schema ? normaliseRecord(options.schema, row, 'full', `rows.${index}.`, issues) : row;
    if (issues.length) throw recordValidationError(issues, 'rows');
    batch.push(fields);
    index++;
    if (batch.length >= batchSize) await flush();
  }
  await flush();
  // Merge what is still pending now, so that readers do not scan a large pending list.
  if (total > 0) await db.execute(sql`select gin_clean_pending_list('table_records_fields_gin_idx'::regclass)`);
  return total;
}

/** PATCH: changes the given fields, keeps the others (null clears a field). */
export async function updateRecord(
  deps: Deps,
  table: Pick<TableRow, 'id' | 'schema'>,
  recordId: string,
  fields: unknown,
  db: DbOrTx = deps.db,
  guard?: SQL,
): Promise<TableRecord> {
  const issues: FieldIssue[] = [];
  const patch = normaliseRecord(table.schema, fields, 'partial', 'fields.', issues);
  if (issues.length) throw recordValidationError(issues, 'fields');
  return setRecordFields(deps, table, recordId, 'merge', patch, db, guard);
}

/** PUT: the record becomes exactly `record` (fields left out are removed; required ones checked). */
export async function replaceRecord(
  deps: Deps,
  table: Pick<TableRow, 'id' | 'schema'>,
  recordId: string,
  record: unknown,
  db: DbOrTx = deps.db,
  guard?: SQL,
): Promise<TableRecord> {
  const issues: FieldIssue[] = [];
  const fields = normaliseRecord(table.schema, record, 'full', 'record.', issues);
  if (issues.length) throw recordValidationError(issues, 'record');
  return setRecordFields(deps, table, recordId, 'replace', fields, db, guard);
}

/** Sets one record's fields; 404 when the id is not this table's. */
async function setRecordFields(
  deps: Deps,
  table: Pick<TableRow, 'id'>,
  recordId: string,
  how: 'merge' | 'replace',
  fields: Record<string, unknown>,
  db: DbOrTx,
  guard?: SQL,
): Promise<TableRecord> {
  const id = parseRecordId(recordId);
  const [row] = id === null ? [] : rowsOf<RawRecordRow>(await db.execute(setRecordFieldsStatement(table.id, id, how, fields, deps.clock.now(), guard)));
  if (!row) throw new AppError('not_found', `record ${recordId} not found`);
  return toRecord(recordRowOf(row));
}

/** The update of one record's fields, merged into (PATCH) or replacing (PUT) what it holds, returning the record. */
export function setRecordFieldsStatement(tableId: string, id: number, how: 'merge' | 'replace', fields: Record<string, unknown>, now: Date, guard?: SQL): SQL {
  const value = how === 'merge' ? sql`fields || ${JSON.stringify(fields)}::jsonb` : sql`${JSON.stringify(fields)}::jsonb`;
  return sql`
    update table_records set fields = ${value}, updated_at = ${now.toISOString()}::timestamptz
    where table_id = ${tableId} and id = ${id}${guard ? sql` and ${guard}` : sql``}
    returning id, fields, created_at, updated_at`;
}

export async function deleteRecord(table: Pick<TableRow, 'id'>, recordId: string, db: DbOrTx, guard?: SQL): Promise<void> {
  const id = parseRecordId(recordId);
  const deleted = id === null ? [] : rowsOf(await db.execute(deleteRecordStatement(table.id, id, guard)));
  if (deleted.length === 0) throw new AppError('not_found', `record ${recordId} not found`);
}

export function deleteRecordStatement(tableId: string, id: number, guard?: SQL): SQL {
  return sql`delete from table_records where table_id = ${tableId} and id = ${id}${guard ? sql` and ${guard}` : sql``} returning id`;
}

/** Number of records of a table, exact. */
export async function countRecords(db: DbOrTx, table: Pick<TableRow, 'id' | 'storage' | 'schema'>): Promise<number> {
  const src = recordSource(table);
  const r = rowsOf<{ n: string | number }>(await db.execute(sql`select count(*) as n from ${src.from}${src.scope ? sql` where ${src.scope}` : sql``}`));
  return Number(r[0]?.n ?? 0);
}
