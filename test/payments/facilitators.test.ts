import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChainFacilitator } from '../../service/payments/chain-facilitator.js';
import { DevChainFacilitator } from '../../service/payments/dev-chain/dev-facilitator.js';
import { loadDevUsdcArtifact } from '../../service/payments/dev-chain/artifact.js';
import { compiledDevUsdc } from '../helpers/compile-dev-usdc.js';
import { loadConfig } from '../../service/config.js';
import { DEV_RECIPIENT, DEV_SETTLER_KEY, parseX402Config } from '../../service/payments/x402-config.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness } from '../helpers/harness.js';
import { html, jsonInit, payV1, payV2, signAuthorization } from './helpers.js';
import { USDC_ADDRESS } from '../../shared/agent-api/network.js';
import { createPublicClient, createWalletClient, defineChain, http } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';

it('the committed DevUSDC artifact is what DevUSDC.sol compiles to with the pinned solc', () => {
  const fresh = compiledDevUsdc();
  const committed = loadDevUsdcArtifact();
  expect(committed.sourceSha256).toBe(fresh.sourceSha256);
  expect(committed.deployedBytecode).toBe(fresh.deployedBytecode);
});

it('configuration: modes need their settings, prices are checked with integer math', () => {
  expect(parseX402Config({}).mode).toBe('dev');
  expect(parseX402Config({}).recipient).toBe(DEV_RECIPIENT);
  expect(() => parseX402Config({ SVC_X402_MODE: 'chain', SVC_X402_RECIPIENT: DEV_RECIPIENT })).toThrow(/SVC_X402_RPC_URL/);
  expect(() => parseX402Config({ SVC_X402_MODE: 'remote' })).toThrow(/SVC_X402_RECIPIENT/);
  expect(parseX402Config({}).rpcBatch).toBe(false);
  expect(loadConfig({ SVC_X402_RPC_BATCH: 'yes' }).x402.rpcBatch).toBe(true);
  expect(loadConfig({}).x402.rpcBatch).toBe(false);
  expect(() => parseX402Config({ SVC_X402_PRICES: '{"create_app_from_html":"0.0000001"}', SVC_X402_PRICES_UPDATED_AT: '1' })).toThrow(/at most 6 decimals/);
  expect(() => parseX402Config({ SVC_X402_PRICES: '{"list_apps":"0.01"}', SVC_X402_PRICES_UPDATED_AT: '1' })).toThrow(/free action/);
  expect(() => parseX402Config({ SVC_X402_PRICES: '{"create_app_from_html":"0.01"}' })).toThrow(/SVC_X402_PRICES_UPDATED_AT/);
  const c = parseX402Config({ SVC_X402_PRICES: '{"x402.create_app_from_html":"0.0079"}', SVC_X402_PRICES_UPDATED_AT: '2026-11-22T00:00:00Z' });
  expect(c.prices['x402.create_app_from_html']).toBe('0.0079');
  expect(c.pricesUpdatedAt).toBe(Date.UTC(2026, 10, 22));
});

/** A standard x402 facilitator (/verify, /settle, /supported) on loopback, settling on a dev chain. */
function facilitatorServer(chain: ChainFacilitator): Promise<{ url: string; server: ServerType; calls: string[] }> {
  const calls: string[] = [];
  const app = new Hono();
  const toPayment = (b: {
    paymentPayload: { payload: { authorization: never; signature: `0x${string}` } };
    paymentRequirements: { maxAmountRequired: string; payTo: string; asset: string };
  }) => ({
    authorization: b.paymentPayload.payload.authorization,
    signature: b.paymentPayload.payload.signature,
    amount: BigInt(b.paymentRequirements.maxAmountRequired),
    payTo: b.paymentRequirements.payTo,
    asset: b.paymentRequirements.asset,
    maxTimeoutSeconds: 300,
    resource: '',
    description: '',
  });
  app.get('/supported', async (c) => {
    calls.push('supported');
    return c.json(await chain.supported());
  });
  app.post('/verify', async (c) => {
    calls.push('verify');
    return c.json(await chain.verify(toPayment(await c.req.json())));
  });
  app.post('/settle', async (c) => {
    calls.push('settle');
    const r = await chain.settle(toPayment(await c.req.json()));
    return c.json({ success: r.success, transaction: r.transaction, network: 'base', errorReason: r.errorReason });
  });
  return new Promise((resolve) => {
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => {
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, calls });
    });
  });
}

