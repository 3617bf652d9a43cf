import { and, eq, gt, inArray, isNull, lt, or, sql, type Placeholder, type SQL } from 'drizzle-orm';
import type { Receipt } from '../../shared/agent-api/receipt.js';
import { isUniqueViolation, type Db, type DbOrTx } from '../db/client.js';
import { preparedOn } from '../db/prepared.js';
import { x402Idempotency, x402Payments, x402Receipts } from '../db/schema/index.js';
import { receiptHashOf } from './receipts.js';

/**
 * Every state transition of an `x402_payments` row (the flow that drives them is
 * service/agent/paid-call.ts; recovery after a crash is reconcile.ts):
 *
 *   claimPayment → working ──markWorked──→ committed                 (free identity proof, or a redeemed payment)
 *                          ──markWorked──→ settling ─markSettled─→ committed
 *                                                   ─markUnpaid──→ failed ─markSettled─→ committed
 *   working ─releasePayment→ (gone)   the work failed or never committed: nothing moved
 *   orphaned (money moved, work never committed; rows of the earlier settle-inside-the-transaction
 *   design) ─claimOrphaned→ working ─markWorked→ committed
 */
export type PaymentRow = typeof x402Payments.$inferSelect;
export type PaymentStatus = PaymentRow['status'];
/** A payment row's key: the payer and its EIP-3009 nonce (lower case). */
export type PaymentKey = { payer: string; nonce: string };
type Key = PaymentKey;

const byKey = (k: Key, ...more: SQL[]) => and(eq(x402Payments.payer, k.payer), eq(x402Payments.nonce, k.nonce), ...more);
/** byKey with the key's values given at run time (statements built once: db/prepared.ts). */
const byKeyPlaceholder = (...more: SQL[]) => and(eq(x402Payments.payer, sql.placeholder('payer')), eq(x402Payments.nonce, sql.placeholder('nonce')), ...more);
/**
 * A placeholder where drizzle's `set()` types want the column's own type: at run time it binds a
 * placeholder as it binds a value (through the column's encoder), but its types do not say so.
 */
const boundLater = <T>(name: string) => sql.placeholder(name) as unknown as T;
const placeholders = <K extends string>(...names: K[]) => Object.fromEntries(names.map((n) => [n, sql.placeholder(n)])) as Record<K, Placeholder<K>>;

// Every paid call runs the statements below (findPayment, claimPayment, markWorked, markSettled).
const findPaymentStatement = preparedOn((db) => db.select().from(x402Payments).where(byKeyPlaceholder()).prepare('svc_find_payment'));

export async function findPayment(db: DbOrTx, payer: string, nonce: string): Promise<PaymentRow | undefined> {
  const [row] = await findPaymentStatement(db).execute({ payer, nonce });
  return row;
}

type ClaimRow = Pick<PaymentRow, 'payer' | 'nonce' | 'action' | 'requestHash' | 'amount' | 'validBefore' | 'payload'>;
const claimPaymentStatement = preparedOn((db) =>
  db
    .insert(x402Payments)
    .values({
      ...placeholders('payer', 'nonce', 'action', 'requestHash', 'amount', 'validBefore', 'payload'),
      status: 'working',
      createdAt: sql.placeholder('now'),
      updatedAt: sql.placeholder('now'),
    })
    .prepare('svc_claim_payment'),
);

/** Claims (payer, nonce) for one request before any work; false when a concurrent request claimed it first. */
export async function claimPayment(db: DbOrTx, row: ClaimRow, now: Date): Promise<boolean> {
  try {
    await claimPaymentStatement(db).execute({ ...row, now });
    return true;
  } catch (e) {
    if (isUniqueViolation(e)) return false;
    throw e;
  }
}

/** Moves a row from one status to another if it is still in the first; false when another request moved it first. */
async function moveStatus(db: DbOrTx, k: Key, from: PaymentStatus, to: PaymentStatus, now: Date): Promise<boolean> {
  const moved = await db
    .update(x402Payments)
    .set({ status: to, updatedAt: now })
    .where(byKey(k, eq(x402Payments.status, from)))
    .returning({ nonce: x402Payments.nonce });
  return moved.length === 1;
}

/** Takes an orphaned payment (settled, work never committed) to do its work now; false if another request took it. */
export const claimOrphaned = (db: DbOrTx, k: Key, now: Date) => moveStatus(db, k, 'orphaned', 'working', now);

/**
 * Inside the work's transaction: the work, its receipt and its answer become durable together, the
 * receipt inserted by the same statement that moves the payment row on. `settling` when money is
 * still to be collected, `committed` otherwise. Throws when the claim is gone (reconciled away as
 * stale while the work ran long), which rolls the work (and the receipt) back.
 */
