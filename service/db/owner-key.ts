import type { SiteOwner } from './owner.js';

/**
 * A stable key for per-owner quotas, rate limits and kept counts: `acct:<id>` or `wallet:<address>`,
 * as the database's `svc_owner_key` writes it in the count triggers (drizzle/0011_usage_counters.sql).
 * Here, below the feature folders, so the counts (db/counters.ts) need no runtime import of sites/.
 */
export function ownerKey(owner: SiteOwner): string {
  return owner.kind === 'account' ? `acct:${owner.accountId}` : `wallet:${owner.wallet}`;
}
