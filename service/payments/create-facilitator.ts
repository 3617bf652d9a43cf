import path from 'node:path';
import type { Config } from '../kernel/config.js';
import type { Logger } from '../kernel/logger.js';
import { ChainFacilitator } from './chain-facilitator.js';
import { DevChainFacilitator } from './dev-chain/dev-facilitator.js';
import type { Facilitator } from './facilitator.js';
import { RemoteFacilitator } from './remote-facilitator.js';

/** The facilitator SVC_X402_MODE names. The dev chain starts lazily (first paid call, faucet, or serve). */
export function createFacilitator(config: Config, log?: Logger): Facilitator {
  const x = config.x402;
  if (x.mode === 'chain')
    return new ChainFacilitator({ rpcUrl: x.rpcUrl!, settlerKey: x.settlerKey!, rpcBatch: x.rpcBatch, erc6492Factories: x.erc6492Factories, log });
  if (x.mode === 'remote') return new RemoteFacilitator({ url: x.facilitatorUrl!, authorization: x.facilitatorAuth });
  // The chain's state lives in the data directory: test USDC balances and nonces survive restarts.
  return new DevChainFacilitator({
    anvilPath: x.anvilPath,
    log,
    port: x.devChainPort,
    statePath: path.join(config.dataDir, 'dev-chain', 'state.json'),
    erc6492Factories: x.erc6492Factories,
  });
}
