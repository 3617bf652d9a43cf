import { svcCommand } from '../kernel/cli-command.js';
import { createHash } from 'node:crypto';
import type { AgentAction } from '../../shared/agent-api/action.js';
import { PAYMENT_HEADERS, USDC_ADDRESS, X402_NETWORK, X402_NETWORK_V1 } from '../../shared/agent-api/network.js';
import type { AgentHandler, AgentWork } from './handler.js';
import { walletBlock } from './wallet-block.js';
import type { DbOrTx } from '../db/client.js';
import type { Deps } from '../deps.js';
import { AppError } from '../kernel/app-error.js';
import { decodePaymentHeader, type PaymentAttempt } from '../payments/decode-payment.js';
import { settleOnce } from '../payments/collect.js';
import type { VerifiedPayment } from '../payments/facilitator.js';
import { PaymentRequiredError, paymentDescription } from '../payments/payment-required.js';
import {
  claimIdempotency,
  claimOrphaned,
  claimPayment,
  claimUnpaid,
  deleteIdempotency,
  findIdempotency,
  findPayment,
  markWorked,
  releasePayment,
  reorphan,
  waitForPayment,
  type PaymentKey,
  type PaymentRow,
  type SettledPayment,
} from '../payments/payment-store.js';
import { priceOf } from '../payments/prices.js';
import { buildReceipt } from '../payments/receipts.js';
import { SIWX_HEADER, verifySignInWithX } from '../payments/sign-in-with-x.js';
import { receiptExtension, offerReceiptSignerOf } from '../payments/offer-receipt.js';
import { assertPaymentWindow, invalidSignature, verifyPaymentOffline } from '../payments/verify-payment.js';

export interface AgentCallRequest {
  action: AgentAction;
  handler: AgentHandler;
  params: Record<string, string>;
  input: unknown;
  /** Absolute URL of this request (the x402 resource). */
  resource: string;
  header(name: string): string | undefined;
}

export interface AgentAnswer {
  status: number;
  body: Record<string, unknown>;
  headers: Record<string, string>;
}

/** How long a retry waits for the same payment (or Idempotency-Key) still being processed elsewhere. */
const WAIT_FOR_INFLIGHT_MS = 60_000;

