import { eq } from 'drizzle-orm';
import { createWalletClient, http, parseAbi } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { USDC_ADDRESS } from '../../shared/agent-api/network.js';
import { x402Idempotency, x402Payments, x402Receipts } from '../../service/db/schema/index.js';
import { markSettled, pruneAnsweredPayments } from '../../service/payments/payment-store.js';
import type { Facilitator } from '../../service/payments/facilitator.js';
import { requestHashOf } from '../../service/agent/paid-call.js';
import { reconcileOrphanedPayments } from '../../service/payments/reconcile.js';
import { DEV_RECIPIENT } from '../../service/payments/x402-config.js';
import { createAppFromHtml } from '../../shared/agent-api/actions/apps.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import type { Receipt } from '../../shared/agent-api/receipt.js';
import { devChain, fundedWallet, html, jsonInit, recomputeReceiptHash, signAuthorization, xPaymentHeader } from './helpers.js';

const PRICE = 7000n;

/**
 * Failure injection around the real dev-chain facilitator: what happens to the work and the money when
 * settlement fails for real (the payer empties its wallet between verify and settle), when it throws
 * after sending, when the facilitator is down, and what reconcile does with what a crash left.
 */
describe.each(dbKinds())('settlement failures and crash recovery (%s)', (kind) => {
  let h: Harness;
  let real: Facilitator;
  /** The service's clock: real time plus an offset the tests move forward. */
  const clock = { offsetMs: 0, now: () => new Date(Date.now() + clock.offsetMs) };
  beforeAll(async () => {
    h = await startHarness(kind, {}, { clock });
    real = h.deps.facilitator;
  });
  afterAll(async () => {
    h.deps.facilitator = real;
    await h?.close();
  });
  /** The real dev-chain facilitator with its settlement replaced. */
  const withSettle = (settle: Facilitator['settle']): Facilitator => ({
    ...real,
    kind: real.kind,
    verify: real.verify.bind(real),
    supported: real.supported.bind(real),
    authorizationUsed: real.authorizationUsed.bind(real),
    close: async () => {},
    settle,
  });

  /** The payment row and the receipt row of a settled call agree with the receipt its answer carried. */
  async function expectLedgerAgrees(payer: string, nonce: string, receipt: Receipt) {
    expect(receipt).toMatchObject({ status: 'settled', txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    expect(receipt.receiptHash).toBe(recomputeReceiptHash(receipt));
    const payment = await h.deps.db.query.x402Payments.findFirst({
      where: (t, { and, eq }) => and(eq(t.payer, payer.toLowerCase()), eq(t.nonce, nonce.toLowerCase())),
    });
    expect(payment).toMatchObject({ status: 'committed', txHash: receipt.txHash, receiptId: receipt.receiptId });
    expect((payment?.response as { receipt?: Receipt } | undefined)?.receipt).toEqual(receipt);
    const [stored] = await h.deps.db.select().from(x402Receipts).where(eq(x402Receipts.receiptId, receipt.receiptId));
    expect(stored).toMatchObject({ txHash: receipt.txHash, status: 'settled', receiptHash: receipt.receiptHash });
  }

  it('a settled call commits its payment row and its receipt row with the receipt it answered; settling it again changes nothing', async () => {
    const payer = await fundedWallet(h, 100_000n);
    const paid = await signAuthorization(payer, { to: DEV_RECIPIENT, value: PRICE });
    const res = await fetch(`${h.url}/api/x402/apps`, jsonInit('POST', { name: `ledger-${kind}`, html: html('Ledger') }, xPaymentHeader(paid)));
    expect(res.status).toBe(201);
    const answer = await res.json();
    await expectLedgerAgrees(payer.address, paid.authorization.nonce, answer.receipt);
    // A second settle of the same row (a concurrent retry, reconcile) finds it committed and keeps it.
    const key = { payer: payer.address.toLowerCase(), nonce: paid.authorization.nonce.toLowerCase() };
    const again = await markSettled(h.deps.db, key, `0x${'ee'.repeat(32)}`, new Date(), answer);
    expect(again).toMatchObject({ txHash: answer.receipt.txHash, responseStatus: 201 });
    await expectLedgerAgrees(payer.address, paid.authorization.nonce, answer.receipt);
  });

  it('settlement refused on chain (funds gone between verify and settle): 502 without the answer, the work stands unpaid; the same payment sent again once funded pays once and gets the answer', async () => {
    const payer = await fundedWallet(h, PRICE);
    const chain = devChain(h);
    const drain = async () => {
      // The payer really moves its USDC away on the dev chain (gas from anvil_setBalance).
      await fetch(chain.rpcUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'anvil_setBalance', params: [payer.address, '0xde0b6b3a7640000'] }),
      });
      const w = createWalletClient({ account: payer, transport: http(chain.rpcUrl) });
      await w.writeContract({
        chain: null,
        address: USDC_ADDRESS,
        abi: parseAbi(['function transfer(address,uint256) returns (bool)']),
        functionName: 'transfer',
        args: [privateKeyToAccount(generatePrivateKey()).address, PRICE],
      });
    };
    h.deps.facilitator = withSettle(async (p, cb) => {
      await drain();
      return real.settle(p, cb);
    });
    const header = { ...xPaymentHeader(await signAuthorization(payer, { to: DEV_RECIPIENT, value: PRICE })), 'idempotency-key': `unpaid-${kind}` };
    const input = { name: `unpaid-${kind}`, html: html('Unpaid') };
    const recipientBefore = await chain.balanceOf(DEV_RECIPIENT);
    try {
      const res = await fetch(`${h.url}/api/x402/apps`, jsonInit('POST', input, header));
      expect(res.status).toBe(502);
      const body = await res.json();
      expect(body.error.code).toBe('payment_settlement_failed');
      expect(body.error.message).toMatch(/same payment again/);
      expect(body.receipt).toBeUndefined();
    } finally {
      h.deps.facilitator = real;
    }
    // Settlement no longer rolls the work back (it runs outside the work's transaction): the app
    // exists, the row says the money is owed, nothing moved.
    expect((await fetch(`${h.url}/s/unpaid-${kind}/`)).status).toBe(200);
    expect(await chain.balanceOf(DEV_RECIPIENT)).toBe(recipientBefore);
    const row = await h.deps.db.query.x402Payments.findFirst({ where: (t, { eq }) => eq(t.payer, payer.address.toLowerCase()) });
    expect(row?.status).toBe('failed');

    // The same Idempotency-Key under a new payment is not done twice: it points at the owed payment.
    const other = { ...xPaymentHeader(await signAuthorization(payer, { to: DEV_RECIPIENT, value: PRICE })), 'idempotency-key': `unpaid-${kind}` };
    const twice = await fetch(`${h.url}/api/x402/apps`, jsonInit('POST', input, other));
    expect(twice.status).toBe(502);
    expect((await twice.json()).error.message).toMatch(/with that same payment/);

    // Funded again, the same payment collects once and returns the answer with its settlement.
    await chain.mint(payer.address, PRICE);
    const retry = await fetch(`${h.url}/api/x402/apps`, jsonInit('POST', input, header));
    expect(retry.status).toBe(201);
    const out = await retry.json();
    expect(out.app).toMatchObject({ appId: expect.any(String), status: 'created' });
    expect(out.receipt).toMatchObject({ status: 'settled', txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    expect(await chain.balanceOf(DEV_RECIPIENT)).toBe(recipientBefore + PRICE);
    const again = await fetch(`${h.url}/api/x402/apps`, jsonInit('POST', input, header));
    expect(await again.json()).toEqual(out);
    expect(await chain.balanceOf(DEV_RECIPIENT)).toBe(recipientBefore + PRICE);
  });

  it('a settlement that throws after sending (connection lost): the chain shows the money moved, so the call answers 201, charged once', async () => {
    const payer = await fundedWallet(h, 100_000n);
    const chain = devChain(h);
    h.deps.facilitator = withSettle(async (p, cb) => {
      await real.settle(p, cb);
      throw new Error('simulated connection loss after sending');
    });
    const header = xPaymentHeader(await signAuthorization(payer, { to: DEV_RECIPIENT, value: PRICE }));
    const body = { name: `lost-${kind}`, html: html('Lost') };
    try {
      const res = await fetch(`${h.url}/api/x402/apps`, jsonInit('POST', body, header));
      expect(res.status).toBe(201);
      expect((await res.json()).receipt.txHash).toMatch(/^0x[0-9a-f]{64}$/);
    } finally {
      h.deps.facilitator = real;
    }
    expect((await fetch(`${h.url}/s/lost-${kind}/`)).status).toBe(200);
    expect(await chain.balanceOf(payer.address)).toBe(100_000n - PRICE);
    const retry = await fetch(`${h.url}/api/x402/apps`, jsonInit('POST', body, header));
    expect(retry.status).toBe(201);
    expect(await chain.balanceOf(payer.address)).toBe(100_000n - PRICE);
  });

  it('the facilitator down at settlement: the work stands unpaid, reconcile collects the authorization while it is valid', async () => {
    const payer = await fundedWallet(h, 100_000n);
    const chain = devChain(h);
    h.deps.facilitator = withSettle(async () => {
      throw new Error('facilitator unreachable');
    });
    const down = await signAuthorization(payer, { to: DEV_RECIPIENT, value: PRICE });
    const header = xPaymentHeader(down);
    const body = { name: `down-${kind}`, html: html('Down') };
    try {
      expect((await fetch(`${h.url}/api/x402/apps`, jsonInit('POST', body, header))).status).toBe(502);
    } finally {
      h.deps.facilitator = real;
    }
    expect(await chain.balanceOf(payer.address)).toBe(100_000n);
    const report = await reconcileOrphanedPayments(h.deps, 0);
    expect(report).toMatchObject({ collected: 1, unpaid: 0 });
    expect(await chain.balanceOf(payer.address)).toBe(100_000n - PRICE);
    // The caller's retry now gets the answer, settled, without a second charge.
    const retry = await fetch(`${h.url}/api/x402/apps`, jsonInit('POST', body, header));
    expect(retry.status).toBe(201);
    const { receipt } = await retry.json();
    // Settled by reconcile, which did not hold the answer: the same ledger as a call that settled itself.
    await expectLedgerAgrees(payer.address, down.authorization.nonce, receipt);
    expect(await chain.balanceOf(payer.address)).toBe(100_000n - PRICE);
    // Reconcile again: nothing left to do.
    expect(await reconcileOrphanedPayments(h.deps, 0)).toMatchObject({ collected: 0, unpaid: 0 });
  });

  it('reconcile at start: an earlier design\'s "settling" row that the chain shows as used becomes orphaned; an expired unused one is released', async () => {
    const payer = await fundedWallet(h, 100_000n);
    const input = { name: `recon-${kind}`, html: html('Recon') };
    const used = await signAuthorization(payer, { to: DEV_RECIPIENT, value: PRICE });
    // Settle it for real, as a crashed node would have, and leave the row in "settling".
    const settled = await real.settle({
      ...used,
      amount: PRICE,
      payTo: DEV_RECIPIENT,
      asset: USDC_ADDRESS,
      maxTimeoutSeconds: 300,
      resource: '',
      description: '',
    });
    expect(settled.success).toBe(true);
    const old = new Date(Date.now() - 10 * 60_000);
    const row = (nonce: string, validBefore: number) => ({
      payer: payer.address.toLowerCase(),
      nonce,
      action: createAppFromHtml.name,
      requestHash: requestHashOf(createAppFromHtml.name, {}, input),
      status: 'settling' as const,
      amount: PRICE.toString(),
      validBefore,
      payload: {},
      createdAt: old,
      updatedAt: old,
    });
    await h.deps.db.insert(x402Payments).values(row(used.authorization.nonce, Number(used.authorization.validBefore)));
    const expired = await signAuthorization(payer, { to: DEV_RECIPIENT, value: PRICE, validBefore: BigInt(Math.floor(Date.now() / 1000) - 5) });
    await h.deps.db.insert(x402Payments).values(row(expired.authorization.nonce, Number(expired.authorization.validBefore)));

    // A claim whose work never committed (the node died mid-work): released, so the payment can be used again.
    const midWork = await signAuthorization(payer, { to: DEV_RECIPIENT, value: PRICE });
    await h.deps.db.insert(x402Payments).values({ ...row(midWork.authorization.nonce, Number(midWork.authorization.validBefore)), status: 'working' });

    const report = await reconcileOrphanedPayments(h.deps);
    expect(await h.deps.db.query.x402Payments.findFirst({ where: (t, { eq }) => eq(t.nonce, midWork.authorization.nonce) })).toBeUndefined();
    expect(report.orphaned).toEqual([
      { payer: payer.address.toLowerCase(), nonce: used.authorization.nonce, action: createAppFromHtml.name, txHash: settled.transaction },
    ]);
    expect(report.released).toBe(2);

    const balance = await devChain(h).balanceOf(payer.address);
    const retry = await fetch(`${h.url}/api/x402/apps`, jsonInit('POST', input, xPaymentHeader(used)));
    expect(retry.status).toBe(201);
    expect((await retry.json()).receipt.txHash).toBe(settled.transaction);
    expect(await devChain(h).balanceOf(payer.address)).toBe(balance);
  });

  it('answered payments expired before the cut-off and old Idempotency-Keys are pruned; owed and orphaned ones are kept', async () => {
    const payer = `0x${'ab'.repeat(20)}-${kind}`;
    const day = 86_400_000;
    const longAgo = Math.floor((Date.now() - 40 * day) / 1000);
    const row = (nonce: string, status: 'committed' | 'failed' | 'orphaned', validBefore: number) => ({
      payer,
      nonce,
      action: createAppFromHtml.name,
      requestHash: 'h',
      status,
      amount: PRICE.toString(),
      validBefore,
      payload: {},
    });
    await h.deps.db
      .insert(x402Payments)
      .values([
        row('0xold', 'committed', longAgo),
        row('0xrecent', 'committed', Math.floor(Date.now() / 1000) + 60),
        row('0xowed', 'failed', longAgo),
        row('0xorphan', 'orphaned', longAgo),
      ]);
    await h.deps.db.insert(x402Idempotency).values([
      { wallet: payer, key: 'old', requestHash: 'h', payer, nonce: '0xold', createdAt: new Date(Date.now() - 40 * day) },
      { wallet: payer, key: 'recent', requestHash: 'h', payer, nonce: '0xrecent' },
    ]);
    const pruned = await pruneAnsweredPayments(h.deps.db, new Date(Date.now() - 30 * day));
    expect(pruned).toEqual({ payments: 1, idempotencyKeys: 1 });
    const left = await h.deps.db.query.x402Payments.findMany({ where: (t, { eq }) => eq(t.payer, payer) });
    expect(left.map((r) => r.nonce).sort()).toEqual(['0xorphan', '0xowed', '0xrecent']);
    const keys = await h.deps.db.query.x402Idempotency.findMany({ where: (t, { eq }) => eq(t.wallet, payer) });
    expect(keys.map((k) => k.key)).toEqual(['recent']);
  });

  it('a replay of an accepted payment after its authorization expired still returns the first answer (and a new expired one is refused)', async () => {
    const payer = await fundedWallet(h, 100_000n);
    const now = BigInt(Math.floor(Date.now() / 1000));
    const header = xPaymentHeader(await signAuthorization(payer, { to: DEV_RECIPIENT, value: PRICE, validBefore: now + 30n }));
    const body = { name: `late-${kind}`, html: html('Late') };
    const first = await fetch(`${h.url}/api/x402/apps`, jsonInit('POST', body, header));
    expect(first.status).toBe(201);
    const firstBody = await first.json();
    clock.offsetMs = 120_000;
    try {
      const again = await fetch(`${h.url}/api/x402/apps`, jsonInit('POST', body, header));
      expect(again.status).toBe(201);
      expect(await again.json()).toEqual(firstBody);
      const fresh = xPaymentHeader(await signAuthorization(payer, { to: DEV_RECIPIENT, value: PRICE, validBefore: now + 30n }));
      const late = await fetch(`${h.url}/api/x402/apps`, jsonInit('POST', { ...body, name: `late2-${kind}` }, fresh));
      expect(late.status).toBe(402);
      expect((await late.json()).error).toMatch(/valid_before/);
    } finally {
      clock.offsetMs = 0;
    }
    expect(await devChain(h).balanceOf(payer.address)).toBe(100_000n - PRICE);
  });
});
