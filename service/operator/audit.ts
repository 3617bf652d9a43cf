import { and, desc, eq, lt, type SQL } from 'drizzle-orm';
import type { DbOrTx } from '../db/client.js';
import { newId } from '../kernel/ids.js';
import { auditLog } from '../db/schema/index.js';

export type AuditTargetKind = (typeof auditLog.$inferSelect)['targetKind'];

export interface AuditEntry {
  id: string;
  at: string;
  actor: string;
  action: string;
  targetKind: AuditTargetKind;
  target: string;
  reason: string;
  details: unknown;
}

/** Records one operator act, in the transaction that makes it (an act is never without its record, nor the reverse). */
export async function recordAudit(
  db: DbOrTx,
  entry: { at: Date; actor: string; action: string; targetKind: AuditTargetKind; target: string; reason: string; details?: unknown },
): Promise<AuditEntry> {
  const id = newId('audit');
  await db.insert(auditLog).values({ id, ...entry, details: entry.details ?? null });
  return { id, ...entry, at: entry.at.toISOString(), details: entry.details ?? null };
}

/** The record, newest first: at most `limit` entries, optionally of one target, before an entry's time (paging). */
export async function listAudit(db: DbOrTx, query: { limit: number; target?: string; before?: Date }): Promise<AuditEntry[]> {
  const where: SQL[] = [];
  if (query.target) where.push(eq(auditLog.target, query.target));
  if (query.before) where.push(lt(auditLog.at, query.before));
  const rows = await db
    .select()
    .from(auditLog)
    .where(where.length ? and(...where) : undefined)
    .orderBy(desc(auditLog.at), desc(auditLog.id))
    .limit(query.limit);
  return rows.map((r) => ({ ...r, at: r.at.toISOString() }));
}
