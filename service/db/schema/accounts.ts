import { bigint, index, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

export const accounts = pgTable('accounts', {
  id: text('id').primaryKey(),
  email: text('email').notNull().unique(),
  /** scrypt hash for dashboard sign-in; null for accounts made by the CLI that never set one. */
  passwordHash: text('password_hash'),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  /** Set by an operator (`svc-agent-host account suspend`): its credentials and sessions are refused, its sites suspended. */
  suspendedAt: timestamp('suspended_at', { withTimezone: true }),
  suspensionReason: text('suspension_reason'),
});

/** Personal API keys `svc_pat_<secret>`: only the SHA-256 of the whole key is stored. */
export const personalKeys = pgTable(
  'personal_keys',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    /** The first characters of the key, safe to show in lists (`svc_pat_AbCd…`). */
    prefix: text('prefix').notNull(),
    hash: text('hash').notNull().unique(),
    scopes: text('scopes').array().notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true }),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
  },
  (t) => [index('personal_keys_account_idx').on(t.accountId)],
);

/** Fixed-window counters for rate limits; shared by every node through the database. */
export const rateLimitWindows = pgTable(
  'rate_limit_windows',
  {
    key: text('key').notNull(),
    windowStart: bigint('window_start', { mode: 'number' }).notNull(),
    count: bigint('count', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.key, t.windowStart] })],
);

/** Service-wide settings every node shares, e.g. the HMAC secret generated on first start. */
export const settings = pgTable('settings', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
});
