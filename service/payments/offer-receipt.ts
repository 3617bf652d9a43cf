import {
  type EIP712SignedOffer,
  type EIP712SignedReceipt,
  OFFER_RECEIPT,
  type OfferPayload,
  type ReceiptPayload,
  signOfferEIP712,
  signReceiptEIP712,
} from '@x402/extensions/offer-receipt';
import { LruMap } from '../../shared/lru-map.js';
import { keccak256, toBytes } from 'viem';
import { type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import { X402_NETWORK } from '../../shared/agent-api/network.js';
import type { Config } from '../kernel/config.js';

/**
 * The x402 offer-receipt extension (`@x402/extensions/offer-receipt`), both halves, signed with one
 * key.
 *
 * Offers: a paid action's 402 (its v2 PAYMENT-REQUIRED, and so the PaymentRequired of the MCP
 * tools, which carry the HTTP one's extensions) carries `extensions["offer-receipt"].info.offers`,
 * one EIP-712 signed `{version: 1, resourceUrl, scheme, network, asset, payTo, amount,
 * validUntil}` per `accepts` entry (`acceptIndex`), which a client verifies with
 * `verifyOfferSignatureEIP712` and later matches a receipt against (`verifyReceiptMatchesOffer`).
 * An offer is valid for the payment's own window (`maxTimeoutSeconds`) and is signed again once
 * half of it has passed: 402s are unauthenticated and frequent, so one signature serves many.
 *
 * Receipts: after a payment
 * settled, the answer's PAYMENT-RESPONSE (X-PAYMENT-RESPONSE for v1 clients; over MCP,
 * `_meta["x402/payment-response"]`) carries `extensions["offer-receipt"].info.receipt`, an EIP-712
 * signed `{version: 1, network, resourceUrl, payer, issuedAt, transaction}` that anyone verifies with
 * the extension's `verifyReceiptSignatureEIP712` (it recovers the signer: compare it with
 * `receiptSigner` of `GET /api/x402`). svc's own `receipt` and `receiptHash` stay in the body.
 *
 * The key: SVC_X402_RECEIPT_KEY, or else one derived from the service's secret, which every node
 * shares through the database (same signer on every node, another one per deployment).
 */
export interface OfferReceiptSigner {
  /** Lower-case address that signs (published in the discovery document). */
  address: string;
  /** The signed receipt of a settled payment. */
  receipt(r: { resourceUrl: string; payer: string; transaction: string; issuedAt: Date }): Promise<EIP712SignedReceipt>;
  /** The signed offers of a 402's `accepts` for `resourceUrl`, as of `now`; none past NEW_OFFERS_PER_SECOND. */
  offers(resourceUrl: string, accepts: readonly OfferTerms[], now: Date): Promise<EIP712SignedOffer[]>;
}

/** What an offer signs of one `accepts` entry of a v2 PAYMENT-REQUIRED. */
export interface OfferTerms {
  scheme: string;
  network: string;
  asset: string;
  payTo: string;
  amount: string;
  maxTimeoutSeconds: number;
}

/** Signed offers kept per node (by resource and terms), reused until half their validity passed. */
const KEPT_OFFERS = 1000;
/**
 * New offer signatures a node makes in a second at most (each ~1.3 ms of CPU): a 402 is asked for
 * without payment, so beyond this (many different resource URLs at once) a 402 goes without offers,
 * which the extension leaves optional, rather than let unpaid requests spend the CPU.
 */
const NEW_OFFERS_PER_SECOND = 50;

const signers = new WeakMap<object, OfferReceiptSigner>();

export function offerReceiptSignerOf(deps: { config: Config; secret: string }): OfferReceiptSigner {
  let signer = signers.get(deps);
  if (!signer) {
    const key = deps.config.x402.receiptKey ?? keccak256(toBytes(`svc offer-receipt key:${deps.secret}`));
    signer = signerFor(privateKeyToAccount(key));
    signers.set(deps, signer);
  }
  return signer;
}

function signerFor(account: PrivateKeyAccount): OfferReceiptSigner {
  const signTypedData = (typed: unknown) => account.signTypedData(typed as Parameters<PrivateKeyAccount['signTypedData']>[0]);
  const kept = new LruMap<string, EIP712SignedOffer>(KEPT_OFFERS);
  const fresh = { second: 0, count: 0 };
  const offer = async (resourceUrl: string, terms: OfferTerms, acceptIndex: number, now: Date): Promise<EIP712SignedOffer | null> => {
    const seconds = Math.floor(now.getTime() / 1000);
    const key = [resourceUrl, acceptIndex, terms.scheme, terms.network, terms.asset, terms.payTo, terms.amount, terms.maxTimeoutSeconds].join(' ');
    const hit = kept.get(key);
    if (hit && hit.payload.validUntil - seconds >= terms.maxTimeoutSeconds / 2) return hit;
    if (fresh.second !== seconds) Object.assign(fresh, { second: seconds, count: 0 });
    if (++fresh.count > NEW_OFFERS_PER_SECOND) return null;
    const payload: OfferPayload = {
      version: 1,
      resourceUrl,
      scheme: terms.scheme,
      network: terms.network,
      asset: terms.asset,
      payTo: terms.payTo,
      amount: terms.amount,
      validUntil: seconds + terms.maxTimeoutSeconds,
    };
    const signed: EIP712SignedOffer = { format: 'eip712', acceptIndex, payload, signature: await signOfferEIP712(payload, signTypedData) };
    kept.set(key, signed);
    return signed;
  };
  return {
    address: account.address.toLowerCase(),
    offers: async (resourceUrl, accepts, now) =>
      (await Promise.all(accepts.map((terms, i) => offer(resourceUrl, terms, i, now)))).filter((o): o is EIP712SignedOffer => o !== null),
    async receipt(r) {
      const payload: ReceiptPayload = {
        version: 1,
        network: X402_NETWORK,
        resourceUrl: r.resourceUrl,
        payer: r.payer,
        // The stored receipt's time, so a replayed answer carries the same signed receipt.
        issuedAt: Math.floor(r.issuedAt.getTime() / 1000),
        transaction: r.transaction,
      };
      const signature = await signReceiptEIP712(payload, signTypedData);
      return { format: 'eip712', payload, signature };
    },
  };
}

/** The `extensions` of a PAYMENT-REQUIRED that carries signed offers (none when there are none). */
export function offersExtension(offers: EIP712SignedOffer[]): Record<string, unknown> {
  return offers.length ? { [OFFER_RECEIPT]: { info: { offers } } } : {};
}

/** The `extensions` of a PAYMENT-RESPONSE that carries a signed receipt. */
export function receiptExtension(receipt: EIP712SignedReceipt): Record<string, unknown> {
  return { [OFFER_RECEIPT]: { info: { receipt } } };
}
