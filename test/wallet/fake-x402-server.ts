import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { getAddress, isAddressEqual, verifyTypedData, type Address } from 'viem';

const USDC: Address = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';
const types = {
  TransferWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
} as const;

export interface FakeX402Options {
  recipient: Address;
  /** Atomic price the route really charges. */
  price: bigint;
}

/**
 * A small x402 v1 server (notes/x402.md §8 recipe: viem verifyTypedData, offline) standing in for the
 * service in wallet tests. It keeps balances: a payer's balance drops only when a payment settles, so
 * a test can prove no money moved. Knobs let a test make it misbehave (other recipient, network,
 * a higher price, refuse the payment, fail after it).
 */
export async function startFakeX402(opts: FakeX402Options) {
  const state = {
    price: opts.price,
    payTo: opts.recipient as string,
    network: 'base',
    maxTimeoutSeconds: 60,
    rejectPayments: false,
    failAfterPayment: false,
    /** The 402 body's x402Version (a v2 body, which a v1 payment request is not, when set to 2). */
    x402Version: 1,
    paymentHeadersSeen: 0,
    requests: 0,
    settled: [] as { from: string; value: bigint; nonce: string }[],
    balances: new Map<string, bigint>(),
  };
  const usedNonces = new Set<string>();
  const app = new Hono();
  app.get('/api/x402', (c) =>
    c.json({
      ok: true,
      service: 'fake',
      purpose: 'test',
      network: 'eip155:8453',
      recipient: opts.recipient,
      currency: 'USDC',
      pricingUpdatedAt: 0,
      payment: 'x402',
      endpoints: [],
    }),
  );
  app.post('/api/x402/apps', async (c) => {
    state.requests++;
    const header = c.req.header('x-payment');
    const requirements = {
      scheme: 'exact',
      network: state.network,
      maxAmountRequired: state.price.toString(),
      resource: new URL(c.req.url).toString(),
      description: 'create app',
      mimeType: 'application/json',
      payTo: state.payTo,
      maxTimeoutSeconds: state.maxTimeoutSeconds,
      asset: USDC,
      extra: { name: 'USD Coin', version: '2' },
    };
    const required = (error: string) => c.json({ x402Version: state.x402Version, error, accepts: [requirements] }, 402);
    if (!header) return required('X-PAYMENT header is required');
    state.paymentHeadersSeen++;
    if (state.rejectPayments) return required('insufficient_funds');
    const p = JSON.parse(Buffer.from(header, 'base64').toString()) as {
      network: string;
      payload: {
        signature: `0x${string}`;
        authorization: { from: Address; to: Address; value: string; validAfter: string; validBefore: string; nonce: `0x${string}` };
      };
    };
    const a = p.payload.authorization;
    const ok = await verifyTypedData({
      address: a.from,
      domain: { name: 'USD Coin', version: '2', chainId: 8453, verifyingContract: USDC },
      types,
      primaryType: 'TransferWithAuthorization',
      signature: p.payload.signature,
      message: { ...a, value: BigInt(a.value), validAfter: BigInt(a.validAfter), validBefore: BigInt(a.validBefore) },
    });
    const key = `${a.from.toLowerCase()}:${a.nonce}`;
    if (!ok || !isAddressEqual(a.to, state.payTo as Address) || BigInt(a.value) < state.price || usedNonces.has(key)) return required('invalid payment');
    const from = getAddress(a.from);
    const balance = state.balances.get(from) ?? 0n;
    if (balance < BigInt(a.value)) return required('insufficient_funds');
    if (state.failAfterPayment) return c.json({ ok: false, error: { code: 'internal', message: 'boom' } }, 500);
    usedNonces.add(key);
    state.balances.set(from, balance - BigInt(a.value));
    state.settled.push({ from, value: BigInt(a.value), nonce: a.nonce });
    const tx = `0x${state.settled.length.toString(16).padStart(64, '0')}`;
    c.header('X-PAYMENT-RESPONSE', Buffer.from(JSON.stringify({ success: true, transaction: tx, network: 'base', payer: from })).toString('base64'));
    return c.json({
      app: { appId: `app_${state.settled.length}`, status: 'created' },
      receipt: { receiptId: `rcpt_${state.settled.length}`, txHash: tx, price: String(a.value) },
    });
  });
  let server!: ServerType;
  await new Promise<void>((resolve) => {
    server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve());
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    state,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
      }),
  };
}
