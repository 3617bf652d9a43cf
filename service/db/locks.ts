import { sql } from 'drizzle-orm';
import type { DbOrTx } from './client.js';

/**
 * Takes a transaction-scoped PostgreSQL advisory lock on `key` (hashed to 64 bits): every other
 * transaction taking the same key waits until this one ends, on any node sharing the database.
 * Call it inside a transaction; outside one it would be released at once.
 */
export async function lockKey(tx: DbOrTx, key: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${key}, 0))`);
}
