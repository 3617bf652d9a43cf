import type { Deps } from '../deps.js';
import { DevChainFacilitator } from './dev-chain/dev-facilitator.js';
import { reconcileOrphanedPayments } from './reconcile.js';

/**
 * Called when the service starts listening: starts the dev chain eagerly (so `npm start` says at once
 * whether payments work) and reconciles payments left between settlement and commit by a crash.
 * Never fails the start: without a chain, paid calls answer 503 and nothing is charged.
 */
export async function startPayments(deps: Deps): Promise<string> {
  const x = deps.config.x402;
  let line: string;
  const f = deps.facilitator;
  if (f instanceof DevChainFacilitator) {
    try {
      await f.start();
      line = `dev chain (anvil, chain 8453) at ${f.rpcUrl}, state kept in ${deps.config.dataDir}/dev-chain (balances survive restarts)${f.portNote ? ` (${f.portNote})` : ''}; test USDC via "npx svc-agent-host faucet <address> <usdc>"; recipient ${x.recipient}`;
    } catch (e) {
      return `UNAVAILABLE: the dev chain could not start (${(e as Error).message}); paid calls answer 503. Use SVC_X402_MODE=chain or remote, or fix anvil.`;
    }
  } else {
    line =
      x.mode === 'chain' ? `on-chain settlement via ${x.rpcUrl}; recipient ${x.recipient}` : `remote facilitator ${x.facilitatorUrl}; recipient ${x.recipient}`;
  }
  // A fresh dev chain knows nothing of earlier runs; reconciliation only means something on a real chain.
  if (x.mode !== 'dev') {
    void reconcileOrphanedPayments(deps).then(
      (r) => r.checked && deps.log.info('x402 reconcile at start', { ...r }),
      (e: Error) => deps.log.warn('x402 reconcile at start failed', { error: e.message }),
    );
  }
  return line;
}
