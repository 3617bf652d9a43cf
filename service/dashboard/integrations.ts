import type { Deps } from '../deps.js';
import type { SiteRow } from '../sites/sites.js';
import { deleteFunctionSecret, listOwnedFunctions, setAllowUserInvoke, setFunctionSecret } from '../functions/functions.js';
import { randomBytes } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import { tables } from '../db/schema/index.js';
import { AppError } from '../kernel/app-error.js';
import { accountOwner } from '../db/owner.js';
import { getOwnedSite } from '../sites/sites.js';
import { assertSiteActive } from '../sites/suspension.js';
import { hashWriteKey, listSiteTables, WRITE_KEY_PREFIX } from '../tables/tables.js';
import type { FunctionRowView } from './pages.js';

/**
 * What the dashboard needs from resources other engineers own (Tables, Functions). Each entry calls
 * their exported domain functions; `null` means the resource does not offer it on this server yet,
 * and the page says so instead of pretending.
 */
export interface DashboardResources {
  listTables: ((deps: Deps, site: SiteRow) => Promise<{ id: string; name: string; slug: string }[]>) | null;
  /** Makes a new write key for an owned table; the old one stops working. Returns the new key once. */
  regenerateWriteKey: ((deps: Deps, accountId: string, siteId: string, tableId: string) => Promise<{ table: string; key: string }>) | null;
  listFunctions: ((deps: Deps, accountId: string) => Promise<FunctionRowView[]>) | null;
  setUserAccess: ((deps: Deps, accountId: string, functionId: string, enabled: boolean) => Promise<void>) | null;
  setSecret: ((deps: Deps, accountId: string, functionId: string, name: string, value: string) => Promise<void>) | null;
  deleteSecret: ((deps: Deps, accountId: string, functionId: string, name: string) => Promise<void>) | null;
}

export const dashboardResources: DashboardResources = {
  listTables: async (deps, site) => (await listSiteTables(deps, site)).map((t) => ({ id: t.id, name: t.name, slug: t.slug })),
  // Tables offers no rotation function yet, so this is the one write it owns here: same key format and
  // hash as createTable, owner checked through the site (another account's table is a 404).
  regenerateWriteKey: async (deps, accountId, siteId, tableId) => {
    const site = await getOwnedSite(deps.db, accountOwner(accountId), siteId);
    // A suspended site's tables stay as they were until the operator restores it, as the Account API keeps them.
    assertSiteActive(site);
    const writeKey = `${WRITE_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
    const [row] = await deps.db
      .update(tables)
      .set({ writeKeyHash: hashWriteKey(writeKey), updatedAt: deps.clock.now() })
      .where(and(eq(tables.id, tableId), eq(tables.siteId, site.id)))
      .returning({ name: tables.name });
    if (!row) throw new AppError('not_found', `table ${tableId} not found`);
    return { table: row.name, key: writeKey };
  },
  listFunctions: async (deps, accountId) =>
    (await listOwnedFunctions(deps, accountId, { limit: 500, offset: 0 })).functions.map((f) => ({
      id: f.id,
      name: f.name,
      slug: f.slug,
      status: f.status,
      userAccess: f.allowUserInvoke,
      secretNames: f.secretNames,
    })),
  setUserAccess: async (deps, accountId, functionId, enabled) => {
    await setAllowUserInvoke(deps, accountId, functionId, enabled);
  },
  setSecret: async (deps, accountId, functionId, name, value) => {
    await setFunctionSecret(deps, accountId, functionId, name, value);
  },
  deleteSecret: async (deps, accountId, functionId, name) => {
    await deleteFunctionSecret(deps, accountId, functionId, name);
  },
};
