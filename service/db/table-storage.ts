import { sql } from 'drizzle-orm';
import type { TableRow } from './schema/tables.js';
import type { DbOrTx } from './client.js';
import { rowsOf } from './client.js';
import { dropColumnTable } from './column-storage.js';
import { dropRecordIdSequence } from './record-ids.js';

/**
 * What a Table keeps outside the rows a cascade deletes: a dataset's column table (storage `columns`,
 * column-storage.ts) or a Table's record id sequence (storage `records`, record-ids.ts). Every path
 * that deletes a Table drops it: deleteTable, promoteTable (the Table it replaces), deleteSite.
 */
export async function dropTableStorage(db: DbOrTx, table: Pick<TableRow, 'id' | 'storage'>): Promise<void> {
  if (table.storage === 'columns') await dropColumnTable(db, table.id);
  else await dropRecordIdSequence(db, table.id);
}

/** `dropTableStorage` for every Table of a site (before the site's rows are deleted). */
export async function dropTableStoragesOfSite(db: DbOrTx, siteId: string): Promise<void> {
  const rows = rowsOf<Pick<TableRow, 'id' | 'storage'>>(await db.execute(sql`select id, storage from tables where site_id = ${siteId}`));
  for (const r of rows) await dropTableStorage(db, r);
}
