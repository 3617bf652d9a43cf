import { count, eq, max } from 'drizzle-orm';
import type { UsageEntry } from '../../shared/account-api/usage.js';
import { siteFiles, sites } from '../db/schema/index.js';
import type { Deps } from '../deps.js';
import { accountOwner } from './owner.js';
import { ownerStorageBytes } from './sites.js';
import { accountQuotas } from '../accounts/quotas.js';

/** Usage counters contributed by sites: sites, files (largest site), storage bytes. */
export async function siteUsage(deps: Deps, accountId: string): Promise<Record<string, UsageEntry>> {
  const owner = accountOwner(accountId);
  const [siteCount] = await deps.db.select({ n: count() }).from(sites).where(eq(sites.ownerAccountId, accountId));
  const perSite = deps.db
    .select({ n: count().as('n') })
    .from(siteFiles)
    .innerJoin(sites, eq(sites.id, siteFiles.siteId))
    .where(eq(sites.ownerAccountId, accountId))
    .groupBy(siteFiles.siteId)
    .as('per_site');
  const [fullest] = await deps.db.select({ largest: max(perSite.n) }).from(perSite);
  const [fileTotal] = await deps.db
    .select({ n: count() })
    .from(siteFiles)
    .innerJoin(sites, eq(sites.id, siteFiles.siteId))
    .where(eq(sites.ownerAccountId, accountId));
  // The account's own quotas (an operator may have raised or lowered some: docs/operator.md).
  const limits = await accountQuotas(deps.config, deps.db, accountId);
  return {
    sites: { used: Number(siteCount?.n ?? 0), limit: limits.sites, unit: 'sites' },
    files: { used: Number(fileTotal?.n ?? 0), limit: null, unit: 'files across all sites' },
    filesPerSite: { used: Number(fullest?.largest ?? 0), limit: limits.filesPerSite, unit: 'files in the fullest site' },
    storageBytes: { used: await ownerStorageBytes(deps.db, owner), limit: limits.storageBytes, unit: 'bytes of site files' },
    fileBytes: { used: 0, limit: limits.fileBytes, unit: 'bytes per file (limit only)' },
  };
}
