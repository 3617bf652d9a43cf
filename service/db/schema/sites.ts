import { bigint, boolean, index, integer, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { accounts } from './accounts.js';

/**
 * A site (the Agent API calls it an app). Owned by exactly one account (Account API) or one wallet
 * (Agent API, lower-case 0x address).
 */
export const sites = pgTable(
  'sites',
  {
    id: text('id').primaryKey(),
    slug: text('slug').notNull(),
    ownerAccountId: text('owner_account_id').references(() => accounts.id, { onDelete: 'cascade' }),
    ownerWallet: text('owner_wallet'),
    visibility: text('visibility', { enum: ['public', 'private'] })
      .notNull()
      .default('public'),
    passwordHash: text('password_hash'),
    /** Whether the site is served at its URL (publish_app / unpublish_app). */
    published: boolean('published').notNull().default(true),
    /** Last transition of the Agent API state machine: created, updated, published. */
    status: text('status', { enum: ['created', 'updated', 'published'] })
      .notNull()
      .default('created'),
    entryPoint: text('entry_point').notNull().default('index.html'),
    /** Bumped on every content change; cache keys include it so no node serves stale files for long. */
    contentVersion: integer('content_version').notNull().default(1),
    /** An operator's takedown of this site (`svc-agent-host site suspend`): it answers 451; nothing is deleted. */
    suspendedAt: timestamp('suspended_at', { withTimezone: true }),
    suspensionReason: text('suspension_reason'),
    /**
     * Why the site's owner is suspended (account) or blocked (wallet), copied onto each of its sites
     * so that serving, the Table API and their node caches see it from the site row alone; null when
     * the owner is in good standing. Kept apart from the site's own suspension: restoring the owner
     * leaves a site suspended on its own suspended.
     */
    ownerSuspension: text('owner_suspension'),
    /**
     * The site's number of files, kept by the site_files trigger in the transaction of each change
     * (migration 0012), so the owner's fullest site is the first entry of an index, not a sum over
     * every site (usage's `filesPerSite`). The sharded `usage_counters` keep the same number for the
     * rest; this copy exists for the maximum, which deltas summed on read cannot give.
     */
    fileCount: integer('file_count').notNull().default(0),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  // An owner's list pages (newest first) read their rows in index order, whatever the number of sites.
  (t) => [
    uniqueIndex('sites_slug_idx').on(t.slug),
    index('sites_owner_account_idx').on(t.ownerAccountId, t.createdAt.desc().nullsFirst(), t.id),
    index('sites_owner_wallet_idx').on(t.ownerWallet, t.createdAt.desc().nullsFirst(), t.id),
    // An account's fullest site: the first entry.
    index('sites_owner_account_files_idx').on(t.ownerAccountId, t.fileCount.desc()),
  ],
);

export type SiteRow = typeof sites.$inferSelect;

export const siteFiles = pgTable(
  'site_files',
  {
    siteId: text('site_id')
      .notNull()
      .references(() => sites.id, { onDelete: 'cascade' }),
    path: text('path').notNull(),
    blobKey: text('blob_key').notNull(),
    size: bigint('size', { mode: 'number' }).notNull(),
    contentType: text('content_type').notNull(),
    sha256: text('sha256').notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.siteId, t.path] })],
);

/** `POST /api/v1/sites` is idempotent per (account, requestId): a repeat answers the first result. */
export const publishRequests = pgTable(
  'publish_requests',
  {
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    requestId: text('request_id').notNull(),
    siteId: text('site_id').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.requestId] })],
);
