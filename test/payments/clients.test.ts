import { createPublicClient, http } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_RECIPIENT } from '../../service/payments/x402-config.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { devChain, fundedWallet, html, jsonInit, payV1, payV2, recomputeReceiptHash } from './helpers.js';

describe.each(dbKinds())('real x402 clients pay the Agent API on the dev chain (%s)', (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(kind);
  });
  afterAll(async () => h?.close());

  for (const [label, pay] of [
    ['x402-fetch@1.2.0 (v1)', payV1],
    ['@x402/fetch (v2)', payV2],
  ] as const) {
    it(`${label} pays 0.007 USDC and creates an app that is then served`, async () => {
      const payer = await fundedWallet(h, 1_000_000n);
      const chain = devChain(h);
      const before = { payer: await chain.balanceOf(payer.address), recipient: await chain.balanceOf(DEV_RECIPIENT) };
      const name = `paid-${label.startsWith('x402-fetch') ? 'v1' : 'v2'}-${kind}`;
      const res = await pay(payer)(`${h.url}/api/x402/apps`, jsonInit('POST', { name, html: html('Paid') }));
      expect(res.status).toBe(201);
      const body = await res.json();
      expect(body.ok).toBe(true);
      expect(body.app).toMatchObject({ status: 'created', appName: name, visibility: 'public', published: true });
      const r = body.receipt;
      expect(r).toMatchObject({
        action: 'x402.create_app_from_html',
        wallet: payer.address.toLowerCase(),
        network: 'eip155:8453',
        recipient: DEV_RECIPIENT,
        price: '0.007',
        currency: 'USDC',
        appId: body.app.appId,
        appName: name,
        visibility: 'public',
        status: 'settled',
      });
      expect(Object.keys(r).sort()).toEqual(
        [
          'action',
          'appId',
          'appName',
          'createdAt',
          'currency',
          'network',
          'price',
          'receiptHash',
          'receiptId',
          'recipient',
          'status',
          'txHash',
          'visibility',
          'wallet',
        ].sort(),
      );
      expect(r.receiptHash).toBe(recomputeReceiptHash(r));
      // The header of the client's generation carries the same transaction.
      const header = res.headers.get(label.startsWith('x402-fetch') ? 'x-payment-response' : 'payment-response');
      expect(JSON.parse(Buffer.from(header!, 'base64').toString()).transaction).toBe(r.txHash);

      // Money: payer −7000 atomic, recipient +7000, and txHash is a mined transaction on the dev chain.
      expect(await chain.balanceOf(payer.address)).toBe(before.payer - 7000n);
      expect(await chain.balanceOf(DEV_RECIPIENT)).toBe(before.recipient + 7000n);
      const client = createPublicClient({ transport: http(chain.rpcUrl) });
      const receipt = await client.getTransactionReceipt({ hash: r.txHash });
      expect(receipt.status).toBe('success');
      expect(receipt.blockNumber).toBeGreaterThan(0n);

      const page = await fetch(`${h.url}/s/${name}/`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<h1>Paid</h1>');
    });
  }

  it('list_apps proves the wallet with a zero-value authorization (both clients) and moves no money', async () => {
    const payer = await fundedWallet(h, 100_000n);
    const chain = devChain(h);
    const created = await (await payV1(payer)(`${h.url}/api/x402/apps`, jsonInit('POST', { name: `mine-${kind}`, html: html('Mine') }))).json();
    const balance = await chain.balanceOf(payer.address);
    for (const pay of [payV1, payV2]) {
      const res = await pay(payer)(`${h.url}/api/x402/apps`);
      expect(res.status).toBe(200);
      const body = await res.json();
      expect(body.apps.map((a: { appId: string }) => a.appId)).toEqual([created.app.appId]);
      expect(body.receipt).toMatchObject({ action: 'x402.list_apps', price: '0', txHash: '', status: 'verified', wallet: payer.address.toLowerCase() });
      expect(body.receipt.receiptHash).toBe(recomputeReceiptHash(body.receipt));
    }
    expect(await chain.balanceOf(payer.address)).toBe(balance);
    // Another wallet sees none of them.
    const other = await fundedWallet(h, 0n);
    const theirs = await (await payV2(other)(`${h.url}/api/x402/apps`)).json();
    expect(theirs.apps).toEqual([]);
  });
});
