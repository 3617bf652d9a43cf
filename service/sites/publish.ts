import { and, eq, lt } from 'drizzle-orm';
import type { DbOrTx } from '../db/client.js';
import { isUniqueViolation } from '../db/client.js';
import { publishRequests, sites } from '../db/schema/index.js';
import type { Deps } from '../deps.js';
import { AppError } from '../kernel/app-error.js';
import { accountOwner } from '../db/owner.js';
import type { VersionActor } from '../db/schema/site-versions.js';
import type { PublishSiteBody } from '../../shared/account-api/sites.js';
import { decodeInlineFile } from './inline-files.js';
import { createSite, newSiteId, viewSite, type SiteView } from './sites.js';

/**
 * `POST /api/v1/sites`: publishes a new site (an HTML document, and other files inline), idempotent per (account, requestId). The request row
 * is written in the same transaction as the site, so a concurrent duplicate waits on the unique key,
 * fails, and then answers the first result: one site, whatever the retries.
 */
export async function publishSite(deps: Deps, accountId: string, input: PublishSiteBody, by: VersionActor): Promise<{ site: SiteView; replayed: boolean }> {
  const replay = await findReplay(deps, accountId, input.requestId);
  if (replay) return { site: replay, replayed: true };
  try {
    const row = await deps.db.transaction(async (tx) => {
      const id = newSiteId();
      await tx.insert(publishRequests).values({ accountId, requestId: input.requestId, siteId: id });
      return createSite(
        deps,
        accountOwner(accountId),
        { id, slug: input.slug, html: input.html, files: input.files?.map(decodeInlineFile), status: 'published', by },
        tx,
      );
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

/** Housekeeping: a requestId is answered again for this long; after, the same id publishes anew. */
export const PUBLISH_REQUEST_DAYS = 30;

export async function prunePublishRequests(db: DbOrTx, now: Date): Promise<number> {
  const before = new Date(now.getTime() - PUBLISH_REQUEST_DAYS * 86_400_000);
  return (await db.delete(publishRequests).where(lt(publishRequests.createdAt, before)).returning({ id: publishRequests.requestId })).length;
}
