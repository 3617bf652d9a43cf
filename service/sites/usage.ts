import { sql } from 'drizzle-orm';
import type { UsageEntry } from '../../shared/account-api/usage.js';
import { rowsOf } from '../db/client.js';
import { sites } from '../db/schema/index.js';
import type { Deps } from '../deps.js';
import { ownerSubject, readCounters } from '../db/counters.js';
import { accountOwner } from '../db/owner.js';
import { accountQuotas } from '../accounts/quotas.js';

/** Usage counters contributed by sites: sites, files (largest site), storage bytes; read from the kept counts (db/counters.ts). */
export async function siteUsage(deps: Deps, accountId: string): Promise<Record<string, UsageEntry>> {
  const subject = ownerSubject(accountOwner(accountId));
  const [kept, fullest, limits] = await Promise.all([
    readCounters(deps.db, [subject]),
    // The fullest site: the first entry of sites_owner_account_files_idx (each site's kept file count).
    deps.db.execute(sql`select coalesce(max(${sites.fileCount}), 0) as n from ${sites} where ${sites.ownerAccountId} = ${accountId}`),
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
