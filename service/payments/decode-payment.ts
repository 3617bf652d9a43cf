import { PAYMENT_HEADERS } from '../../shared/agent-api/network.js';
import { PaymentPayloadV1Schema, PaymentPayloadV2Schema, type Authorization, type PaymentPayloadV2 } from '../../shared/agent-api/payment-requirements.js';
import { PaymentRequiredError } from './payment-required.js';

/** A payment header of either generation, normalised. */
export interface PaymentAttempt {
  version: 1 | 2;
  /** Network label as the client sent it ("base" for v1, "eip155:8453" for v2). */
  network: string;
  scheme: string;
  authorization: Authorization;
  signature: `0x${string}`;
  /** v2 only: the requirement the client says it accepted. */
  accepted?: PaymentPayloadV2['accepted'];
  extensions?: Record<string, unknown>;
}

function decodeJson(header: string): unknown {
  try {
    return JSON.parse(Buffer.from(header, 'base64').toString('utf8'));
  } catch {
    throw new PaymentRequiredError('invalid_payment_header', 'the payment header is not base64-encoded JSON');
  }
}

/** Reads PAYMENT-SIGNATURE (v2) or X-PAYMENT (v1); null when neither is present. */
export function decodePaymentHeader(get: (name: string) => string | undefined): PaymentAttempt | null {
  const v2 = get(PAYMENT_HEADERS.v2Request);
  const v1 = get(PAYMENT_HEADERS.v1Request);
  if (v2) {
    const parsed = PaymentPayloadV2Schema.safeParse(decodeJson(v2));
    if (!parsed.success)
      throw new PaymentRequiredError('invalid_payment_payload', `PAYMENT-SIGNATURE is not an x402 v2 exact payment: ${parsed.error.issues[0]?.message}`);
    const p = parsed.data;
    return {
      version: 2,
      network: p.accepted.network,
      scheme: p.accepted.scheme,
      authorization: p.payload.authorization,
      signature: p.payload.signature as `0x${string}`,
      accepted: p.accepted,
      extensions: p.extensions,
    };
  }
  if (v1) {
    const raw = decodeJson(v1) as { x402Version?: unknown };
    const parsed = PaymentPayloadV1Schema.safeParse({ ...(raw as object), x402Version: raw?.x402Version === 2 ? 1 : raw?.x402Version });
    if (!parsed.success)
      throw new PaymentRequiredError('invalid_payment_payload', `X-PAYMENT is not an x402 exact payment: ${parsed.error.issues[0]?.message}`);
    const p = parsed.data;
    return { version: 1, network: p.network, scheme: p.scheme, authorization: p.payload.authorization, signature: p.payload.signature as `0x${string}` };
  }
  return null;
}
