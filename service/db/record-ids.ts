import { sql } from 'drizzle-orm';
import type { DbOrTx } from './client.js';
import { quotedTableId } from './column-storage.js';

/**
 * Record ids of the Tables whose records live in `table_records` (storage `records`: every hand-made
 * Table): each numbers its records 1, 2, 3… in insertion order from a sequence of its own,
 * `svc_record_ids."<table id>"` (migration 0006), made with the Table and dropped with it. An id is
 * never given again, not after a delete nor after a rolled-back insert (whose ids are skipped), and
 * says nothing about other Tables. A sequence, not a counter row: nextval holds no lock to the end of
 * the transaction, so concurrent inserts into one Table never wait for each other's commits.
 */
export const RECORD_IDS_SCHEMA = 'svc_record_ids';

/** The qualified, quoted name of a Table's record id sequence. */
export function recordIdSequence(tableId: string): string {
  return `${RECORD_IDS_SCHEMA}.${quotedTableId(tableId)}`;
}

export async function createRecordIdSequence(db: DbOrTx, tableId: string): Promise<void> {
  await db.execute(sql.raw(`create sequence ${recordIdSequence(tableId)}`));
}

export async function dropRecordIdSequence(db: DbOrTx, tableId: string): Promise<void> {
  await db.execute(sql.raw(`drop sequence if exists ${recordIdSequence(tableId)}`));
}
