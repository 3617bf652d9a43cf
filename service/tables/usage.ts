import { and, count, eq, sum } from 'drizzle-orm';
import type { UsageEntry } from '../../shared/account-api/usage.js';
import { datasets, sites, tableRecords, tables } from '../db/schema/index.js';
import type { Deps } from '../deps.js';
import { accountQuotas } from '../accounts/quotas.js';

/** Usage counters contributed by Tables: tables (and datasets) and the records they hold. */
export async function tableUsage(deps: Deps, accountId: string): Promise<Record<string, UsageEntry>> {
  const [t] = await deps.db.select({ n: count() }).from(tables).innerJoin(sites, eq(sites.id, tables.siteId)).where(eq(sites.ownerAccountId, accountId));
  const [r] = await deps.db
    .select({ n: count() })
    .from(tableRecords)
    .innerJoin(tables, eq(tables.id, tableRecords.tableId))
    .innerJoin(sites, eq(sites.id, tables.siteId))
    .where(eq(sites.ownerAccountId, accountId));
  // Datasets in column storage keep their count on the dataset row (a count(*) would read every row).
  const [d] = await deps.db
    .select({ n: sum(datasets.recordCount) })
    .from(datasets)
    .innerJoin(tables, eq(tables.id, datasets.tableId))
    .innerJoin(sites, eq(sites.id, datasets.siteId))
    .where(and(eq(sites.ownerAccountId, accountId), eq(tables.storage, 'columns')));
  return {
    tables: {
      used: Number(t?.n ?? 0),
      limit: null,
      unit: `tables and datasets across all sites (at most ${(await accountQuotas(deps.config, deps.db, accountId)).tablesPerSite} per site)`,
    },
    tableRecords: { used: Number(r?.n ?? 0) + Number(d?.n ?? 0), limit: null, unit: 'records in tables and datasets' },
  };
}
