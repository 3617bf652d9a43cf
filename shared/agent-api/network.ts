/**
 * The one network and asset the Agent API is priced in: USDC on Base mainnet. The same constants are
 * used by the local dev chain (anvil with chain id 8453 and our EIP-3009 test token placed at the USDC
 * address), so a signature made for development is shaped exactly like a production one.
 */
export const X402_NETWORK = 'eip155:8453' as const;
/** x402 v1 clients (x402-fetch@1.2.0) only accept v1 network names; `base` is chain 8453. */
export const X402_NETWORK_V1 = 'base' as const;
export const BASE_CHAIN_ID = 8453;
export const X402_CURRENCY = 'USDC' as const;
/** Native USDC on Base mainnet. */
export const USDC_ADDRESS = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913' as const;
/** EIP-712 domain of the token (`extra` in the payment requirements). */
export const USDC_EIP712_NAME = 'USD Coin';
export const USDC_EIP712_VERSION = '2';
export const X402_SCHEME = 'exact' as const;

/** EIP-3009 typed data both x402 generations sign. */
export const TRANSFER_WITH_AUTHORIZATION_TYPES = {
  TransferWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
} as const;

/** Payment headers (request and response) of both generations; CORS allows and exposes them. */
export const PAYMENT_HEADERS = {
  v1Request: 'X-PAYMENT',
  v1Response: 'X-PAYMENT-RESPONSE',
  v2Required: 'PAYMENT-REQUIRED',
  v2Request: 'PAYMENT-SIGNATURE',
  v2Response: 'PAYMENT-RESPONSE',
  idempotencyKey: 'Idempotency-Key',
  /** x402 `sign-in-with-x` extension: a wallet's signed SIWE proof, for free calls that need its identity. */
  signInWithX: 'SIGN-IN-WITH-X',
} as const;
