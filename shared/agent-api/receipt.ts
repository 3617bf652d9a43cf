import { z } from 'zod';

/**
 * The receipt every paid (or identity-proving) Agent API answer carries: the spec's 14 fields.
 * `receiptHash` = lower-case hex SHA-256 of `canonicalReceiptText(receipt)` — see RECEIPT_HASH_FIELDS.
 */
export const ReceiptSchema = z
  .object({
    receiptId: z.string().describe('Stable identifier of this receipt (rcpt_…)'),
    action: z.string().describe('Catalogue action name, e.g. x402.create_app_from_html'),
    wallet: z.string().describe('Paying wallet, lower-case 0x address'),
    network: z.string().describe('CAIP-2 network, eip155:8453'),
    txHash: z.string().describe('Settlement transaction hash; empty for zero-value identity proofs (list_apps)'),
    recipient: z.string().describe('Receiving wallet, lower-case 0x address'),
    price: z.string().describe('Decimal USDC amount paid, e.g. "0.007"'),
    currency: z.string().describe('USDC'),
    appId: z.string().describe('App the action touched; empty when none'),
    appName: z.string().describe('Slug of that app; empty when none'),
    visibility: z.enum(['private', 'public']).describe('Visibility of that app after the action (private when none)'),
    status: z.string().describe('"settled" for paid actions, "verified" for zero-value identity proofs'),
    createdAt: z.string().describe('ISO-8601 UTC time the receipt was issued'),
    receiptHash: z.string().describe('SHA-256 (hex) over the other 13 fields in canonical form'),
  })
  .meta({ id: 'Receipt' });

export type Receipt = z.infer<typeof ReceiptSchema>;

/** Order of the fields hashed into receiptHash. */
export const RECEIPT_HASH_FIELDS = [
  'receiptId',
  'action',
  'wallet',
  'network',
  'txHash',
  'recipient',
  'price',
  'currency',
  'appId',
  'appName',
  'visibility',
  'status',
  'createdAt',
] as const satisfies readonly (keyof Receipt)[];

/**
 * Canonical form: the 13 fields in RECEIPT_HASH_FIELDS order as a JSON array of strings
 * (`JSON.stringify([receiptId, action, …, createdAt])`, no whitespace), UTF-8 encoded.
 * Anyone can recompute `sha256(canonicalReceiptText(r))` and compare it with `r.receiptHash`.
 */
export function canonicalReceiptText(r: Omit<Receipt, 'receiptHash'>): string {
  return JSON.stringify(RECEIPT_HASH_FIELDS.map((f) => String(r[f])));
}
