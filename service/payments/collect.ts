import type { PaymentDeps } from './payment-deps.js';
import type { ChainFacilitator } from './chain-facilitator.js';
import type { VerifiedPayment } from './facilitator.js';
import { markSettled, markUnpaid, type SettledPayment } from './payment-store.js';

/**
 * One settlement attempt for a `settling` row: committed when the money moved (also when a send's
 * outcome is learned from the chain), else `failed`. `stored`: the answer stored with the work, when
 * the caller holds it (markSettled then commits in one statement).
 */
export async function settleOnce(
  deps: PaymentDeps,
  key: { payer: string; nonce: string },
  verified: VerifiedPayment,
  stored?: Record<string, unknown>,
): Promise<{ settled: true; row: SettledPayment } | { settled: false; reason: string }> {
  let sent: string | null = null;
  let reason: string;
  try {
    const s = await deps.facilitator.settle(verified, (hash) => (sent = hash));
    if (s.success) return { settled: true, row: await markSettled(deps.db, key, s.transaction, deps.clock.now(), stored) };
    reason = s.errorReason ?? 'unknown';
  } catch (e) {
    reason = (e as Error).message;
  }
  // Refused, or thrown after a send: the chain says whether money moved (a used authorization was ours:
  // the work is committed, so it is paid for whoever sent it).
  const used = await deps.facilitator.authorizationUsed(key.payer, key.nonce).catch(() => undefined);
  if (used === true) return { settled: true, row: await markSettled(deps.db, key, await settlementTxOf(deps, key, sent), deps.clock.now(), stored) };
  await markUnpaid(deps.db, key, sent, deps.clock.now());
  deps.log.warn('x402 settlement failed after the work committed; the payment is owed', { payer: key.payer, nonce: key.nonce, reason, sent });
  return { settled: false, reason };
}

/** The transaction that used (payer, nonce): the one we know we sent, else found on chain (AuthorizationUsed event), else ''. */
export async function settlementTxOf(deps: PaymentDeps, key: { payer: string; nonce: string }, known: string | null): Promise<string> {
  if (known) return known;
  const finder = deps.facilitator as Partial<Pick<ChainFacilitator, 'findSettlement'>>;
  return (await finder.findSettlement?.(key.payer, key.nonce).catch(() => undefined)) ?? '';
}
