import type { AgentAction } from '../../shared/agent-api/action.js';
import { usdcToAtomic } from '../../shared/money.js';
import type { Config } from '../kernel/config.js';

export interface ActionPrice {
  /** Decimal USDC ("0.007"). */
  price: string;
  /** Atomic units (6 decimals), integer math only. */
  amount: bigint;
  updatedAt: number;
}

/** The deployment's price of an action: SVC_X402_PRICES override, else the catalogue default. */
export function priceOf(config: Config, action: AgentAction): ActionPrice {
  const price = config.x402.prices[action.name] ?? action.price;
  return { price, amount: usdcToAtomic(price), updatedAt: config.x402.pricesUpdatedAt };
}
