import { type EIP712SignedReceipt, OFFER_RECEIPT, type ReceiptPayload, signReceiptEIP712 } from '@x402/extensions/offer-receipt';
import { keccak256, toBytes } from 'viem';
import { type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import { X402_NETWORK } from '../../shared/agent-api/network.js';
import type { Config } from '../config.js';

/**
 * Receipts of the x402 offer-receipt extension (`@x402/extensions/offer-receipt`): after a payment
 * settled, the answer's PAYMENT-RESPONSE (X-PAYMENT-RESPONSE for v1 clients; over MCP,
 * `_meta["x402/payment-response"]`) carries `extensions["offer-receipt"].info.receipt`, an EIP-712
 * signed `{version: 1, network, resourceUrl, payer, issuedAt, transaction}` that anyone verifies with
 * the extension's `verifyReceiptSignatureEIP712` (it recovers the signer: compare it with
 * `receiptSigner` of `GET /api/x402`). svc's own `receipt` and `receiptHash` stay in the body.
 *
 * The key: SVC_X402_RECEIPT_KEY, or else one derived from the service's secret, which every node
 * shares through the database (same signer on every node, another one per deployment).
 */
export interface ReceiptSigner {
  /** Lower-case address that signs (published in the discovery document). */
  address: string;
  sign(r: { resourceUrl: string; payer: string; transaction: string; issuedAt: Date }): Promise<EIP712SignedReceipt>;
}

const signers = new WeakMap<object, ReceiptSigner>();

export function receiptSignerOf(deps: { config: Config; secret: string }): ReceiptSigner {
  let signer = signers.get(deps);
  if (!signer) {
    const key = deps.config.x402.receiptKey ?? keccak256(toBytes(`svc offer-receipt key:${deps.secret}`));
    signer = signerFor(privateKeyToAccount(key));
    signers.set(deps, signer);
  }
  return signer;
}

function signerFor(account: PrivateKeyAccount): ReceiptSigner {
  return {
    address: account.address.toLowerCase(),
    async sign(r) {
      const payload: ReceiptPayload = {
        version: 1,
        network: X402_NETWORK,
        resourceUrl: r.resourceUrl,
        payer: r.payer,
        // The stored receipt's time, so a replayed answer carries the same signed receipt.
        issuedAt: Math.floor(r.issuedAt.getTime() / 1000),
        transaction: r.transaction,
      };
      const signature = await signReceiptEIP712(payload, (typed) => account.signTypedData(typed as Parameters<PrivateKeyAccount['signTypedData']>[0]));
      return { format: 'eip712', payload, signature };
    },
  };
}

/** The `extensions` of a PAYMENT-RESPONSE that carries a signed receipt. */
export function receiptExtension(receipt: EIP712SignedReceipt): Record<string, unknown> {
  return { [OFFER_RECEIPT]: { info: { receipt } } };
}
