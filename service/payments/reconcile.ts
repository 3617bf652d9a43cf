import { and, eq } from 'drizzle-orm';
import { x402Payments } from '../db/schema/index.js';
import type { Deps } from '../deps.js';
import type { ChainFacilitator } from './chain-facilitator.js';
import { staleSettlingPayments } from './payment-store.js';

export interface ReconcileReport {
  checked: number;
  /** Settled on chain but the work never committed: a replay of the same payment does the work unpaid. */
  orphaned: { payer: string; nonce: string; action: string; txHash: string }[];
  /** Never settled and can no longer be (expired): released. */
  released: number;
  /** Cannot tell yet (still valid and unused, or the facilitator cannot answer): left for the next run. */
  undecided: number;
}

/**
 * A crash between settlement and commit leaves an `x402_payments` row in `settling`. At start (and
 * via `svc payments reconcile`), rows older than `graceMs` are checked on chain with
 * `authorizationState(payer, nonce)`:
 * - used → the money moved, the work was rolled back: mark `orphaned` (with the settlement tx hash from
 *   the AuthorizationUsed event). The client's retry of the same payment for the same request then does
 *   the work without charging again; otherwise the operator refunds (the row lists payer and amount).
 * - unused and expired (validBefore passed) → nothing moved and nothing can: delete the row.
 * - unused and still valid, or unknown (remote facilitator) → left as is.
 */
export async function reconcileOrphanedPayments(deps: Deps, graceMs = 120_000): Promise<ReconcileReport> {
  const now = deps.clock.now();
  const rows = await staleSettlingPayments(deps.db, new Date(now.getTime() - graceMs));
  const report: ReconcileReport = { checked: rows.length, orphaned: [], released: 0, undecided: 0 };
  for (const row of rows) {
    const where = and(eq(x402Payments.payer, row.payer), eq(x402Payments.nonce, row.nonce), eq(x402Payments.status, 'settling'));
    let used: boolean | undefined;
    try {
      used = await deps.facilitator.authorizationUsed(row.payer, row.nonce);
    } catch (e) {
      deps.log.warn('x402 reconcile: chain not reachable', { error: (e as Error).message });
      used = undefined;
    }
    if (used === true) {
      const finder = deps.facilitator as Partial<Pick<ChainFacilitator, 'findSettlement'>>;
      const txHash = row.txHash ?? (await finder.findSettlement?.(row.payer, row.nonce).catch(() => undefined)) ?? '';
      await deps.db.update(x402Payments).set({ status: 'orphaned', txHash, updatedAt: now }).where(where);
      report.orphaned.push({ payer: row.payer, nonce: row.nonce, action: row.action, txHash });
      deps.log.error('x402 payment settled without committed work (crash?): marked orphaned', {
        payer: row.payer,
        nonce: row.nonce,
        amount: row.amount,
        txHash,
      });
    } else if (used === false && row.validBefore * 1000 <= now.getTime()) {
      await deps.db.delete(x402Payments).where(where);
      report.released++;
    } else {
      report.undecided++;
    }
  }
  return report;
}