describe.each(dbKinds())('chain and remote facilitators settle for real (%s)', (kind) => {
  let dev: DevChainFacilitator;
  let remote: { url: string; server: ServerType; calls: string[] };
  beforeAll(async () => {
    dev = new DevChainFacilitator();
    await dev.start();
    remote = await facilitatorServer(new ChainFacilitator({ rpcUrl: dev.rpcUrl, settlerKey: DEV_SETTLER_KEY }));
  });
  afterAll(async () => {
    remote?.server.close();
    await dev?.close();
  });

  it('SVC_X402_MODE=chain (RPC URL + settler key) and SVC_X402_MODE=remote (facilitator URL) both move exactly the price', async () => {
    const modes = [
      // The chain mode batches its RPC requests here; the remote facilitator's settler does not.
      [
        'chain',
        {
          SVC_X402_MODE: 'chain',
          SVC_X402_RPC_URL: dev.rpcUrl,
          SVC_X402_SETTLER_KEY: DEV_SETTLER_KEY,
          SVC_X402_RECIPIENT: DEV_RECIPIENT,
          SVC_X402_RPC_BATCH: '1',
        },
        payV1,
      ],
      ['remote', { SVC_X402_MODE: 'remote', SVC_X402_FACILITATOR_URL: remote.url, SVC_X402_RECIPIENT: DEV_RECIPIENT }, payV2],
    ] as const;
    // One service at a time (each on a database of its own).
    for (const [label, env, pay] of modes) {
      const h = await startHarness(kind, env);
      try {
        const payer = privateKeyToAccount(generatePrivateKey());
        await dev.mint(payer.address, 50_000n);
        const before = await dev.balanceOf(DEV_RECIPIENT);
        const res = await pay(payer)(`${h.url}/api/x402/apps`, jsonInit('POST', { name: `${label}-mode-${kind}`, html: html(label) }));
        expect(res.status, label).toBe(201);
        const body = await res.json();
        expect(body.receipt.txHash).toMatch(/^0x[0-9a-f]{64}$/);
        expect(await dev.balanceOf(payer.address)).toBe(50_000n - 7000n);
        expect(await dev.balanceOf(DEV_RECIPIENT)).toBe(before + 7000n);
      } finally {
        await h.close();
      }
    }
    expect(remote.calls).toEqual(['verify', 'settle']);
  });

  it('an action without a handler answers 503 before any payment', async () => {
    const { agentRoutes } = await import('../../service/agent/routes.js');
    const h = await startHarness(kind);
    try {
      const app = agentRoutes(h.deps, {});
      const res = await app.request('/api/x402/apps', jsonInit('POST', { name: 'nohandler', html: '<p>x</p>' }));
      expect(res.status).toBe(503);
      expect((await res.json()).error.code).toBe('service_unavailable');
    } finally {
      await h.close();
    }
  });
});

