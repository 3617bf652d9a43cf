import {
  decodeSignedOffers,
  type EIP712SignedOffer,
  type EIP712SignedReceipt,
  extractOffersFromPaymentRequired,
  extractReceiptFromResponse,
  findAcceptsObjectFromSignedOffer,
  isEIP712SignedOffer,
  isEIP712SignedReceipt,
  verifyOfferSignatureEIP712,
  verifyReceiptMatchesOffer,
  verifyReceiptSignatureEIP712,
} from '@x402/extensions/offer-receipt';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { offerReceiptSignerOf } from '../../service/payments/offer-receipt.js';
import type { Receipt } from '../../shared/agent-api/receipt.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { fundedWallet, html, jsonInit, payV1, payV2, recomputeReceiptHash } from './helpers.js';

// The x402 offer-receipt extension: every paid action's 402 carries EIP-712 signed offers of its
// terms, and every settled call's PAYMENT-RESPONSE an EIP-712 receipt, both signed by the service's
// receipt key, verified here with the extension's own helpers.
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

  it('a paid action’s 402 carries a signed offer of its terms by the receiptSigner, reused across 402s; the receipt after payment matches it', async () => {
    const url = `${h.url}/api/x402/apps`;
    const ask = async () => {
      const res = await fetch(url, jsonInit('POST', { name: 'offered', html: html('Offer') }));
      expect(res.status).toBe(402);
      return JSON.parse(Buffer.from(res.headers.get('payment-required') ?? '', 'base64').toString('utf8'));
    };
    const required = await ask();
    const offers = extractOffersFromPaymentRequired(required);
    expect(offers).toHaveLength(1);
    expect(isEIP712SignedOffer(offers[0]!)).toBe(true);
    const { signer: offerSigner } = await verifyOfferSignatureEIP712(offers[0] as EIP712SignedOffer);
    expect(offerSigner.toLowerCase()).toBe(signer);
    const [offer] = decodeSignedOffers(offers);
    expect(findAcceptsObjectFromSignedOffer(offer!, required.accepts)).toEqual(required.accepts[0]);
    expect(offer).toMatchObject({
      acceptIndex: 0,
      resourceUrl: url,
      scheme: 'exact',
      network: 'eip155:8453',
      amount: '7000',
      payTo: required.accepts[0].payTo,
    });
    const now = Math.floor(Date.now() / 1000);
    expect(offer!.validUntil).toBeGreaterThan(now);
    expect(offer!.validUntil).toBeLessThanOrEqual(now + required.accepts[0].maxTimeoutSeconds);
    // One signature serves the 402s of its window.
    expect(extractOffersFromPaymentRequired(await ask())[0]!.signature).toBe(offers[0]!.signature);

    const paid = await payV2(payer)(url, jsonInit('POST', { name: 'offered', html: html('Offer') }));
    expect(paid.status).toBe(201);
    expect(verifyReceiptMatchesOffer(extractReceiptFromResponse(paid)!, offer!, [payer.address])).toBe(true);
    expect(verifyReceiptMatchesOffer(extractReceiptFromResponse(paid)!, offer!, [privateKeyToAccount(generatePrivateKey()).address])).toBe(false);
  });

  it('offers are signed once per half window and resource, and at most 50 new ones a second: past that a 402 goes without', async () => {
    const signerOfTest = offerReceiptSignerOf({ config: h.config, secret: 'offer-test' });
    const terms = {
      scheme: 'exact',
      network: 'eip155:8453',
      asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
      payTo: h.config.x402.recipient,
      amount: '7000',
      maxTimeoutSeconds: 300,
    };
    const at = new Date('2026-11-28T12:00:00Z');
    const [first] = await signerOfTest.offers('https://svc.test/a', [terms], at);
    expect((await signerOfTest.offers('https://svc.test/a', [terms], new Date(at.getTime() + 149_000)))[0]).toBe(first);
    const renewed = (await signerOfTest.offers('https://svc.test/a', [terms], new Date(at.getTime() + 151_000)))[0];
    expect(renewed!.payload.validUntil).toBe(first!.payload.validUntil + 151);
    const later = new Date(at.getTime() + 600_000);
    const many = await Promise.all(Array.from({ length: 60 }, (_, i) => signerOfTest.offers(`https://svc.test/r${i}`, [terms], later)));
    expect(many.filter((o) => o.length === 1)).toHaveLength(50);
    expect(many.slice(50).every((o) => o.length === 0)).toBe(true);
    // The next second signs again.
    expect(await signerOfTest.offers('https://svc.test/r59', [terms], new Date(later.getTime() + 1000))).toHaveLength(1);
  });

  it('a free identity call’s 402 (a sign-in challenge) offers nothing', async () => {
    const res = await fetch(`${h.url}/api/x402/apps`);
    expect(res.status).toBe(402);
    const required = JSON.parse(Buffer.from(res.headers.get('payment-required') ?? '', 'base64').toString('utf8'));
    expect(extractOffersFromPaymentRequired(required)).toEqual([]);
  });

  it('SVC_X402_RECEIPT_KEY chooses the key; without it every node of a deployment derives the same one from the shared secret', () => {
    const key = generatePrivateKey();
    const configured = offerReceiptSignerOf({ config: { ...h.config, x402: { ...h.config.x402, receiptKey: key } }, secret: 's1' });
    expect(configured.address).toBe(privateKeyToAccount(key).address.toLowerCase());
    const a = offerReceiptSignerOf({ config: h.config, secret: 'deployment-secret' });
    const b = offerReceiptSignerOf({ config: h.config, secret: 'deployment-secret' });
    const other = offerReceiptSignerOf({ config: h.config, secret: 'another-deployment' });
    expect(a.address).toBe(b.address);
    expect(a.address).not.toBe(other.address);
    expect(offerReceiptSignerOf(h.deps).address).toBe(signer);
  });
});
