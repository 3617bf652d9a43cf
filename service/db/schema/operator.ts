import { bigint, index, integer, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { accounts } from './accounts.js';

/**
 * Every operator act (suspend, restore, block, unblock, limits): who, when, why. Rows are only ever
 * added; `svc-agent-host audit list` reads them.
 */
export const auditLog = pgTable(
  'audit_log',
  {
    id: text('id').primaryKey(),
    at: timestamp('at', { withTimezone: true }).notNull(),
    /** Who acted: the operator's user and host as the CLI saw them, or what the admin endpoint's caller named. */
    actor: text('actor').notNull(),
    action: text('action').notNull(),
    targetKind: text('target_kind', { enum: ['site', 'account', 'wallet'] }).notNull(),
    /** The site id, account email or wallet address acted on. */
    target: text('target').notNull(),
    reason: text('reason').notNull(),
    details: jsonb('details'),
  },
  (t) => [index('audit_log_at_idx').on(t.at), index('audit_log_target_idx').on(t.target)],
);

/** Wallets an operator blocked (`svc-agent-host wallet block`): their Agent API calls are refused before any payment is looked at. */
export const walletBlocks = pgTable('wallet_blocks', {
  /** Lower-case 0x address. */
  wallet: text('wallet').primaryKey(),
  reason: text('reason').notNull(),
  blockedAt: timestamp('blocked_at', { withTimezone: true }).notNull(),
  blockedBy: text('blocked_by').notNull(),
});

/**
 * One account's own quotas (`svc-agent-host account limits`), each overriding the service-wide
 * default of the configuration; null keeps the default.
 */
export const accountLimits = pgTable('account_limits', {
  accountId: text('account_id')
    .primaryKey()
    .references(() => accounts.id, { onDelete: 'cascade' }),
  sites: integer('sites'),
  storageBytes: bigint('storage_bytes', { mode: 'number' }),
  filesPerSite: integer('files_per_site'),
  fileBytes: bigint('file_bytes', { mode: 'number' }),
  functions: integer('functions'),
  invocationsPerMonth: integer('invocations_per_month'),
  tablesPerSite: integer('tables_per_site'),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
});
