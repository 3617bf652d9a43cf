import { bigint, index, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * One row per EIP-3009 authorization the Agent API accepted: `(payer, nonce)` is claimed before any
 * work, so a nonce is used once. `requestHash` binds it to one request (a replay for another request
 * is refused); `response` holds the first answer (a replay for the same request gets it again).
 * Status (transitions: service/payments/payment-store.ts): working (claimed; the work runs) →
 * settling (work and answer durable; the money is being collected, outside any transaction) →
 * committed (settled; receipt final) | failed (settlement refused or unconfirmed: the work stands and
 * the authorization is collected later by a retry of the same payment or by reconcile while it is
 * valid). Free identity proofs go working → committed. orphaned: money moved but the work never
 * committed (the earlier design, which settled inside the work's transaction); a replay of the same
 * payment for the same request does the work without charging again. pending: the earlier design's
 * claim of a free proof.
 */
export const x402Payments = pgTable(
  'x402_payments',
  {
    payer: text('payer').notNull(),
    nonce: text('nonce').notNull(),
    action: text('action').notNull(),
    requestHash: text('request_hash').notNull(),
    status: text('status', { enum: ['working', 'settling', 'committed', 'failed', 'orphaned', 'pending'] }).notNull(),
    amount: text('amount').notNull(),
    validBefore: bigint('valid_before', { mode: 'number' }).notNull(),
    /** The signed authorization + signature (JSON), kept for reconciliation. */
    payload: jsonb('payload').notNull(),
    txHash: text('tx_hash'),
    receiptId: text('receipt_id'),
    /** HTTP status and body of the first answer. */
    responseStatus: bigint('response_status', { mode: 'number' }),
    response: jsonb('response'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.payer, t.nonce] }), index('x402_payments_status_idx').on(t.status)],
);

/** Every receipt issued (spec's 14 fields, exactly as returned and hashed). */
export const x402Receipts = pgTable(
  'x402_receipts',
  {
    receiptId: text('receipt_id').primaryKey(),
    action: text('action').notNull(),
    wallet: text('wallet').notNull(),
    network: text('network').notNull(),
    txHash: text('tx_hash').notNull(),
    recipient: text('recipient').notNull(),
    price: text('price').notNull(),
    currency: text('currency').notNull(),
    appId: text('app_id').notNull(),
    appName: text('app_name').notNull(),
    visibility: text('visibility', { enum: ['private', 'public'] }).notNull(),
    status: text('status').notNull(),
    /** ISO text exactly as hashed. */
    createdAt: text('created_at').notNull(),
    receiptHash: text('receipt_hash').notNull(),
    payerNonce: text('payer_nonce').notNull(),
  },
  (t) => [index('x402_receipts_wallet_idx').on(t.wallet)],
);

/** `Idempotency-Key` per wallet: the same key with the same request returns the stored answer, unpaid. */
export const x402Idempotency = pgTable(
  'x402_idempotency',
  {
    wallet: text('wallet').notNull(),
    key: text('key').notNull(),
    requestHash: text('request_hash').notNull(),
    payer: text('payer').notNull(),
    nonce: text('nonce').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.wallet, t.key] })],
);

/**
 * Sign-In-With-X proofs accepted (x402 `sign-in-with-x` extension, service/payments/sign-in-with-x.ts):
 * the message's nonce is claimed here before the call runs, so a proof signs in once, on any node.
 * Kept until the proof could no longer be accepted anyway (`expiresAt`), then purged by housekeeping.
 */
export const siwxNonces = pgTable(
  'siwx_nonces',
  {
    nonce: text('nonce').primaryKey(),
    address: text('address').notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (t) => [index('siwx_nonces_expires_at_idx').on(t.expiresAt)],
);
