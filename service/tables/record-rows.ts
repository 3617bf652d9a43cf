import { type Placeholder, sql, type SQL } from 'drizzle-orm';
import type { TableRecord } from '../../shared/tables/schema.js';
import type { TableRow } from '../db/schema/tables.js';
import { AppError } from '../kernel/app-error.js';
import type { RecordSource } from './query.js';

/**
 * A record's row, as the statements of table-lists.ts (reads) and tables.ts (writes) return it,
 * and as the API answers it.
 */

export type RecordRow = { id: number; fields: Record<string, unknown>; createdAt: Date; updatedAt: Date };
/** A `table_records` row as a raw statement returns it (ids as text or numbers, times as text or dates by driver). */
export type RawRecordRow = { id: string | number; fields: Record<string, unknown>; created_at: Date | string; updated_at: Date | string };

export function recordRowOf(r: RawRecordRow): RecordRow {
  return { id: Number(r.id), fields: r.fields, createdAt: new Date(r.created_at), updatedAt: new Date(r.updated_at) };
}

export function toRecord(r: RecordRow): TableRecord {
  return { id: String(r.id), fields: r.fields, createdAt: r.createdAt.toISOString(), updatedAt: r.updatedAt.toISOString() };
}

/** Record ids are positive integers in text; anything else cannot exist (404 without a query). */
export function parseRecordId(id: string): number | null {
  if (!/^[1-9]\d{0,15}$/.test(id)) return null;
  const n = Number(id);
  return Number.isSafeInteger(n) ? n : null;
}

export function recordNotFound(recordId: string): AppError {
  return new AppError('not_found', `record ${recordId} not found`);
}

/** The times of the record a row of `recordByIdStatement` holds. */
export function recordTimesOf(table: Pick<TableRow, 'storage' | 'createdAt'>, row: Record<string, unknown>): { createdAt: Date; updatedAt: Date } {
  // Column storage keeps no per-record times: a dataset's records are as old as its load.
  if (table.storage === 'columns') return { createdAt: table.createdAt, updatedAt: table.createdAt };
  const { createdAt, updatedAt } = recordRowOf(row as RawRecordRow);
  return { createdAt, updatedAt };
}

/**
 * The select of one record by id from `src` (the table's, with its checks), in either storage (a
 * record's times only in `records`); `id` may be a placeholder, for a statement compiled once
 * (table-lists.ts).
 */
export function recordByIdStatement(table: Pick<TableRow, 'storage'>, src: RecordSource, id: number | Placeholder): SQL {
  const times = table.storage === 'columns' ? sql`` : sql`, r.created_at, r.updated_at`;
  const where = [src.scope, sql`r.id = ${id}`, src.guard].filter((c): c is SQL => c !== null);
  return sql`select ${src.selectList}${times} from ${src.from} where ${sql.join(where, sql` and `)}`;
}
