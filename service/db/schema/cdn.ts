import { bigserial, index, integer, pgTable, smallint, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * The CDN purge outbox (service/cdn/purge-outbox.ts): the surrogate keys a change of a site made
 * stale, written in the change's own transaction (so a purge exists exactly when the change
 * committed) and deleted once the CDN confirmed the purge. Any node drains it.
 */
export const cdnPurges = pgTable(
  'cdn_purges',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    /** Surrogate keys (service/cdn/surrogate-keys.ts). */
    keys: text('keys').array().notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    /** When a node may take it next: now when written, later while a node holds it or after a failure (backoff). */
    dueAt: timestamp('due_at', { withTimezone: true }).notNull(),
    /** 1: the purge right after the change; 2: the second one, once every node's serving cache has surely dropped the old files. */
    round: smallint('round').notNull().default(1),
    /** Failed attempts of this round (the backoff). */
    attempts: integer('attempts').notNull().default(0),
    lastError: text('last_error'),
  },
  (t) => [index('cdn_purges_due_idx').on(t.dueAt)],
);