/** Sorted-key JSON, so the same request hashes the same whatever the key order or whitespace. */
function canonicalJson(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v ?? null);
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
    .join(',')}}`;
}

/** What "the same request" means for replays and Idempotency-Key: action + path params + parsed body. */
export function requestHashOf(action: string, params: unknown, input: unknown): string {
  return createHash('sha256')
    .update(canonicalJson([action, params, input]))
    .digest('hex');
}

function successStatus(action: AgentAction): number {
  return action.name === 'x402.create_app_from_html' || action.name === 'x402.create_table_api' ? 201 : 200;
}

function paymentResponseHeader(p: PaymentAttempt, txHash: string, payer: string, extensions?: Record<string, unknown>): Record<string, string> {
  const body = { success: true, transaction: txHash, network: p.version === 1 ? X402_NETWORK_V1 : X402_NETWORK, payer, ...(extensions ? { extensions } : {}) };
  const name = p.version === 1 ? PAYMENT_HEADERS.v1Response : PAYMENT_HEADERS.v2Response;
  return { [name]: Buffer.from(JSON.stringify(body)).toString('base64') };
}

/** The Idempotency-Key header, or the x402 `payment-identifier` extension's id (v2 clients). */
function idempotencyKeyOf(req: AgentCallRequest, p: PaymentAttempt): string | undefined {
  const header = req.header(PAYMENT_HEADERS.idempotencyKey)?.trim();
  const ext = p.extensions?.['payment-identifier'] as { id?: unknown; info?: { id?: unknown } } | undefined;
  const key = header || (typeof ext?.info?.id === 'string' ? ext.info.id : typeof ext?.id === 'string' ? ext.id : undefined);
  if (key !== undefined && (key.length < 1 || key.length > 200)) throw new AppError('validation_failed', 'Idempotency-Key must be 1–200 characters');
  return key;
}

/** The stored answer of a payment (or Idempotency-Key) already used for this request, marked as a replay. */
function replayedAnswer(deps: Deps, row: PaymentRow, p: PaymentAttempt, resource: string): Promise<AgentAnswer> {
  deps.metrics.payments.inc({ outcome: 'replayed' });
  return storedAnswer(deps, row, p, resource, { 'x-svc-replayed': 'true' });
}

/**
 * The stored answer, with its PAYMENT-RESPONSE; a settled payment's also carries the offer-receipt
 * extension's signed receipt (offer-receipt.ts), dated as the stored receipt, so a replay carries the same.
 */
async function storedAnswer(deps: Deps, row: SettledPayment, p: PaymentAttempt, resource: string, extra: Record<string, string>): Promise<AgentAnswer> {
  const body = row.response as Record<string, unknown>;
  const txHash = row.txHash ?? '';
  const createdAt = (body.receipt as { createdAt?: string } | undefined)?.createdAt;
  const signed = txHash
    ? receiptExtension(
        await offerReceiptSignerOf(deps).receipt({
          resourceUrl: resource,
          payer: row.payer,
          transaction: txHash,
          issuedAt: new Date(createdAt ?? deps.clock.now()),
        }),
      )
    : undefined;
  return {
    status: Number(row.responseStatus ?? 200),
    body,
    headers: { ...paymentResponseHeader(p, txHash, row.payer, signed), ...extra },
  };
}

/** Free actions without identity: check, then run in a transaction. No payment, no receipt. */
export async function runFreeAction(deps: Deps, req: AgentCallRequest): Promise<AgentAnswer> {
  const call = { deps, wallet: '', params: req.params, input: req.input };
  const state = await req.handler.check?.(call);
  const work = req.action.readOnly
    ? await req.handler.run({ ...call, tx: deps.db, state })
    : await deps.db.transaction((tx) => req.handler.run({ ...call, tx, state }));
  await runAfterCommit(deps, work);
  return { status: 200, body: { ok: true, ...(work.result as object) }, headers: {} };
}

/**
 * A free call whose wallet signed in with a Sign-In-With-X proof (sign-in-with-x.ts): the proof's
 * nonce is claimed first (a replay is refused on every node), then the call runs as that wallet. No
 * payment and no receipt: nothing was paid or authorized.
 */
async function runSignedInAction(deps: Deps, req: AgentCallRequest, header: string): Promise<AgentAnswer> {
  const wallet = await verifySignInWithX(deps, header);
  await refuseBlockedWallet(deps, wallet);
  const call = { deps, wallet, params: req.params, input: req.input };
  const state = await req.handler.check?.(call);
  const work = req.action.readOnly
    ? await req.handler.run({ ...call, tx: deps.db, state })
    : await deps.db.transaction((tx) => req.handler.run({ ...call, tx, state }));
  await runAfterCommit(deps, work);
  return { status: successStatus(req.action), body: { ok: true, ...(work.result as object) }, headers: {} };
}

/** 403 `wallet_blocked` naming the operator's reason when the operator blocked `wallet` (docs/operator.md). */
async function refuseBlockedWallet(deps: Deps, wallet: string): Promise<void> {
  const block = await walletBlock(deps.db, wallet);
  if (!block) return;
  throw new AppError(
    'wallet_blocked',
    `the wallet ${wallet.toLowerCase()} is blocked by the operator of this service: ${block.reason}. Nothing was charged; its apps are suspended, and nothing of them was deleted`,
    { reason: block.reason },
  );
}

async function runAfterCommit(deps: Deps, work: AgentWork<unknown>): Promise<void> {
  try {
    await work.afterCommit?.();
  } catch (e) {
    deps.log.warn('agent afterCommit failed', { error: (e as Error).message });
  }
}

/**
 * A call that needs the wallet (paid, or free with a zero-value proof). States of its payment row:
 * verified (signature offline, then balance and nonce on chain) → working (claimed; the work runs in
 * its own transaction) → settling (work, receipt and answer committed) → committed (settled) | failed
 * (not collected: the work stands; a retry of the same payment, or reconcile, collects it). Settlement
 * holds no database transaction (with PGlite, no other request waits for the chain).
 * Order: decode + verify the signature offline (free) → replay / Idempotency-Key answers →
 * handler.check (free; 4xx costs nothing) → facilitator.verify → claim (payer, nonce) → work → settle.
 */
export async function runIdentityAction(deps: Deps, req: AgentCallRequest): Promise<AgentAnswer> {
  const signIn = req.header(SIWX_HEADER);
  if (signIn && priceOf(deps.config, req.action).amount === 0n) return runSignedInAction(deps, req, signIn);
  const p = await acceptedPayment(deps, req);
  for (let round = 0; round < 3; round++) {
    // 1–2. The same payment again, or the same Idempotency-Key: the earlier answer (or the money owed for it).
    const earlier = await earlierAttempt(deps, p);
    if (earlier.kind === 'answer') return earlier.answer;
    if (earlier.kind === 'retry') continue;
    const { redeemed } = earlier;

    // 3–4. Free checks (ownership, input rules, quotas: a 4xx here costs nothing), then what only the
    // chain knows (balance, nonce unused there).
    const collect = p.amount > 0n && redeemed === undefined;
    let state: unknown;
    try {
      state = await req.handler.check?.({ deps, wallet: p.wallet, params: req.params, input: req.input });
      if (collect) {
        await verifyOnChain(deps, p.verified, p.wallet);
        deps.metrics.payments.inc({ outcome: 'verified' });
      }
    } catch (err) {
      if (redeemed === undefined && (await claimedMeanwhile(deps, p))) continue;
      throw err;
    }

    // 5. Claim the nonce (and the Idempotency-Key) before any work.
    if (!(await claimForWork(deps, p, redeemed))) continue; // a concurrent retry of this payment claimed it first

    // 6. The work, its receipt and its answer: one transaction, committed before any money moves.
    let worked: { work: AgentWork<unknown>; body: Record<string, unknown>; status: number };
    try {
      worked = await deps.db.transaction((tx) => workWithReceipt(deps, p, { tx, state, redeemed, collect }));
    } catch (e) {
      if (redeemed !== undefined) await reorphan(deps.db, p.key, deps.clock.now());
      else await releasePayment(deps.db, p.key, p.idemKey);
      throw e;
    }
    await runAfterCommit(deps, worked.work);
    if (!collect) return { status: worked.status, body: worked.body, headers: paymentResponseHeader(p.attempt, redeemed ?? '', p.wallet) };
    // 7. Collect the money, outside any transaction.
    return settleWorkedCall(deps, p.key, p.verified, p.attempt, {}, worked.body);
  }
  throw new AppError('conflict', 'this payment is being processed concurrently; retry');
}

/**
 * Whether a concurrent attempt of this same payment, or of this Idempotency-Key (on this node or
 * another), claimed it since step 1. Its work may then be what made the check refuse (the app name
 * taken), or the chain see the nonce used: the next round answers as that attempt's replay.
 */
async function claimedMeanwhile(deps: Deps, p: AcceptedPayment): Promise<boolean> {
  if (await findPayment(deps.db, p.key.payer, p.key.nonce)) return true;
  return p.idemKey !== undefined && (await findIdempotency(deps.db, p.wallet, p.idemKey)) !== undefined;
}

/** A payment header decoded and its signature checked (offline, and on chain for a smart account), with what the call needs of it. */
interface AcceptedPayment {
  req: AgentCallRequest;
  price: string;
  amount: bigint;
  attempt: PaymentAttempt;
  /** The payer: the caller's identity. */
  wallet: string;
  key: PaymentKey;
  requestHash: string;
  idemKey: string | undefined;
  verified: VerifiedPayment;
  expectation: Parameters<typeof assertPaymentWindow>[1];
}

async function acceptedPayment(deps: Deps, req: AgentCallRequest): Promise<AcceptedPayment> {
  const { config } = deps;
  const { price, amount } = priceOf(config, req.action);
  const attempt = decodePaymentHeader(req.header);
  if (!attempt) {
    throw new PaymentRequiredError(
      'payment_required',
      amount === 0n
        ? `${req.action.name} is free but needs the wallet's identity: sign a zero-value x402 authorization (pay the 0 USDC requirement)`
        : `${req.action.name} costs ${price} USDC: pay with an x402 client (X-PAYMENT or PAYMENT-SIGNATURE header)`,
    );
  }
  // A wallet the operator blocked is refused here, before its signature, the chain or a settlement is
  // asked anything: nothing is verified, nothing charged (the payer is the authorization's `from`).
  await refuseBlockedWallet(deps, attempt.authorization.from);
  const nowSeconds = Math.floor(deps.clock.now().getTime() / 1000);
  const expectation = { amount, recipient: config.x402.recipient, nowSeconds, maxTimeoutSeconds: config.x402.maxTimeoutSeconds };
  // Signature and terms now; the validity window only for payments not seen before, so a replay of an
  // accepted payment still gets its first answer after the authorization expired.
  const offline = await verifyPaymentOffline(attempt, { ...expectation, checkWindow: false });
  const verified: VerifiedPayment = {
    authorization: attempt.authorization,
    signature: attempt.signature,
    amount,
    payTo: config.x402.recipient,
    asset: USDC_ADDRESS,
    maxTimeoutSeconds: config.x402.maxTimeoutSeconds,
    resource: req.resource,
    description: paymentDescription(config, req.action),
  };
  // A smart account's signature (ERC-1271/6492) is checked on chain before anything is looked up or done.
  if (offline.signedBy === 'contract') {
    const checked = await deps.facilitator.verifySignature(verified);
    if (!checked.isValid) throw invalidSignature(checked.invalidReason);
  }
  return {
    req,
    price,
    amount,
    attempt,
    wallet: offline.payer,
    key: { payer: offline.payer, nonce: attempt.authorization.nonce.toLowerCase() },
    requestHash: requestHashOf(req.action.name, req.params, req.input),
    idemKey: idempotencyKeyOf(req, attempt),
    verified,
    expectation,
  };
}

