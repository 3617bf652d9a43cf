import type { AgentAction } from '../../shared/agent-api/action.js';
import { PAYMENT_HEADERS, USDC_ADDRESS, USDC_EIP712_NAME, USDC_EIP712_VERSION, X402_NETWORK, X402_NETWORK_V1 } from '../../shared/agent-api/network.js';
import type { PaymentRequiredV1Body, PaymentRequiredV2 } from '../../shared/agent-api/payment-requirements.js';
import type { Config } from '../kernel/config.js';
import { AppError } from '../kernel/app-error.js';
import { v1OutputSchemaOf } from './bazaar.js';
import { priceOf } from './prices.js';

export interface PaymentContext {
  action: AgentAction;
  /** Absolute URL of the request being paid. */
  resource: string;
  /** x402 v2 extensions declared in PAYMENT-REQUIRED (sign-in-with-x on free identity calls). */
  extensions?: Record<string, unknown>;
}

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64');

export function paymentDescription(config: Config, action: AgentAction): string {
  const { price } = priceOf(config, action);
  return `${action.name}: ${action.description} Price ${price} USDC.`;
}

/** The `accepts` of an action's v2 PAYMENT-REQUIRED (what its signed offers sign, offer-receipt.ts). */
export function v2AcceptsOf(config: Config, action: AgentAction): PaymentRequiredV2['accepts'] {
  return [
    {
      scheme: 'exact',
      network: X402_NETWORK,
      amount: priceOf(config, action).amount.toString(),
      asset: USDC_ADDRESS,
      payTo: config.x402.recipient,
      maxTimeoutSeconds: config.x402.maxTimeoutSeconds,
      extra: { name: USDC_EIP712_NAME, version: USDC_EIP712_VERSION },
    },
  ];
}

/**
 * A paid action's `accepts`, or undefined where the deployment charges nothing for it: what the
 * hosted MCP endpoints list in the tool's `_meta.x402` before any call (cli/hosted-mcp.ts).
 */
export function paidAcceptsOf(config: Config, action: AgentAction): PaymentRequiredV2['accepts'] | undefined {
  return priceOf(config, action).amount > 0n ? v2AcceptsOf(config, action) : undefined;
}

/** The 402 answer both x402 generations read: v1 JSON body (network "base") + v2 PAYMENT-REQUIRED header (eip155:8453). */
export function paymentRequiredResponse(config: Config, ctx: PaymentContext, reason: string, message: string): Response {
  const { amount } = priceOf(config, ctx.action);
  const extra = { name: USDC_EIP712_NAME, version: USDC_EIP712_VERSION };
  const description = paymentDescription(config, ctx.action);
  const v1: PaymentRequiredV1Body & { ok: false; message: string } = {
    ok: false,
    x402Version: 1,
    error: reason,
    message,
    accepts: [
      {
        scheme: 'exact',
        network: X402_NETWORK_V1,
        maxAmountRequired: amount.toString(),
        resource: ctx.resource,
        description,
        mimeType: 'application/json',
        payTo: config.x402.recipient,
        maxTimeoutSeconds: config.x402.maxTimeoutSeconds,
        asset: USDC_ADDRESS,
        // x402 v1's discovery form (Bazaar v1: method, body fields, output schema).
        outputSchema: v1OutputSchemaOf(ctx.action),
        extra,
      },
    ],
  };
  const v2: PaymentRequiredV2 = {
    x402Version: 2,
    error: reason,
    resource: { url: ctx.resource, description, mimeType: 'application/json' },
    accepts: v2AcceptsOf(config, ctx.action),
    ...(ctx.extensions && Object.keys(ctx.extensions).length ? { extensions: ctx.extensions } : {}),
  };
  return new Response(JSON.stringify(v1), {
    status: 402,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', [PAYMENT_HEADERS.v2Required]: b64(v2) },
  });
}

/**
 * "Pay (again)": thrown before any work when the payment is missing or refused. The Agent API route
 * turns it into the 402 of paymentRequiredResponse; elsewhere it is a plain 402 error envelope.
 * `reason` is an x402-style code (payment_required, invalid_exact_evm_payload_signature, …).
 */
export class PaymentRequiredError extends AppError {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super('payment_required', message, { reason });
  }
}
