import { eq } from 'drizzle-orm';
import type { Config } from '../kernel/config.js';
import type { DbOrTx } from '../db/client.js';
import { accountLimits, sites } from '../db/schema/index.js';
import type { SiteOwner } from '../db/owner.js';

/**
 * The quotas that apply to one owner (docs/operator.md, "Per-account limits"): the service-wide
 * defaults of the configuration (SVC_MAX_SITES_PER_ACCOUNT…), each overridable for one account by
 * the operator (`svc-agent-host account limits`). Wallets (Agent API owners) have the defaults.
 * Function quotas keep the configuration's meaning of 0: no limit.
 */
export interface Quotas {
  sites: number;
  storageBytes: number;
  filesPerSite: number;
  fileBytes: number;
  functions: number;
  invocationsPerMonth: number;
  tablesPerSite: number;
}

export const QUOTA_NAMES = [
  'sites',
  'storageBytes',
  'filesPerSite',
  'fileBytes',
  'functions',
  'invocationsPerMonth',
  'tablesPerSite',
] as const satisfies readonly (keyof Quotas)[];
export type QuotaName = (typeof QUOTA_NAMES)[number];

export function defaultQuotas(config: Config): Quotas {
  return {
    sites: config.limits.maxSitesPerAccount,
    storageBytes: config.limits.maxStorageBytes,
    filesPerSite: config.limits.maxFilesPerSite,
    fileBytes: config.limits.maxFileBytes,
    functions: config.functions.maxFunctionsPerAccount,
    invocationsPerMonth: config.functions.maxInvocationsPerMonth,
    tablesPerSite: config.tables.maxTablesPerSite,
  };
}

export type Overrides = Partial<Record<QuotaName, number | null>>;

export function mergeQuotas(config: Config, row: Overrides | undefined): Quotas {
  const q = defaultQuotas(config);
  if (row) for (const name of QUOTA_NAMES) if (row[name] !== null && row[name] !== undefined) q[name] = row[name];
  return q;
}

/** An account's quotas: one primary-key read of its overrides. */
export async function accountQuotas(config: Config, db: DbOrTx, accountId: string): Promise<Quotas> {
  const [row] = await db.select().from(accountLimits).where(eq(accountLimits.accountId, accountId));
  return mergeQuotas(config, row);
}

export function ownerQuotas(config: Config, db: DbOrTx, owner: SiteOwner): Promise<Quotas> {
  return owner.kind === 'account' ? accountQuotas(config, db, owner.accountId) : Promise.resolve(defaultQuotas(config));
}

/** The quotas of a site's owner, by the site's id (one read). */
export async function siteOwnerQuotas(config: Config, db: DbOrTx, siteId: string): Promise<Quotas> {
  const [row] = await db
    .select({ limits: accountLimits })
    .from(sites)
    .leftJoin(accountLimits, eq(accountLimits.accountId, sites.ownerAccountId))
    .where(eq(sites.id, siteId));
  return mergeQuotas(config, row?.limits ?? undefined);
}