export async function markWorked(
  tx: DbOrTx,
  k: Key,
  next: { status: 'settling' | 'committed'; txHash: string | null; response: Record<string, unknown>; responseStatus: number },
  receipt: Receipt,
  now: Date,
): Promise<void> {
  // A data-modifying WITH runs whether or not the statement reads it.
  const stored = tx.$with('stored_receipt').as(
    tx
      .insert(x402Receipts)
      .values({ ...receipt, payerNonce: `${k.payer}:${k.nonce}` })
      .returning({ receiptId: x402Receipts.receiptId }),
  );
  const moved = await tx
    .with(stored)
    .update(x402Payments)
    .set({ ...next, receiptId: receipt.receiptId, updatedAt: now })
    .where(byKey(k, eq(x402Payments.status, 'working')))
    .returning({ nonce: x402Payments.nonce });
  if (moved.length !== 1) throw new Error(`payment ${k.payer}:${k.nonce} is no longer claimed; the work is rolled back`);
}

/** The receipt of a settled call: the settlement's transaction hash, hashed again. */
export function settledReceipt(r: Receipt, txHash: string): Receipt {
  const { receiptHash: _old, ...rest } = r;
  const base = { ...rest, txHash, status: 'settled' };
  return { ...base, receiptHash: receiptHashOf(base) };
}

/** What answering a settled call needs of its payment row. */
export type SettledPayment = Pick<PaymentRow, 'payer' | 'txHash' | 'response' | 'responseStatus'>;

/** The stored answer once its money moved: its receipt gets the transaction (and a new hash). */
function settledResponse(stored: Record<string, unknown>, txHash: string): Record<string, unknown> {
  const receipt = stored.receipt as Receipt | undefined;
  return receipt ? { ...stored, receipt: settledReceipt(receipt, txHash) } : { ...stored };
}

/**
 * The payment row committed with its settled answer (if it is still owed) and its receipt settled, in
 * one statement (built once: db/prepared.ts); answers the stored status, nothing when the row was not
 * in `settling` or `failed` any more. A row without a receipt (none stored) has no receipt to move.
 */
const settleStatement = preparedOn((db) => {
  const moved = db.$with('moved').as(
    db
      .update(x402Payments)
      .set({ status: 'committed', txHash: boundLater<string>('txHash'), response: sql.placeholder('response'), updatedAt: boundLater<Date>('now') })
      .where(byKeyPlaceholder(inArray(x402Payments.status, ['settling', 'failed'])))
      .returning({ receiptId: x402Payments.receiptId, responseStatus: x402Payments.responseStatus }),
  );
  // The receipt row follows in the same statement (a data-modifying WITH runs whether or not it is read).
  const receiptMoved = db.$with('receipt_moved').as(
    db
      .update(x402Receipts)
      .set({ txHash: boundLater<string>('txHash'), status: 'settled', receiptHash: boundLater<string>('receiptHash') })
      .where(inArray(x402Receipts.receiptId, db.select({ id: moved.receiptId }).from(moved)))
      .returning({ receiptId: x402Receipts.receiptId }),
  );
  return db.with(moved, receiptMoved).select({ responseStatus: moved.responseStatus }).from(moved).prepare('svc_settle_payment');
});

/**
 * The money moved: the stored receipt and answer get the transaction hash and the row is committed,
 * in one statement (the payment row and its receipt, moved together). Idempotent: a second caller
 * finds it committed and gets the stored row. `stored` is the answer markWorked stored, when the
 * caller still holds it (the call that did the work); otherwise it is read from the row first.
 */
export async function markSettled(db: Db, k: Key, txHash: string, now: Date, stored?: Record<string, unknown>): Promise<SettledPayment> {
  let answer = stored;
  if (!answer) {
    const row = await existingPayment(db, k);
    if (row.status === 'committed') return row;
    answer = row.response as Record<string, unknown>;
  }
  const response = settledResponse(answer, txHash);
  const receiptHash = (response.receipt as Receipt | undefined)?.receiptHash ?? null;
  const [done] = await settleStatement(db).execute({ ...k, txHash, response, now, receiptHash });
  if (done) return { payer: k.payer, txHash, response, responseStatus: done.responseStatus };
  // Not in `settling` or `failed` any more: another caller settled it; its row says how.
  return existingPayment(db, k);
}

async function existingPayment(db: Db, k: Key): Promise<PaymentRow> {
  const row = await findPayment(db, k.payer, k.nonce);
  if (!row) throw new Error(`payment ${k.payer}:${k.nonce} not found`);
  return row;
}

/** Settlement refused or not confirmed: the work stands, the money is still owed (collected by a retry or reconcile). */
export async function markUnpaid(db: DbOrTx, k: Key, txHash: string | null, now: Date): Promise<void> {
  await db
    .update(x402Payments)
    .set({ status: 'failed', txHash, updatedAt: now })
    .where(byKey(k, inArray(x402Payments.status, ['settling', 'failed'])));
}

