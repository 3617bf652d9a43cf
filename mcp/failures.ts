/* Failures a tool turns into an `isError` result (mcp/results.ts renders them). */

/** A tool failure with the sentence the agent reads: what failed, what it cost, what to do. */
export class ToolFailure extends Error {
  constructor(
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export const X402_META = {
  payment: 'x402/payment',
  paymentResponse: 'x402/payment-response',
  error: 'x402/error',
  /** A Sign-In-With-X proof for a free call that needs the wallet (list_apps): the SIGN-IN-WITH-X header's base64 string, or its JSON object. */
  signIn: 'x402/sign-in-with-x',
  /** A paid tool's price in `tools/list` (`{paymentRequired: true, accepts}`), read before any call. */
  toolPrice: 'x402',
} as const;

/**
 * The service asked for payment (hosted endpoint, x402 MCP transport): the tool result carries the
 * PaymentRequired object so the client's wallet can sign it and call again with `_meta`.
 */
export class PaymentRequiredFailure extends ToolFailure {
  constructor(
    message: string,
    readonly paymentRequired: Record<string, unknown>,
    readonly paymentResponse?: Record<string, unknown>,
  ) {
    super(message);
  }
}