/**
 * Steps 1–2: what an earlier attempt with this payment or this Idempotency-Key decided.
 * `answer`: its answer (a replay), or the answer after this retry paid the work it did unpaid.
 * `retry`: it failed and released what it held meanwhile; go round again.
 * `new`: nothing earlier (`redeemed` set when the payment moved money for work that never
 * committed, the earlier design's orphan: the work is done now, unpaid).
 */
async function earlierAttempt(
  deps: Deps,
  p: AcceptedPayment,
): Promise<{ kind: 'answer'; answer: AgentAnswer } | { kind: 'retry' } | { kind: 'new'; redeemed: string | undefined }> {
  const { key, requestHash, idemKey, wallet, attempt } = p;
  // 1. The same payment again: the first answer for the same request; refused for another.
  const prior = await findPayment(deps.db, key.payer, key.nonce);
  let redeemed: string | undefined;
  if (prior) {
    if (prior.requestHash !== requestHash) {
      throw new PaymentRequiredError('payment_already_used', 'this payment was already used for another request; sign a new one');
    }
    const done =
      prior.status === 'committed' || prior.status === 'orphaned' ? prior : await waitForPayment(deps.db, key.payer, key.nonce, WAIT_FOR_INFLIGHT_MS);
    if (done === 'timeout') throw new AppError('conflict', 'the same payment is still being processed; retry shortly');
    if (!done) return { kind: 'retry' }; // the other attempt failed and released the payment: try it ourselves
    if (done.status === 'committed') return { kind: 'answer', answer: await replayedAnswer(deps, done, attempt, p.req.resource) };
    if (done.status === 'failed') {
      // The work is done; this retry pays for it, then gets its answer.
      if (!(await claimUnpaid(deps.db, key, deps.clock.now()))) return { kind: 'retry' };
      return { kind: 'answer', answer: await settleWorkedCall(deps, key, p.verified, attempt, { 'x-svc-replayed': 'true' }) };
    }
    redeemed = done.txHash ?? ''; // orphaned: money moved, work never committed → do the work now, unpaid
  }

  if (!prior) assertPaymentWindow(attempt, p.expectation);

  // 2. Idempotency-Key: the same key and request return the stored answer; the new payment is not used.
  if (idemKey && redeemed === undefined) {
    const idem = await findIdempotency(deps.db, wallet, idemKey);
    if (idem) {
      if (idem.requestHash !== requestHash)
        throw new AppError('conflict', 'this Idempotency-Key was used for a different request', { idempotencyKey: idemKey });
      const done = await waitForPayment(deps.db, idem.payer, idem.nonce, WAIT_FOR_INFLIGHT_MS);
      if (done === 'timeout') throw new AppError('conflict', 'a request with this Idempotency-Key is still being processed; retry shortly');
      if (done?.status === 'committed') return { kind: 'answer', answer: await replayedAnswer(deps, done, attempt, p.req.resource) };
      if (done?.status === 'failed')
        // Done but unpaid: doing it again under a new payment would do it twice.
        throw new AppError(
          'payment_settlement_failed',
          'the request with this Idempotency-Key was done but its payment could not be settled; send it again with that same payment to pay and get the answer',
          { idempotencyKey: idemKey },
        );
      await deleteIdempotency(deps.db, wallet, idemKey, idem.nonce); // the first attempt failed; take the key over
      return { kind: 'retry' };
    }
  }
  return { kind: 'new', redeemed };
}

