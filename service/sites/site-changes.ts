import { sql } from 'drizzle-orm';
import type { Database, DbOrTx } from '../db/client.js';
import type { Deps } from '../deps.js';
import type { Logger } from '../kernel/logger.js';
import type { SiteCache } from './site-cache.js';
import { keysToPurge, type SiteChange } from '../cdn/surrogate-keys.js';

/**
 * Cross-node invalidation of the site cache: a change to a site row is announced with `pg_notify`
 * in the changing transaction (delivered when it commits, never when it rolls back), and every node
 * LISTENs and drops what it cached for that site. The cache's TTL stays as the fallback for a
 * notification lost while a node's LISTEN connection was down; a node that (re)starts listening
 * clears its whole site cache, since it cannot know what it missed.
 */
export const SITE_CHANGES_CHANNEL = 'svc_site_changes';

interface SiteKey {
  id: string;
  slug: string;
}

/**
 * Drops the site from this node's cache now, and from every node's (this one again) when `db`
 * commits; with a CDN in front, records what the change made stale there (`change`: all of the
 * site unless the caller names the files) in the purge outbox, in the same transaction.
 */
export async function siteChanged(deps: Deps, db: DbOrTx, site: SiteKey, change: SiteChange = { all: true }): Promise<void> {
  deps.siteCache.invalidate(site);
  await db.execute(sql`select pg_notify(${SITE_CHANGES_CHANNEL}, ${JSON.stringify({ id: site.id, slug: site.slug })})`);
  await deps.purges.enqueue(db, keysToPurge(site.id, change));
}

/**
 * Keeps `cache` in step with changes made by any node, and calls `onChange` after each (a change
 * committed) and after each (re)start of listening (what was missed is unknown), once the cache
 * dropped what it made stale; returns the function that stops listening.
 */
export function followSiteChanges(database: Database, cache: SiteCache, log: Logger, onChange: () => void = () => {}): () => Promise<void> {
  return database.listen(
    SITE_CHANGES_CHANNEL,
    (payload) => {
      try {
        const site = JSON.parse(payload) as SiteKey;
        cache.invalidate(site);
      } catch {
        log.warn('site change notification not understood; site cache cleared', { payload: payload.slice(0, 200) });
        cache.clear();
      }
      // After the cache dropped the site: a purge this starts cannot be refilled from this node's old copy.
      onChange();
    },
    () => {
      cache.clear();
      onChange();
    },
  );
}
