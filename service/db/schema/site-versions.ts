import { bigint, date, foreignKey, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { accounts } from './accounts.js';
import { sites } from './sites.js';

/** Who made a version: an account through one of its credentials, a wallet, or the operator. */
export type VersionActor =
  | { kind: 'account'; accountId: string; credential: { kind: 'personal_key' | 'oauth_token' | 'dashboard_session'; id: string } }
  | { kind: 'wallet'; wallet: string }
  | { kind: 'operator' };

/**
 * Every change of a site's file set is a version: an immutable manifest of the site's files (their
 * blobs are the site's own, shared by every version that names them) with who made it and a summary.
 * The newest version of a site is the one it serves; a rollback copies an older manifest into a new
 * version (sites/versions.ts).
 */
export const siteVersions = pgTable(
  'site_versions',
  {
    siteId: text('site_id')
      .notNull()
      .references(() => sites.id, { onDelete: 'cascade' }),
    version: integer('version').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    actor: jsonb('actor').$type<VersionActor>().notNull(),
    /** What made it: a new site, a change of files, an upload, or a rollback. */
    action: text('action', { enum: ['create', 'change', 'upload', 'rollback'] }).notNull(),
    summary: text('summary').notNull(),
    entryPoint: text('entry_point').notNull(),
    fileCount: integer('file_count').notNull(),
    bytes: bigint('bytes', { mode: 'number' }).notNull(),
    /** The version a rollback restored. */
    rollbackOf: integer('rollback_of'),
    /** A rollback's requestId: the same one again answers this version. */
    requestId: text('request_id'),
  },
  (t) => [primaryKey({ columns: [t.siteId, t.version] }), uniqueIndex('site_versions_request_idx').on(t.siteId, t.requestId)],
);

export type SiteVersionRow = typeof siteVersions.$inferSelect;

export const siteVersionFiles = pgTable(
  'site_version_files',
  {
    siteId: text('site_id').notNull(),
    version: integer('version').notNull(),
    path: text('path').notNull(),
    blobKey: text('blob_key').notNull(),
    size: bigint('size', { mode: 'number' }).notNull(),
    contentType: text('content_type').notNull(),
    sha256: text('sha256').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.siteId, t.version, t.path] }),
    foreignKey({ columns: [t.siteId, t.version], foreignColumns: [siteVersions.siteId, siteVersions.version] }).onDelete('cascade'),
    index('site_version_files_sha_idx').on(t.siteId, t.sha256),
  ],
);

/** An account's own retention of versions, over the operator's default (SVC_VERSIONS_KEEP_LAST / _DAYS). */
export const versionRetention = pgTable('version_retention', {
  accountId: text('account_id')
    .primaryKey()
    .references(() => accounts.id, { onDelete: 'cascade' }),
  keepLast: integer('keep_last').notNull(),
  keepDays: integer('keep_days').notNull(),
});

/**
 * Requests and bytes a site served per UTC day, previews apart. Each node adds what it counted since
 * its last flush (sites/traffic.ts), so nodes never count one request twice.
 */
export const siteTraffic = pgTable(
  'site_traffic',
  {
    siteId: text('site_id')
      .notNull()
      .references(() => sites.id, { onDelete: 'cascade' }),
    day: date('day', { mode: 'string' }).notNull(),
    requests: bigint('requests', { mode: 'number' }).notNull().default(0),
    bytes: bigint('bytes', { mode: 'number' }).notNull().default(0),
    previewRequests: bigint('preview_requests', { mode: 'number' }).notNull().default(0),
    previewBytes: bigint('preview_bytes', { mode: 'number' }).notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.siteId, t.day] })],
);