/**
 * Step 5: claims the payment's nonce (and its Idempotency-Key) before any work; false when a
 * concurrent attempt claimed either first. Redeeming an orphaned payment is claimed atomically too,
 * so two concurrent retries cannot both do the work.
 */
async function claimForWork(deps: Deps, p: AcceptedPayment, redeemed: string | undefined): Promise<boolean> {
  const { key, attempt, idemKey } = p;
  const now = deps.clock.now();
  const claimed =
    redeemed !== undefined
      ? await claimOrphaned(deps.db, key, now)
      : await claimPayment(
          deps.db,
          {
            ...key,
            action: p.req.action.name,
            requestHash: p.requestHash,
            amount: p.amount.toString(),
            validBefore: Number(attempt.authorization.validBefore),
            payload: { authorization: attempt.authorization, signature: attempt.signature, version: attempt.version },
          },
          now,
        );
  if (!claimed) return false;
  if (idemKey && redeemed === undefined && !(await claimIdempotency(deps.db, { wallet: p.wallet, key: idemKey, requestHash: p.requestHash, ...key }))) {
    await releasePayment(deps.db, key);
    return false;
  }
  return true;
}

/** Step 6, inside the work's transaction: the work, its receipt, and the payment row moved on with the answer. */
async function workWithReceipt(
  deps: Deps,
  p: AcceptedPayment,
  o: { tx: DbOrTx; state: unknown; redeemed: string | undefined; collect: boolean },
): Promise<{ work: AgentWork<unknown>; body: Record<string, unknown>; status: number }> {
  const { req, wallet, key } = p;
  const work = await req.handler.run({ deps, wallet, params: req.params, input: req.input, tx: o.tx, state: o.state });
  const receipt = buildReceipt({
    action: req.action.name,
    wallet,
    txHash: o.redeemed ?? '',
    recipient: deps.config.x402.recipient,
    price: p.price,
    app: work.app,
    // Until the money moved, the stored receipt says so; markSettled gives it the transaction.
    status: o.collect ? 'settling' : p.amount > 0n ? 'settled' : 'verified',
    createdAt: deps.clock.now(),
  });
  const body = { ok: true, ...(work.result as object), receipt };
  const status = successStatus(req.action);
  await markWorked(
    o.tx,
    key,
    { status: o.collect ? 'settling' : 'committed', txHash: o.collect ? null : (o.redeemed ?? ''), response: body, responseStatus: status },
    receipt,
    deps.clock.now(),
  );
  return { work, body, status };
}

