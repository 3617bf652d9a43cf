import { getAddress, isAddress } from 'viem';
import { atomicToUsdc, usdcToAtomic } from '../../shared/money.js';
import type { PaymentDeps } from './payment-deps.js';
import { AppError } from '../kernel/app-error.js';
import { isDevFacilitator } from './facilitator.js';

/** Dev-chain only: mints test USDC to an address. Refuses in chain/remote mode. */
export async function runFaucet(
  deps: PaymentDeps,
  address: string,
  usdc: string,
): Promise<{ address: string; minted: string; balance: string; txHash: string; rpcUrl: string }> {
  if (!isDevFacilitator(deps.facilitator)) {
    throw new AppError(
      'bad_request',
      `the faucet only works with the local dev chain (SVC_X402_MODE=dev); this service settles in "${deps.config.x402.mode}" mode with real USDC`,
    );
  }
  if (!isAddress(address, { strict: false })) throw new AppError('validation_failed', `not a 0x address: ${address}`);
  let atomic: bigint;
  try {
    atomic = usdcToAtomic(usdc);
  } catch (e) {
    throw new AppError('validation_failed', (e as Error).message);
  }
  if (atomic <= 0n || atomic > usdcToAtomic('1000000')) throw new AppError('validation_failed', 'amount must be more than 0 and at most 1000000 USDC');
  const to = getAddress(address);
  const txHash = await deps.facilitator.mint(to, atomic);
  const balance = await deps.facilitator.balanceOf(to);
  return { address: to, minted: atomicToUsdc(atomic), balance: atomicToUsdc(balance), txHash, rpcUrl: deps.facilitator.rpcUrl };
}
