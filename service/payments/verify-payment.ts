import { isAddressEqual, type Address, type Hex } from 'viem';
import {
  BASE_CHAIN_ID,
  TRANSFER_WITH_AUTHORIZATION_TYPES,
  USDC_ADDRESS,
  USDC_EIP712_NAME,
  USDC_EIP712_VERSION,
  X402_NETWORK,
  X402_NETWORK_V1,
} from '../../shared/agent-api/network.js';
import type { PaymentAttempt } from './decode-payment.js';
import { PaymentRequiredError } from './payment-required.js';
import { transferSigner } from './transfer-signature.js';

export interface PaymentExpectation {
  amount: bigint;
  recipient: string;
  nowSeconds: number;
  maxTimeoutSeconds: number;
  /** false: skip the validity window (used to look up a replay of an already-accepted payment). */
  checkWindow?: boolean;
}

/** Seconds a settlement needs before the authorization expires (x402's own facilitator uses 6). */
const SETTLE_MARGIN_SECONDS = 6;
/** Clock skew tolerated on the upper bound of the window. */
const SKEW_SECONDS = 60;

/** The EIP-712 TransferWithAuthorization an x402 `exact` payment signs (USDC on chain 8453). */
export function transferAuthorizationTypedData(a: PaymentAttempt['authorization']) {
  return {
    domain: { name: USDC_EIP712_NAME, version: USDC_EIP712_VERSION, chainId: BASE_CHAIN_ID, verifyingContract: USDC_ADDRESS },
    types: TRANSFER_WITH_AUTHORIZATION_TYPES,
    primaryType: 'TransferWithAuthorization' as const,
    message: {
      from: a.from as Address,
      to: a.to as Address,
      value: BigInt(a.value),
      validAfter: BigInt(a.validAfter),
      validBefore: BigInt(a.validBefore),
      nonce: a.nonce as Hex,
    },
  };
}

export interface OfflineVerdict {
  /** The payer (lower-case `from`). */
  payer: string;
  /**
   * `key`: a plain-key (ECDSA) signature of `from`, checked here. `contract`: not an ECDSA signature
   * of `from`; it may be a smart account's (ERC-1271, or ERC-6492 before deployment), which only the
   * chain can check: the caller must have the facilitator check it before trusting the payment.
   */
  signedBy: 'key' | 'contract';
}

/**
 * The one verifier for both x402 generations, offline: `to` = our recipient; value = price exactly;
 * the domain is USDC on chain 8453 (v1 "base" and v2 "eip155:8453" both bind it); validAfter ≤ now <
 * validBefore − margin, and validBefore no further out than we asked for; the EIP-712
 * TransferWithAuthorization signature, as USDC takes it (low s, v 27/28), recovers to `from` (else the verdict says the
 * chain must check it). The `(from, nonce)` uniqueness and the on-chain checks come after (payment
 * store, facilitator).
 */
export async function verifyPaymentOffline(p: PaymentAttempt, e: PaymentExpectation): Promise<OfflineVerdict> {
  const refuse = (reason: string, message: string): never => {
    throw new PaymentRequiredError(reason, message);
  };
  if (p.scheme !== 'exact') refuse('unsupported_scheme', `scheme ${p.scheme} is not accepted; use "exact"`);
  const networkOk = p.version === 1 ? p.network === X402_NETWORK_V1 : p.network === X402_NETWORK;
  if (!networkOk)
    refuse('invalid_network', `network ${p.network} is not accepted; pay on ${p.version === 1 ? X402_NETWORK_V1 : X402_NETWORK} (chain ${BASE_CHAIN_ID})`);
  if (p.accepted) {
    if (!isAddressEqual(p.accepted.asset as Address, USDC_ADDRESS)) refuse('invalid_asset', `asset ${p.accepted.asset} is not USDC (${USDC_ADDRESS})`);
    if (!isAddressEqual(p.accepted.payTo as Address, e.recipient as Address))
      refuse('invalid_exact_evm_payload_recipient_mismatch', `payTo must be ${e.recipient}`);
    if (BigInt(p.accepted.amount) !== e.amount)
      refuse('invalid_exact_evm_payload_authorization_value', `accepted amount ${p.accepted.amount} differs from the price ${e.amount}`);
  }
  const a = p.authorization;
  if (!isAddressEqual(a.to as Address, e.recipient as Address))
    refuse('invalid_exact_evm_payload_recipient_mismatch', `the authorization pays ${a.to}; pay ${e.recipient}`);
  const value = BigInt(a.value);
  if (value !== e.amount) {
    refuse('invalid_exact_evm_payload_authorization_value', `the authorization is for ${value} atomic USDC; this action costs exactly ${e.amount}`);
  }
  if (e.checkWindow !== false) assertPaymentWindow(p, e);
  const signer = await transferSigner(a, p.signature);
  return { payer: a.from.toLowerCase(), signedBy: signer === a.from.toLowerCase() ? 'key' : 'contract' };
}

/** The refusal of a signature that neither `from`'s key nor (on chain) its contract wallet accepts. */
export function invalidSignature(reason?: string): PaymentRequiredError {
  return new PaymentRequiredError(
    'invalid_exact_evm_payload_signature',
    reason === 'factory_not_allowed'
      ? 'the signature deploys a smart account through a factory this service does not accept (ERC-6492); deploy the account first, or pay from another wallet'
      : 'the signature does not match the authorization (tampered, wrong domain or wrong signer; checked as a plain key and as a smart account, ERC-1271/ERC-6492)',
  );
}

/** validAfter ≤ now < validBefore − settle margin, and validBefore no further out than we asked for. */
export function assertPaymentWindow(p: PaymentAttempt, e: PaymentExpectation): void {
  const refuse = (reason: string, message: string): never => {
    throw new PaymentRequiredError(reason, message);
  };
  const a = p.authorization;
  if (BigInt(a.validAfter) > BigInt(e.nowSeconds)) refuse('invalid_exact_evm_payload_authorization_valid_after', 'the authorization is not valid yet');
  if (BigInt(a.validBefore) <= BigInt(e.nowSeconds + SETTLE_MARGIN_SECONDS))
    refuse('invalid_exact_evm_payload_authorization_valid_before', 'the authorization has expired (or expires too soon to settle); sign a new one');
  if (BigInt(a.validBefore) > BigInt(e.nowSeconds + e.maxTimeoutSeconds + SKEW_SECONDS)) {
    refuse('invalid_exact_evm_payload_authorization_valid_before', `the authorization is valid for longer than the ${e.maxTimeoutSeconds} s asked for`);
  }
}