async function verifyOnChain(deps: Deps, verified: VerifiedPayment, wallet: string): Promise<void> {
  const v = await deps.facilitator.verify(verified);
  if (v.isValid) return;
  // In development the fix is one command away: say it.
  const hint =
    v.invalidReason === 'insufficient_funds' && deps.config.x402.mode === 'dev' ? `. Fund the wallet with test USDC: ${svcCommand(`faucet ${wallet} 5`)}` : '';
  throw new PaymentRequiredError(
    v.invalidReason ?? 'invalid_payment',
    `the payment cannot be settled: ${v.invalidReason ?? 'refused by the facilitator'}; nothing was charged${hint}`,
  );
}

/**
 * Settles a payment whose work is committed (row in `settling`) and answers with the stored answer.
 * When the chain refuses (the payer's funds moved away since verify, the facilitator is down), the
 * work stands and the row becomes `failed`: the same payment sent again, or reconcile while the
 * authorization is valid, collects it; the caller gets 502 without the answer meanwhile. `stored`: the
 * answer just stored with the work, when this call did it.
 */
async function settleWorkedCall(
  deps: Deps,
  key: { payer: string; nonce: string },
  verified: VerifiedPayment,
  attempt: PaymentAttempt,
  extraHeaders: Record<string, string>,
  stored?: Record<string, unknown>,
): Promise<AgentAnswer> {
  const outcome = await settleOnce(deps, key, verified, stored);
  deps.metrics.payments.inc({ outcome: outcome.settled ? 'settled' : 'settlement_failed' });
  if (outcome.settled) return storedAnswer(deps, outcome.row, attempt, verified.resource, extraHeaders);
  throw new AppError(
    'payment_settlement_failed',
    `settlement failed (${outcome.reason}); the work was done and is kept, but nothing was charged yet: send the same request with the same payment again once it can be settled to pay and get the answer`,
    { reason: outcome.reason },
  );
}
