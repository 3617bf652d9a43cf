import { z } from 'zod';

const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/);
const atomic = z.string().regex(/^\d+$/).describe('Integer amount in atomic units (USDC has 6 decimals)');
const extra = z.object({ name: z.string(), version: z.string() }).describe('EIP-712 domain name/version of the asset');

/** One entry of `accepts` in the v1 402 JSON body (read by x402-fetch@1.2.0). */
export const PaymentRequirementV1Schema = z.object({
  scheme: z.literal('exact'),
  network: z.literal('base').describe('v1 name of chain 8453'),
  maxAmountRequired: atomic,
  resource: z.string().url().describe('Absolute URL of the paid request'),
  description: z.string(),
  mimeType: z.string(),
  payTo: address,
  maxTimeoutSeconds: z.number().int(),
  asset: address,
  outputSchema: z.unknown().optional(),
  extra,
});

/** The 402 JSON body: x402 v1. */
export const PaymentRequiredV1BodySchema = z
  .object({
    x402Version: z.literal(1),
    error: z.string(),
    accepts: z.array(PaymentRequirementV1Schema),
  })
  .meta({ id: 'PaymentRequiredV1' });

/** One entry of `accepts` in the v2 PAYMENT-REQUIRED header. */
export const PaymentRequirementV2Schema = z.object({
  scheme: z.literal('exact'),
  network: z.literal('eip155:8453'),
  amount: atomic,
  asset: address,
  payTo: address,
  maxTimeoutSeconds: z.number().int(),
  extra,
});

/** Decoded `PAYMENT-REQUIRED` header (base64 JSON): x402 v2. */
export const PaymentRequiredV2Schema = z.object({
  x402Version: z.literal(2),
  error: z.string().optional(),
  resource: z.object({ url: z.string().url(), description: z.string(), mimeType: z.string() }),
  accepts: z.array(PaymentRequirementV2Schema),
  extensions: z.record(z.string(), z.unknown()).optional(),
});

/** EIP-3009 authorization as both generations put it in the payload (decimal strings). */
export const AuthorizationSchema = z.object({
  from: address,
  to: address,
  value: atomic,
  validAfter: atomic,
  validBefore: atomic,
  nonce: z.string().regex(/^0x[0-9a-fA-F]{64}$/),
});

export const ExactEvmPayloadSchema = z.object({
  signature: z.string().regex(/^0x[0-9a-fA-F]+$/),
  authorization: AuthorizationSchema,
});

/** Decoded `X-PAYMENT` header (v1). */
export const PaymentPayloadV1Schema = z.object({
  x402Version: z.literal(1),
  scheme: z.literal('exact'),
  network: z.string(),
  payload: ExactEvmPayloadSchema,
});

/** Decoded `PAYMENT-SIGNATURE` header (v2). */
export const PaymentPayloadV2Schema = z.object({
  x402Version: z.literal(2),
  resource: z.unknown().optional(),
  accepted: z.object({
    scheme: z.literal('exact'),
    network: z.string(),
    amount: atomic,
    asset: address,
    payTo: address,
    maxTimeoutSeconds: z.number().int().optional(),
    extra: z.record(z.string(), z.unknown()).optional(),
  }),
  payload: ExactEvmPayloadSchema,
  extensions: z.record(z.string(), z.unknown()).optional(),
});

/** Decoded `X-PAYMENT-RESPONSE` / `PAYMENT-RESPONSE` header. */
export const PaymentResponseSchema = z.object({
  success: z.boolean(),
  transaction: z.string(),
  network: z.string(),
  payer: z.string(),
  errorReason: z.string().optional(),
});

export type PaymentRequirementV1 = z.infer<typeof PaymentRequirementV1Schema>;
export type PaymentRequiredV1Body = z.infer<typeof PaymentRequiredV1BodySchema>;
export type PaymentRequirementV2 = z.infer<typeof PaymentRequirementV2Schema>;
export type PaymentRequiredV2 = z.infer<typeof PaymentRequiredV2Schema>;
export type Authorization = z.infer<typeof AuthorizationSchema>;
export type PaymentPayloadV1 = z.infer<typeof PaymentPayloadV1Schema>;
export type PaymentPayloadV2 = z.infer<typeof PaymentPayloadV2Schema>;
export type PaymentResponse = z.infer<typeof PaymentResponseSchema>;
