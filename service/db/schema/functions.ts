import { bigint, boolean, index, integer, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { accounts } from './accounts.js';

/**
 * A Function owned by one account. `draftCode` is what PUT …/draft replaces; `liveCode` is the
 * published copy that invoke runs (null until the first publish). `slug` is global: the invoke path
 * names no account. A Function being deleted is `cleanup_pending` (invoke answers 404) until its
 * memory rows and secrets are gone.
 */
export const functions = pgTable(
  'functions',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    slug: text('slug').notNull(),
    draftCode: text('draft_code').notNull(),
    draftVersion: integer('draft_version').notNull().default(1),
    liveCode: text('live_code'),
    /** The draftVersion that was published last; null when never published. */
    liveVersion: integer('live_version'),
    publishedAt: timestamp('published_at', { withTimezone: true }),
    /** svc-user access: callers holding another account's personal key may invoke the live code. */
    allowUserInvoke: boolean('allow_user_invoke').notNull().default(false),
    state: text('state', { enum: ['active', 'cleanup_pending'] })
      .notNull()
      .default('active'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  // The account's list pages (newest first) read their rows in index order (scanned backwards).
  (t) => [uniqueIndex('functions_slug_idx').on(t.slug), index('functions_account_idx').on(t.accountId, t.createdAt, t.id)],
);

/** Configured secrets of a Function: set through the CLI or the dashboard; values are never returned. */
export const functionSecrets = pgTable(
  'function_secrets',
  {
    functionId: text('function_id')
      .notNull()
      .references(() => functions.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    value: text('value').notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.functionId, t.name] })],
);

/** SVC_MEMORY.caller: a small key-value store per (Function, calling account). Values are JSON text. */
export const functionMemory = pgTable(
  'function_memory',
  {
    functionId: text('function_id')
      .notNull()
      .references(() => functions.id, { onDelete: 'cascade' }),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    key: text('key').notNull(),
    value: text('value').notNull(),
    /** UTF-8 bytes of key + value, summed for the per-caller size limit. */
    bytes: integer('bytes').notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.functionId, t.accountId, t.key] })],
);

/** Invocations made by an account's keys, per UTC calendar month (`YYYY-MM`): usage and the monthly quota. */
export const functionInvocationCounts = pgTable(
  'function_invocation_counts',
  {
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    period: text('period').notNull(),
    count: bigint('count', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.period] })],
);