/** Takes a failed (unpaid) payment to settle it; false when another request or reconcile is at it. */
export const claimUnpaid = (db: DbOrTx, k: Key, now: Date) => moveStatus(db, k, 'failed', 'settling', now);

/** The work failed (or never committed): the claim goes, with its Idempotency-Key; nothing moved. */
export async function releasePayment(db: DbOrTx, k: Key, idempotencyKey?: string): Promise<void> {
  await db.delete(x402Payments).where(byKey(k, eq(x402Payments.status, 'working')));
  if (idempotencyKey) await deleteIdempotency(db, k.payer, idempotencyKey, k.nonce);
}

/** A redeemed orphaned payment whose work failed again: it stays redeemable. */
export async function reorphan(db: DbOrTx, k: Key, now: Date): Promise<void> {
  await moveStatus(db, k, 'working', 'orphaned', now);
}

export async function findIdempotency(db: DbOrTx, wallet: string, key: string) {
  const [row] = await db
    .select()
    .from(x402Idempotency)
    .where(and(eq(x402Idempotency.wallet, wallet), eq(x402Idempotency.key, key)));
  return row;
}

/** Claims an Idempotency-Key for (payer, nonce); false when a concurrent request holds it. */
export async function claimIdempotency(db: DbOrTx, row: typeof x402Idempotency.$inferInsert): Promise<boolean> {
  try {
    await db.insert(x402Idempotency).values(row);
    return true;
  } catch (e) {
    if (isUniqueViolation(e)) return false;
    throw e;
  }
}

export async function deleteIdempotency(db: DbOrTx, wallet: string, key: string, nonce?: string): Promise<void> {
  await db
    .delete(x402Idempotency)
    .where(and(eq(x402Idempotency.wallet, wallet), eq(x402Idempotency.key, key), ...(nonce ? [eq(x402Idempotency.nonce, nonce)] : [])));
}

/** States after which a waiting retry can answer: the work is durable (or the money moved without it). */
const answerable = (s: PaymentStatus) => s === 'committed' || s === 'orphaned' || s === 'failed';

/**
 * Waits while another request holds the same payment (working/settling): polls the row until it is
 * answerable, or gone (the other attempt failed and released it). Server-side wait, bounded.
 */
export async function waitForPayment(db: Db, payer: string, nonce: string, timeoutMs: number): Promise<PaymentRow | undefined | 'timeout'> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 10; ; delay = Math.min(delay * 2, 200)) {
    const row = await findPayment(db, payer, nonce);
    if (!row || answerable(row.status)) return row;
    if (Date.now() > deadline) return 'timeout';
    await new Promise((r) => setTimeout(r, delay));
  }
}

/**
 * Rows reconciliation looks at: claims and settlements untouched since `before` (a crashed or stuck
 * request), and unpaid calls whose authorization can still be collected (`validBefore` after `now`).
 */
export async function paymentsToReconcile(db: DbOrTx, before: Date, now: Date): Promise<PaymentRow[]> {
  return db
    .select()
    .from(x402Payments)
    .where(
      or(
        and(inArray(x402Payments.status, ['working', 'pending', 'settling']), lt(x402Payments.updatedAt, before)),
        and(eq(x402Payments.status, 'failed'), gt(x402Payments.validBefore, Math.floor(now.getTime() / 1000)), lt(x402Payments.updatedAt, before)),
      ),
    );
}

/** A settling row of the earlier design (work inside the settlement's transaction): it has no stored answer. */
export function isLegacySettling(row: PaymentRow): boolean {
  return row.status === 'settling' && row.response === null;
}

export async function markOrphaned(db: DbOrTx, k: Key, txHash: string, now: Date): Promise<void> {
  await db
    .update(x402Payments)
    .set({ status: 'orphaned', txHash, updatedAt: now })
    .where(byKey(k, eq(x402Payments.status, 'settling'), isNull(x402Payments.response)));
}

export async function deleteStaleClaim(db: DbOrTx, k: Key, status: PaymentStatus): Promise<void> {
  await db.delete(x402Payments).where(byKey(k, eq(x402Payments.status, status)));
}

/**
 * Forgets answered payments whose authorization expired before `before` (a replay of one is then
 * refused by the validity window instead of answered again), and Idempotency-Keys older than
 * `before`. Unpaid (`failed`) and `orphaned` rows are kept: they record money owed or to refund.
 */
export async function pruneAnsweredPayments(db: DbOrTx, before: Date): Promise<{ payments: number; idempotencyKeys: number }> {
  const payments = await db
    .delete(x402Payments)
    .where(and(eq(x402Payments.status, 'committed'), lt(x402Payments.validBefore, Math.floor(before.getTime() / 1000))))
    .returning({ nonce: x402Payments.nonce });
  const keys = await db.delete(x402Idempotency).where(lt(x402Idempotency.createdAt, before)).returning({ key: x402Idempotency.key });
  return { payments: payments.length, idempotencyKeys: keys.length };
}
