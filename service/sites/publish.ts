import { and, eq } from 'drizzle-orm';
import { isUniqueViolation } from '../db/client.js';
import { newId } from '../db/ids.js';
import { publishRequests, sites } from '../db/schema/index.js';
import type { Deps } from '../deps.js';
import { AppError } from '../http/app-error.js';
import { accountOwner } from './owner.js';
import { createSite, viewSite, type SiteView } from './sites.js';

/**
 * `POST /api/v1/sites`: publishes a new site, idempotent per (account, requestId). The request row
 * is written in the same transaction as the site, so a concurrent duplicate waits on the unique key,
 * fails, and then answers the first result: one site, whatever the retries.
 */
export async function publishSite(
  deps: Deps,
  accountId: string,
  input: { requestId: string; html: string; slug?: string },
): Promise<{ site: SiteView; replayed: boolean }> {
  const replay = await findReplay(deps, accountId, input.requestId);
  if (replay) return { site: replay, replayed: true };
  try {
    const row = await deps.db.transaction(async (tx) => {
      const id = newId('site');
      await tx.insert(publishRequests).values({ accountId, requestId: input.requestId, siteId: id });
      return createSite(deps, accountOwner(accountId), { id, slug: input.slug, html: input.html, status: 'published' }, tx);
    });
    return { site: await viewSite(deps, row), replayed: false };
  } catch (e) {
    if (isUniqueViolation(e)) {
      const again = await findReplay(deps, accountId, input.requestId);
      if (again) return { site: again, replayed: true };
    }
    throw e;
  }
}

async function findReplay(deps: Deps, accountId: string, requestId: string): Promise<SiteView | null> {
  const [req] = await deps.db
    .select()
    .from(publishRequests)
    .where(and(eq(publishRequests.accountId, accountId), eq(publishRequests.requestId, requestId)));
  if (!req) return null;
  const [site] = await deps.db.select().from(sites).where(eq(sites.id, req.siteId));
  if (!site) {
    throw new AppError('conflict', `requestId "${requestId}" was already used for site ${req.siteId}, which has since been deleted; use a new requestId`);
  }
  return viewSite(deps, site);
}
