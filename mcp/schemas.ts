import { z } from 'zod';

export const QuoteSchema = z.object({
  action: z.string().describe('Agent API action'),
  tool: z.string().describe('MCP tool name'),
  price: z.string().describe('Decimal USDC the call costs'),
  currency: z.literal('USDC'),
  allowed: z.boolean().describe('Whether the spend caps allow paying it now'),
  headroom: z.string().describe('The most the next paid call may cost under every cap (USDC)'),
  refusal: z.string().nullable().describe('Why it would be refused, if it would'),
  walletConfigured: z.boolean(),
});

export const PaymentInfoSchema = z
  .object({
    price: z.string().describe('USDC paid'),
    receiptId: z.string().nullable(),
    txHash: z.string().nullable().describe('Settlement transaction'),
  })
  .nullable()
  .describe('The payment this call made; null when it was free');

export const dryRunArg = z.boolean().optional().describe('true: only report the price and the spend-cap headroom; nothing is sent or paid');
export const maxPriceArg = z
  .string()
  .regex(/^(0|[1-9]\d*)(\.\d{1,6})?$/)
  .optional()
  .describe(
    'The most you agree to pay for this call, in USDC (default: the advertised price). After a "price changed" refusal, pass the new price to accept it; the spend caps still apply.',
  );
