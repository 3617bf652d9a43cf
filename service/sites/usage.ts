import { sql } from 'drizzle-orm';
import type { UsageEntry } from '../../shared/account-api/usage.js';
import { rowsOf } from '../db/client.js';
import type { Deps } from '../deps.js';
import { ownerSubject, readCounters } from '../db/counters.js';
import { accountOwner } from './owner.js';
import { accountQuotas } from '../accounts/quotas.js';

/** Usage counters contributed by sites: sites, files (largest site), storage bytes; read from the kept counts (db/counters.ts). */
export async function siteUsage(deps: Deps, accountId: string): Promise<Record<string, UsageEntry>> {
  const subject = ownerSubject(accountOwner(accountId));
  const [kept, fullest, limits] = await Promise.all([
    readCounters(deps.db, [subject]),
    // The fullest site: one kept count per site of the account (their number, not their files).
    deps.db.execute(sql`
      select coalesce(max(n), 0) as n from (
        select sum(c.value) as n from sites s join usage_counters c on c.subject = 'site:' || s.id and c.metric = 'files'
        where s.owner_account_id = ${accountId} group by s.id
      ) per_site`),
    // The account's own quotas (an operator may have raised or lowered some: docs/operator.md).
    accountQuotas(deps.config, deps.db, accountId),
  ]);
  const counts = kept.get(subject) ?? {};
  return {
    sites: { used: counts.sites ?? 0, limit: limits.sites, unit: 'sites' },
    files: { used: counts.files ?? 0, limit: null, unit: 'files across all sites' },
    filesPerSite: { used: Number(rowsOf<{ n: string | number }>(fullest)[0]?.n ?? 0), limit: limits.filesPerSite, unit: 'files in the fullest site' },
    storageBytes: { used: counts.bytes ?? 0, limit: limits.storageBytes, unit: 'bytes of site files' },
    fileBytes: { used: 0, limit: limits.fileBytes, unit: 'bytes per file (limit only)' },
  };
}
