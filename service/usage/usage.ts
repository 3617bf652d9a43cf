import type { UsageEntry } from '../../shared/account-api/usage.js';
import type { Deps } from '../deps.js';
import { siteUsage } from '../sites/usage.js';
import { tableUsage } from '../tables/usage.js';
import { functionUsage } from '../functions/usage.js';

export type UsageContributor = (deps: Deps, accountId: string) => Promise<Record<string, UsageEntry>>;

/** Each resource reports its own counters; add a resource's contributor here. */
const CONTRIBUTORS: UsageContributor[] = [siteUsage, tableUsage, functionUsage];

export async function accountUsage(deps: Deps, accountId: string): Promise<Record<string, UsageEntry>> {
  const parts = await Promise.all(CONTRIBUTORS.map((f) => f(deps, accountId)));
  return Object.assign({}, ...parts);
}
