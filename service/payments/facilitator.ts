import type { Authorization } from '../../shared/agent-api/payment-requirements.js';

/** A payment that passed the offline checks (signature, recipient, amount, window), ready for the chain. */
export interface VerifiedPayment {
  authorization: Authorization;
  signature: `0x${string}`;
  /** Atomic units required (equals authorization.value). */
  amount: bigint;
  payTo: string;
  asset: string;
  maxTimeoutSeconds: number;
  /** Absolute URL of the paid request (the x402 `resource`). */
  resource: string;
  description: string;
}

export interface FacilitatorVerifyResult {
  isValid: boolean;
  /** x402 reason code, e.g. insufficient_funds, nonce_already_used. */
  invalidReason?: string;
}

export interface FacilitatorSettleResult {
  success: boolean;
  /** Transaction hash (0x…) when success. */
  transaction: string;
  errorReason?: string;
}

export interface SupportedKind {
  x402Version: number;
  scheme: string;
  network: string;
}

/**
 * Settles x402 `exact` payments. The service always runs its own offline verifier first
 * (service/payments/verify-payment.ts: one verifier for both x402 generations); `verify` here adds
 * what only the chain knows (balance, authorization already used), `settle` moves the money.
 */
export interface Facilitator {
  readonly kind: 'dev' | 'chain' | 'remote';
  verify(payment: VerifiedPayment): Promise<FacilitatorVerifyResult>;
  /**
   * Checks a signature that is not a plain-key (ECDSA) signature of `from`: a deployed smart account's
   * (ERC-1271 `isValidSignature`), or one not deployed yet (ERC-6492, through an accepted factory).
   */
  verifySignature(payment: VerifiedPayment): Promise<FacilitatorVerifyResult>;
  /**
   * Whether a smart account signed a plain (EIP-191) message: ERC-1271 when deployed, ERC-6492 when
   * not yet (simulated in an eth_call, nothing sent). Sign-In-With-X proofs; absent where the
   * facilitator has no chain to ask (remote mode: plain-key proofs only).
   */
  verifyMessage?(address: `0x${string}`, message: string, signature: `0x${string}`): Promise<boolean>;
  /** `onSubmitted` is called with the hash as soon as the transaction is sent (before it is mined). */
  settle(payment: VerifiedPayment, onSubmitted?: (txHash: string) => void): Promise<FacilitatorSettleResult>;
  supported(): Promise<{ kinds: SupportedKind[] }>;
  /** Throws when the chain (or the remote facilitator) does not answer (readiness). */
  ping(): Promise<void>;
  /** Whether `(from, nonce)` was already used on chain; undefined when this facilitator cannot tell. */
  authorizationUsed(from: string, nonce: string): Promise<boolean | undefined>;
  close(): Promise<void>;
}

/** The dev facilitator also mints test USDC and reads balances (faucet, tests). */
export interface DevFacilitator extends Facilitator {
  readonly kind: 'dev';
  readonly rpcUrl: string;
  mint(to: string, atomic: bigint): Promise<string>;
  balanceOf(address: string): Promise<bigint>;
}

export function isDevFacilitator(f: Facilitator): f is DevFacilitator {
  return f.kind === 'dev';
}
