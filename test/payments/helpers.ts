import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { wrapFetchWithPayment as wrapV1 } from 'x402-fetch';
import { wrapFetchWithPayment as wrapV2, x402Client } from '@x402/fetch';
import { registerExactEvmScheme } from '@x402/evm/exact/client';
import { createHash } from 'node:crypto';
import { canonicalReceiptText, type Receipt } from '../../shared/agent-api/receipt.js';
import { isDevFacilitator, type DevFacilitator } from '../../service/payments/facilitator.js';
import type { Harness } from '../helpers/harness.js';

export function devChain(h: Harness): DevFacilitator {
  const f = h.deps.facilitator;
  if (!isDevFacilitator(f)) throw new Error('payment tests need SVC_X402_MODE=dev');
  return f;
}

/** A fresh wallet funded with `atomic` test USDC on the dev chain. */
export async function fundedWallet(h: Harness, atomic = 1_000_000n): Promise<PrivateKeyAccount> {
  const account = privateKeyToAccount(generatePrivateKey());
  if (atomic > 0n) await devChain(h).mint(account.address, atomic);
  return account;
}

/** x402-fetch@1.2.0 (v1 client), with a generous per-call cap. */
export function payV1(account: PrivateKeyAccount): typeof fetch {
  return wrapV1(fetch, account as never, 1_000_000n) as typeof fetch;
}

/** @x402/fetch (v2 client). */
export function payV2(account: PrivateKeyAccount): typeof fetch {
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: account as never });
  return wrapV2(fetch, client) as typeof fetch;
}

export function jsonInit(method: string, body?: unknown, headers: Record<string, string> = {}): RequestInit {
  return { method, headers: { 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body) };
}

export function recomputeReceiptHash(r: Receipt): string {
  const { receiptHash: _h, ...rest } = r;
  return createHash('sha256').update(canonicalReceiptText(rest), 'utf8').digest('hex');
}

export const html = (title: string) => `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1></body></html>`;
