import { createHash } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { FIELD_NAME_PATTERN, type FieldType, type TableSchema } from '../../shared/tables/schema.js';
import type { DbOrTx } from '../db/client.js';
import { rowsOf } from '../db/client.js';

/**
 * Per-table field indexes for big tables (datasets): partial expression indexes on table_records,
 * `WHERE table_id = '<id>'`, over exactly the typed expressions the query compiler emits, so a
 * sort or range filter on that field walks an index and stops after `limit` rows instead of
 * fetching every matching row. They cost DDL on the shared relation, so they are opt-in: the
 * datasets importer creates them after a load; small tables do without.
 */

export const MAX_INDEXED_FIELDS = 8;
const PREFIX = 'trf_';
const ORDER: FieldType[] = ['number', 'integer', 'datetime', 'date', 'string', 'boolean'];

export function fieldIndexName(tableId: string, field: string): string {
  return `${PREFIX}${createHash('sha256').update(`${tableId}\0${field}`).digest('hex').slice(0, 40)}`;
}

/** The indexed expression: must stay identical to `fieldExpr` in query.ts (without the alias). */
function indexExpression(name: string, type: FieldType): string {
  const text = `(fields->>'${name}')`;
  if (type === 'number' || type === 'integer') return `(${text}::float8)`;
  if (type === 'boolean') return `(${text}::boolean)`;
  return `(${text} collate "C")`;
}

function quoteLiteral(s: string): string {
  if (!/^[A-Za-z0-9_-]+$/.test(s)) throw new Error(`unsafe table id ${s}`);
  return `'${s}'`;
}

/**
 * Creates the field indexes of a table (default: its first MAX_INDEXED_FIELDS orderable fields,
 * numbers and dates first). `concurrently` (default true) builds without blocking writes to other
 * tables, but must run outside a transaction. Idempotent. Returns the fields indexed.
 */
export async function indexTableFields(
  db: DbOrTx,
  table: { id: string; schema: TableSchema },
  options: { fields?: string[]; concurrently?: boolean } = {},
): Promise<string[]> {
  const candidates = table.schema.fields
    .filter((f) => f.type !== 'json' && (!options.fields || options.fields.includes(f.name)))
    .sort((a, b) => ORDER.indexOf(a.type) - ORDER.indexOf(b.type))
    .slice(0, MAX_INDEXED_FIELDS);
  const concurrently = options.concurrently ?? true;
  for (const f of candidates) {
    if (!FIELD_NAME_PATTERN.test(f.name)) continue;
    await db.execute(
      sql.raw(
        `create index ${concurrently ? 'concurrently ' : ''}if not exists ${fieldIndexName(table.id, f.name)} on table_records (${indexExpression(f.name, f.type)}) where table_id = ${quoteLiteral(table.id)}`,
      ),
    );
  }
  return candidates.map((f) => f.name);
}

/** Drops the field indexes of one table (before or with deleting it). */
export async function dropTableFieldIndexes(db: DbOrTx, table: { id: string; schema: TableSchema }): Promise<void> {
  for (const f of table.schema.fields) {
    if (FIELD_NAME_PATTERN.test(f.name)) await db.execute(sql.raw(`drop index if exists ${fieldIndexName(table.id, f.name)}`));
  }
}

/**
 * Drops field indexes whose table is gone (a site deletion cascades past dropTableFieldIndexes).
 * Cheap: reads the catalogue; run it before creating new field indexes.
 */
export async function dropOrphanFieldIndexes(db: DbOrTx): Promise<number> {
  const rows = rowsOf<{ indexname: string; indexdef: string }>(
    await db.execute(sql`select indexname, indexdef from pg_indexes where tablename = 'table_records' and indexname like ${`${PREFIX}%`}`),
  );
  let dropped = 0;
  for (const r of rows) {
    const m = /table_id = '([^']+)'/.exec(r.indexdef);
    if (!m) continue;
    const live = rowsOf(await db.execute(sql`select 1 from tables where id = ${m[1]}`));
    if (live.length === 0) {
      await db.execute(sql.raw(`drop index if exists ${r.indexname}`));
      dropped++;
    }
  }
  return dropped;
}
