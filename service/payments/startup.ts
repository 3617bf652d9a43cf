import { svcCommand } from '../kernel/cli-command.js';
import type { PaymentDeps } from './payment-deps.js';
import { DevChainFacilitator } from './dev-chain/dev-facilitator.js';
import { reconcileOrphanedPayments } from './reconcile.js';

/** How often a node looks for payments to collect or release (unpaid calls, claims a crash left). */
const RECONCILE_EVERY_MS = 60_000;

/**
 * Called when the service starts listening: starts the dev chain eagerly (so `npm start` says at once
 * whether payments work), reconciles payments a crash or a refused settlement left behind, and keeps
 * doing so every minute (an unpaid call's authorization can be collected only while it is valid).
 * Old payment records are forgotten by the housekeeping (housekeeping/housekeeping.ts).
 * Never fails the start: without a chain, paid calls answer 503 and nothing is charged.
 */
export async function startPayments(deps: PaymentDeps): Promise<{ line: string; stop(): void }> {
  const x = deps.config.x402;
  let line: string;
  const f = deps.facilitator;
  if (f instanceof DevChainFacilitator) {
    try {
      await f.start();
      line = `dev chain (anvil, chain 8453) at ${f.rpcUrl}, state kept in ${deps.config.dataDir}/dev-chain (balances survive restarts)${f.portNote ? ` (${f.portNote})` : ''}; test USDC via "${svcCommand('faucet <address> <usdc>')}"; recipient ${x.recipient}`;
    } catch (e) {
      return {
        line: `UNAVAILABLE: the dev chain could not start (${(e as Error).message}); paid calls answer 503. Use SVC_X402_MODE=chain or remote, or fix anvil.`,
        stop: () => {},
      };
    }
  } else {
    line =
      x.mode === 'chain' ? `on-chain settlement via ${x.rpcUrl}; recipient ${x.recipient}` : `remote facilitator ${x.facilitatorUrl}; recipient ${x.recipient}`;
  }
  let running = false;
  const reconcile = (when: string) => {
    if (running) return;
    running = true;
    void reconcileOrphanedPayments(deps)
      .then(
        (r) => r.checked && deps.log.info(`x402 reconcile ${when}`, { ...r }),
        (e: Error) => deps.log.warn(`x402 reconcile ${when} failed`, { error: e.message }),
      )
      .finally(() => (running = false));
  };
  reconcile('at start');
  const timer = setInterval(() => reconcile('(periodic)'), RECONCILE_EVERY_MS);
  timer.unref();
  return { line, stop: () => clearInterval(timer) };
}
