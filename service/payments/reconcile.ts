import type { PaymentDeps } from './payment-deps.js';
import { actionByName } from '../../shared/agent-api/catalogue.js';
import { USDC_ADDRESS } from '../../shared/agent-api/network.js';
import type { Authorization } from '../../shared/agent-api/payment-requirements.js';
import { settlementTxOf, settleOnce } from './collect.js';
import type { VerifiedPayment } from './facilitator.js';
import { paymentDescription } from './payment-required.js';
import { deleteStaleClaim, isLegacySettling, markOrphaned, markSettled, markUnpaid, paymentsToReconcile, type PaymentRow } from './payment-store.js';

export interface ReconcileReport {
  checked: number;
  /** Settled on chain but the work never committed (earlier design): a replay of the same payment does the work unpaid. */
  orphaned: { payer: string; nonce: string; action: string; txHash: string }[];
  /** Work committed and now paid: settled by this run, or found settled on chain. */
  collected: number;
  /** Work committed, money not collected and no longer collectable (expired unused) or refused now: left `failed`. */
  unpaid: number;
  /** Claims whose work never committed (a crash mid-work), or expired unused legacy claims: released. */
  released: number;
  /** Cannot tell yet (the facilitator cannot answer): left for the next run. */
  undecided: number;
}

/** A claim is released only after this long untouched, whatever the grace: its work may still run. */
const WORK_GRACE_MS = 5 * 60_000;

/** The payment a row holds, as the facilitator settles it (the row keeps the signed authorization). */
function verifiedFromRow(deps: PaymentDeps, row: PaymentRow): VerifiedPayment {
  const payload = row.payload as { authorization: Authorization; signature: `0x${string}` };
  const action = actionByName(row.action);
  return {
    authorization: payload.authorization,
    signature: payload.signature,
    amount: BigInt(row.amount),
    payTo: deps.config.x402.recipient,
    asset: USDC_ADDRESS,
    maxTimeoutSeconds: deps.config.x402.maxTimeoutSeconds,
    resource: `${deps.config.baseUrl}/api/x402`,
    description: action ? paymentDescription(deps.config, action) : row.action,
  };
}

/**
 * Payments a crash, a stuck request or a refused settlement left behind, untouched for `graceMs`
 * (at start, and `svc payments reconcile`):
 * - `working` untouched for 5 minutes or more (claimed, the work never committed: it commits together
 *   with the move to `settling`): released. A work transaction still running would find its claim
 *   gone and roll back.
 * - `settling` / `failed` with committed work: the authorization is settled now while it is valid
 *   (a used one was ours: marked paid); expired and unused → stays `failed` (logged: the work was
 *   done unpaid).
 * - `settling` of the earlier design (no stored answer: the work was inside the settlement's
 *   transaction): used on chain → `orphaned` (a replay of the same payment does the work unpaid);
 *   unused and expired → released.
 */
export async function reconcileOrphanedPayments(deps: PaymentDeps, graceMs = 120_000): Promise<ReconcileReport> {
  const now = deps.clock.now();
  const rows = await paymentsToReconcile(deps.db, new Date(now.getTime() - graceMs), now);
  const report: ReconcileReport = { checked: rows.length, orphaned: [], collected: 0, unpaid: 0, released: 0, undecided: 0 };
  for (const row of rows) {
    const key = { payer: row.payer, nonce: row.nonce };
    if (row.status === 'working' || row.status === 'pending') {
      // A long work (a large dataset conversion) may still be running: claims get a longer grace.
      if (row.updatedAt.getTime() > now.getTime() - Math.max(graceMs, WORK_GRACE_MS)) {
        report.undecided++;
        continue;
      }
      await deleteStaleClaim(deps.db, key, row.status);
      report.released++;
      continue;
    }
    const expired = row.validBefore * 1000 <= now.getTime();
    if (isLegacySettling(row)) {
      const used = await authorizationUsed(deps, row);
      if (used === true) {
        const txHash = await settlementTxOf(deps, key, row.txHash);
        await markOrphaned(deps.db, key, txHash, now);
        report.orphaned.push({ payer: row.payer, nonce: row.nonce, action: row.action, txHash });
        deps.log.error('x402 payment settled without committed work (crash?): marked orphaned', { ...key, amount: row.amount, txHash });
      } else if (used === false && expired) {
        await deleteStaleClaim(deps.db, key, 'settling');
        report.released++;
      } else report.undecided++;
      continue;
    }
    if (expired) {
      // Past its window only a send that already happened can have moved money.
      const used = await authorizationUsed(deps, row);
      if (used === undefined) report.undecided++;
      else if (used) {
        await markSettled(deps.db, key, await settlementTxOf(deps, key, row.txHash), now);
        report.collected++;
      } else {
        await markUnpaid(deps.db, key, row.txHash, now);
        report.unpaid++;
        deps.log.error('x402 work committed but its payment expired uncollected', { ...key, action: row.action, amount: row.amount });
      }
      continue;
    }
    const outcome = await settleOnce(deps, key, verifiedFromRow(deps, row));
    if (outcome.settled) report.collected++;
    else report.unpaid++;
  }
  return report;
}

async function authorizationUsed(deps: PaymentDeps, row: PaymentRow): Promise<boolean | undefined> {
  try {
    return await deps.facilitator.authorizationUsed(row.payer, row.nonce);
  } catch (e) {
    deps.log.warn('x402 reconcile: chain not reachable', { error: (e as Error).message });
    return undefined;
  }
}
