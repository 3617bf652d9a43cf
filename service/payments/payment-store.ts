import { and, eq, lt } from 'drizzle-orm';
import type { Db, DbOrTx } from '../db/client.js';
import { x402Idempotency, x402Payments } from '../db/schema/index.js';

export type PaymentRow = typeof x402Payments.$inferSelect;

export async function findPayment(db: DbOrTx, payer: string, nonce: string): Promise<PaymentRow | undefined> {
  const [row] = await db
    .select()
    .from(x402Payments)
    .where(and(eq(x402Payments.payer, payer), eq(x402Payments.nonce, nonce)));
  return row;
}

export async function deletePayment(db: DbOrTx, payer: string, nonce: string): Promise<void> {
  await db.delete(x402Payments).where(and(eq(x402Payments.payer, payer), eq(x402Payments.nonce, nonce)));
}

export async function findIdempotency(db: DbOrTx, wallet: string, key: string) {
  const [row] = await db
    .select()
    .from(x402Idempotency)
    .where(and(eq(x402Idempotency.wallet, wallet), eq(x402Idempotency.key, key)));
  return row;
}

export async function deleteIdempotency(db: DbOrTx, wallet: string, key: string, nonce?: string): Promise<void> {
  await db
    .delete(x402Idempotency)
    .where(and(eq(x402Idempotency.wallet, wallet), eq(x402Idempotency.key, key), ...(nonce ? [eq(x402Idempotency.nonce, nonce)] : [])));
}

const settled = (s: PaymentRow['status']) => s === 'committed' || s === 'orphaned';

/**
 * Waits while another request holds the same payment (pending/settling): polls the row until it is
 * committed/orphaned, or gone (the other attempt failed and released it). Server-side wait, bounded.
 */
export async function waitForPayment(db: Db, payer: string, nonce: string, timeoutMs: number): Promise<PaymentRow | undefined | 'timeout'> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 10; ; delay = Math.min(delay * 2, 200)) {
    const row = await findPayment(db, payer, nonce);
    if (!row || settled(row.status)) return row;
    if (Date.now() > deadline) return 'timeout';
    await new Promise((r) => setTimeout(r, delay));
  }
}

/** Settling rows last touched before `before` (candidates for reconciliation). */
export async function staleSettlingPayments(db: DbOrTx, before: Date): Promise<PaymentRow[]> {
  return db
    .select()
    .from(x402Payments)
    .where(and(eq(x402Payments.status, 'settling'), lt(x402Payments.updatedAt, before)));
}
