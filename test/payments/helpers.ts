import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { wrapFetchWithPayment as wrapV2, x402Client } from '@x402/fetch';
import { registerExactEvmScheme } from '@x402/evm/exact/client';
import { createHash } from 'node:crypto';
import { canonicalReceiptText, type Receipt } from '../../shared/agent-api/receipt.js';
import { isDevFacilitator, type DevFacilitator } from '../../service/payments/facilitator.js';
import type { Harness } from '../helpers/harness.js';
import { x402FetchV1 } from '../interop/clients.js';

// x402-fetch 1.x comes from the interop package (test/interop), installed on first use.
const wrapV1 = await x402FetchV1();

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

/** A paying JSON client for the service under test: `call(method, path, body?)` → `{status, body}`. */
export function paidCaller(harness: () => Harness, pay: () => typeof fetch) {
  // Lazy: the harness and the paying fetch are made in beforeAll, after the suite declares this.
  return async (method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> => {
    const res = await pay()(`${harness().url}${path}`, body === undefined ? { method } : jsonInit(method, body));
    return { status: res.status, body: await res.json() };
  };
}

export const html = (title: string) => `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1></body></html>`;

// ── hand-made payments (to test what the real clients never send) ─────────────────────────────────
import { randomBytes } from 'node:crypto';
import { BASE_CHAIN_ID, TRANSFER_WITH_AUTHORIZATION_TYPES, USDC_ADDRESS } from '../../shared/agent-api/network.js';
import type { Authorization } from '../../shared/agent-api/payment-requirements.js';

export interface SignOptions {
  to: string;
  value: bigint;
  validAfter?: bigint;
  validBefore?: bigint;
  nonce?: `0x${string}`;
  chainId?: number;
  name?: string;
  verifyingContract?: `0x${string}`;
}

export async function signAuthorization(account: PrivateKeyAccount, o: SignOptions): Promise<{ authorization: Authorization; signature: `0x${string}` }> {
  const now = BigInt(Math.floor(Date.now() / 1000));
  const message = {
    from: account.address,
    to: o.to as `0x${string}`,
    value: o.value,
    validAfter: o.validAfter ?? now - 600n,
    validBefore: o.validBefore ?? now + 120n,
    nonce: o.nonce ?? (`0x${randomBytes(32).toString('hex')}` as `0x${string}`),
  };
  const signature = await account.signTypedData({
    domain: { name: o.name ?? 'USD Coin', version: '2', chainId: o.chainId ?? BASE_CHAIN_ID, verifyingContract: o.verifyingContract ?? USDC_ADDRESS },
    types: TRANSFER_WITH_AUTHORIZATION_TYPES,
    primaryType: 'TransferWithAuthorization',
    message,
  });
  return {
    authorization: {
      from: message.from,
      to: message.to,
      value: message.value.toString(),
      validAfter: message.validAfter.toString(),
      validBefore: message.validBefore.toString(),
      nonce: message.nonce,
    },
    signature,
  };
}

export function xPaymentHeader(p: { authorization: Authorization; signature: string }, network = 'base'): Record<string, string> {
  const payload = { x402Version: 1, scheme: 'exact', network, payload: p };
  return { 'X-PAYMENT': Buffer.from(JSON.stringify(payload)).toString('base64') };
}

export function paymentSignatureHeader(
  p: { authorization: Authorization; signature: string },
  accepted: { amount: string; payTo: string; network?: string; asset?: string },
): Record<string, string> {
  const payload = {
    x402Version: 2,
    accepted: {
      scheme: 'exact',
      network: accepted.network ?? 'eip155:8453',
      amount: accepted.amount,
      asset: accepted.asset ?? USDC_ADDRESS,
      payTo: accepted.payTo,
      maxTimeoutSeconds: 300,
      extra: { name: 'USD Coin', version: '2' },
    },
    payload: p,
  };
  return { 'PAYMENT-SIGNATURE': Buffer.from(JSON.stringify(payload)).toString('base64') };
}