describe('two nodes settling with one settler key', () => {
  let dev: DevChainFacilitator;
  beforeAll(async () => {
    dev = new DevChainFacilitator();
    await dev.start();
  });
  afterAll(async () => dev?.close());

  it('concurrent settlements from both nodes all land (a send that lost the race for a nonce is sent again)', async () => {
    // Two ChainFacilitators are two service nodes: each serialises its own sends, neither knows the
    // other's, so both pick the same account nonce under load.
    const nodes = [0, 1].map(() => new ChainFacilitator({ rpcUrl: dev.rpcUrl, settlerKey: DEV_SETTLER_KEY }));
    const payer = privateKeyToAccount(generatePrivateKey());
    await dev.mint(payer.address, 1_000_000n);
    const before = await dev.balanceOf(DEV_RECIPIENT);
    const payments = await Promise.all(
      Array.from({ length: 12 }, async () => {
        const { authorization, signature } = await signAuthorization(payer, { to: DEV_RECIPIENT, value: 1000n });
        return { authorization, signature, amount: 1000n, payTo: DEV_RECIPIENT, asset: USDC_ADDRESS, maxTimeoutSeconds: 300, resource: '', description: '' };
      }),
    );
    const results = await Promise.all(payments.map((p, i) => nodes[i % 2]!.settle(p)));
    expect(results.map((r) => r.errorReason ?? 'ok')).toEqual(payments.map(() => 'ok'));
    expect(new Set(results.map((r) => r.transaction)).size).toBe(12);
    expect(await dev.balanceOf(DEV_RECIPIENT)).toBe(before + 12_000n);
    expect(await dev.balanceOf(payer.address)).toBe(1_000_000n - 12_000n);
  });

  it('a settlement whose pending transaction another sender replaced (same nonce) is not reported as settled; the same payment settles later, once', async () => {
    // Another node with this settler key sends with the same nonce and higher fees before the block
    // is mined: the chain runs that transaction instead. viem then answers with the replacement's
    // receipt, which says nothing of this payment. Automine is off so the order is fixed.
    const rpc = (method: string, params: unknown[] = []) =>
      fetch(dev.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
    // A short wait for a receipt after the nonce is spent: this one was replaced for certain.
    const node = new ChainFacilitator({ rpcUrl: dev.rpcUrl, settlerKey: DEV_SETTLER_KEY, receiptTimeoutMs: 30_000, replacedAfterMs: 300 });
    const payer = privateKeyToAccount(generatePrivateKey());
    await dev.mint(payer.address, 10_000n);
    const { authorization, signature } = await signAuthorization(payer, { to: DEV_RECIPIENT, value: 1000n });
    const payment = {
      authorization,
      signature,
      amount: 1000n,
      payTo: DEV_RECIPIENT,
      asset: USDC_ADDRESS,
      maxTimeoutSeconds: 300,
      resource: '',
      description: '',
    };
    const chain = defineChain({
      id: 8453,
      name: 'dev',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [dev.rpcUrl] } },
    });
    const settler = privateKeyToAccount(DEV_SETTLER_KEY);
    const reads = createPublicClient({ chain, transport: http(dev.rpcUrl) });
    const otherNode = createWalletClient({ account: settler, chain, transport: http(dev.rpcUrl) });
    const nonce = await reads.getTransactionCount({ address: settler.address, blockTag: 'latest' });
    await rpc('evm_setAutomine', [false]);
    try {
      let submitted!: () => void;
      const sent = new Promise<void>((r) => (submitted = r));
      const settling = node.settle(payment, () => submitted());
      await sent;
      const fees = await reads.estimateFeesPerGas();
      await otherNode.sendTransaction({
        to: settler.address,
        value: 0n,
        nonce,
        maxFeePerGas: fees.maxFeePerGas * 10n,
        maxPriorityFeePerGas: fees.maxFeePerGas * 5n,
      });
      await rpc('evm_mine');
      expect(await settling).toMatchObject({ success: false, errorReason: 'transaction_replaced' });
      expect(await dev.authorizationUsed(payer.address, authorization.nonce)).toBe(false);
      expect(await dev.balanceOf(payer.address)).toBe(10_000n);
    } finally {
      await rpc('evm_setAutomine', [true]);
    }
    expect(await node.settle(payment)).toMatchObject({ success: true });
    expect(await dev.balanceOf(payer.address)).toBe(9000n);
  }, 60_000);

  it('a settlement refused before it is sent takes no settler nonce: the next one lands at once, not after a gap', async () => {
    // The node counts the settler's nonces itself; a count moved on by a send that never happened
    // would leave every later settlement waiting for a transaction that never comes.
    const node = new ChainFacilitator({ rpcUrl: dev.rpcUrl, settlerKey: DEV_SETTLER_KEY, receiptTimeoutMs: 5_000 });
    const payer = privateKeyToAccount(generatePrivateKey());
    await dev.mint(payer.address, 10_000n);
    const payment = async (value: bigint) => {
      const { authorization, signature } = await signAuthorization(payer, { to: DEV_RECIPIENT, value });
      return { authorization, signature, amount: value, payTo: DEV_RECIPIENT, asset: USDC_ADDRESS, maxTimeoutSeconds: 300, resource: '', description: '' };
    };
    const once = await payment(1000n);
    expect((await node.settle(once)).success).toBe(true);
    expect(await node.settle(once)).toMatchObject({ success: false, errorReason: 'nonce_already_used' });
    expect(await node.settle(await payment(1_000_000n))).toMatchObject({ success: false, errorReason: 'insufficient_funds' });
    const next = await node.settle(await payment(2000n));
    expect(next).toMatchObject({ success: true });
    expect(await dev.balanceOf(payer.address)).toBe(10_000n - 3000n);
  });
});
