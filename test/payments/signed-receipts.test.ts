import { type EIP712SignedReceipt, extractReceiptFromResponse, isEIP712SignedReceipt, verifyReceiptSignatureEIP712 } from '@x402/extensions/offer-receipt';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { receiptSignerOf } from '../../service/payments/signed-receipts.js';
import type { Receipt } from '../../shared/agent-api/receipt.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { fundedWallet, html, jsonInit, payV1, payV2, recomputeReceiptHash } from './helpers.js';

// The x402 offer-receipt extension: every settled call's PAYMENT-RESPONSE carries an EIP-712 receipt
// signed by the service's receipt key, verified here with the extension's own helpers.
let h: Harness;
let payer: PrivateKeyAccount;
let signer: string;

beforeAll(async () => {
  h = await startHarness('pglite', { SVC_X402_MODE: 'dev' });
  payer = await fundedWallet(h, 1_000_000n);
  signer = ((await (await fetch(`${h.url}/api/x402`)).json()) as { receiptSigner: string }).receiptSigner;
}, 120_000);
afterAll(async () => {
  await h?.close();
});

async function verified(res: Response): Promise<{ signer: string; payload: EIP712SignedReceipt['payload'] }> {
  const receipt = extractReceiptFromResponse(res);
  expect(receipt).toBeDefined();
  expect(isEIP712SignedReceipt(receipt!)).toBe(true);
  const r = receipt as EIP712SignedReceipt;
  const { signer: recovered, payload } = await verifyReceiptSignatureEIP712(r);
  return { signer: recovered.toLowerCase(), payload };
}

describe('signed receipts (offer-receipt extension)', () => {
  it('a settled call returns a receipt signed by the published receiptSigner, naming the payer, the URL and the transaction; receiptHash stays', async () => {
    expect(signer).toMatch(/^0x[0-9a-f]{40}$/);
    const url = `${h.url}/api/x402/apps`;
    const res = await payV2(payer)(url, jsonInit('POST', { name: 'signed-receipt', html: html('Receipt') }));
    expect(res.status).toBe(201);
    const body = (await res.clone().json()) as { receipt: Receipt };
    const { signer: recovered, payload } = await verified(res);
    expect(recovered).toBe(signer);
    expect(payload).toMatchObject({
      version: 1,
      network: 'eip155:8453',
      resourceUrl: url,
      payer: payer.address.toLowerCase(),
      transaction: body.receipt.txHash,
    });
    expect(payload.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(payload.issuedAt).toBe(Math.floor(Date.parse(body.receipt.createdAt) / 1000));
    expect(body.receipt.receiptHash).toBe(recomputeReceiptHash(body.receipt));
  });

  it('the same payment replayed carries the same signed receipt; an x402 v1 client gets one in X-PAYMENT-RESPONSE', async () => {
    let paymentHeader = '';
    const recording: typeof fetch = (input, init) => {
      // A Request of the library's own (not always this realm's Request class).
      const headers = typeof input === 'object' && 'headers' in input ? input.headers : new Headers(init?.headers);
      paymentHeader = headers.get('payment-signature') ?? paymentHeader;
      return fetch(input, init);
    };
    const url = `${h.url}/api/x402/apps`;
    const init = jsonInit('POST', { name: 'replayed-receipt', html: html('Again') });
    const { wrapFetchWithPayment, x402Client } = await import('@x402/fetch');
    const { registerExactEvmScheme } = await import('@x402/evm/exact/client');
    const client = new x402Client();
    registerExactEvmScheme(client, { signer: payer as never });
    const first = await wrapFetchWithPayment(recording, client)(url, init);
    expect(first.status).toBe(201);
    expect(paymentHeader).not.toBe('');
    const again = await fetch(url, { ...init, headers: { ...(init.headers as Record<string, string>), 'PAYMENT-SIGNATURE': paymentHeader } });
    expect(again.headers.get('x-svc-replayed')).toBe('true');
    expect(extractReceiptFromResponse(again)).toEqual(extractReceiptFromResponse(first));

    const v1 = await payV1(payer)(url, jsonInit('POST', { name: 'v1-receipt', html: html('v1') }));
    expect(v1.status).toBe(201);
    expect(v1.headers.get('x-payment-response')).toBeTruthy();
    expect((await verified(v1)).signer).toBe(signer);
  });

  it('a zero-value identity proof settles nothing and carries no signed receipt', async () => {
    const res = await payV2(payer)(`${h.url}/api/x402/apps`);
    expect(res.status).toBe(200);
    expect(extractReceiptFromResponse(res)).toBeUndefined();
  });

  it('SVC_X402_RECEIPT_KEY chooses the key; without it every node of a deployment derives the same one from the shared secret', () => {
    const key = generatePrivateKey();
    const configured = receiptSignerOf({ config: { ...h.config, x402: { ...h.config.x402, receiptKey: key } }, secret: 's1' });
    expect(configured.address).toBe(privateKeyToAccount(key).address.toLowerCase());
    const a = receiptSignerOf({ config: h.config, secret: 'deployment-secret' });
    const b = receiptSignerOf({ config: h.config, secret: 'deployment-secret' });
    const other = receiptSignerOf({ config: h.config, secret: 'another-deployment' });
    expect(a.address).toBe(b.address);
    expect(a.address).not.toBe(other.address);
    expect(receiptSignerOf(h.deps).address).toBe(signer);
  });
});
