import { and, eq, sum } from 'drizzle-orm';
import type { UsageEntry } from '../../shared/account-api/usage.js';
import { datasets, sites, tables } from '../db/schema/index.js';
import type { Deps } from '../deps.js';
import { accountQuotas } from '../accounts/quotas.js';
import { accountOwner } from '../db/owner.js';
import { ownerSubject, readCounters } from '../db/counters.js';

/** Usage counters contributed by Tables: tables (and datasets) and the records they hold. */
export async function tableUsage(deps: Deps, accountId: string): Promise<Record<string, UsageEntry>> {
  const subject = ownerSubject(accountOwner(accountId));
  const [kept, [d]] = await Promise.all([
    readCounters(deps.db, [subject]),
    // Datasets in column storage keep their count on the dataset row: one row per dataset, not per record.
    deps.db
      .select({ n: sum(datasets.recordCount) })
      .from(datasets)
      .innerJoin(tables, eq(tables.id, datasets.tableId))
      .innerJoin(sites, eq(sites.id, datasets.siteId))
      .where(and(eq(sites.ownerAccountId, accountId), eq(tables.storage, 'columns'))),
  ]);
  const counts = kept.get(subject) ?? {};
  return {
    tables: {
      used: counts.tables ?? 0,
      limit: null,
      unit: `tables and datasets across all sites (at most ${(await accountQuotas(deps.config, deps.db, accountId)).tablesPerSite} per site)`,
    },
    tableRecords: { used: (counts.records ?? 0) + Number(d?.n ?? 0), limit: null, unit: 'records in tables and datasets' },
  };
}
