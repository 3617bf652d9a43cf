import { and, asc, count, desc, eq, lt, sql } from 'drizzle-orm';
import type { Config } from '../kernel/config.js';
import type { DbOrTx } from '../db/client.js';
import { countOf } from '../db/client.js';
import { siteFiles, sites, siteVersionFiles, siteVersions, versionRetention } from '../db/schema/index.js';
import type { SiteVersionRow, VersionActor } from '../db/schema/site-versions.js';
import type { SiteRow } from '../db/schema/sites.js';
import type { Deps } from '../deps.js';
import { AppError } from '../kernel/app-error.js';
import type { RollbackBody, SiteVersionDetail, SiteVersionView } from '../../shared/account-api/site-versions.js';
import { lockOwnerQuota, assertStorageQuota, recordSiteFiles, siteUrls } from './sites.js';
import { ownerQuotas } from '../accounts/quotas.js';
import { assertSiteActive } from './suspension.js';
import { PREVIEW_PREFIX } from './version-records.js';
import { ownerOfSite } from '../db/owner.js';

/*
 * Versions: every change of a site's file set (sites.ts recordSiteFiles, the one place it happens)
 * is recorded as an immutable manifest of the site's files. Blobs are shared: a version names the
 * blobs the site's files named when it was made, and a new file whose bytes the site already holds
 * (in its files or in any kept version) reuses that blob. A rollback copies an older manifest into
 * the site's files, which makes a new version. Retention prunes old versions (pruneVersions); the
 * orphan-blob sweep counts every kept version's blobs as referenced.
 */

export function previewUrl(config: Config, slug: string, version: number): string {
  return `${siteUrls(config, slug).pathUrl}${PREVIEW_PREFIX}${version}/`;
}

async function currentVersion(db: DbOrTx, siteId: string): Promise<number> {
  const [row] = await db
    .select({ version: siteVersions.version })
    .from(siteVersions)
    .where(eq(siteVersions.siteId, siteId))
    .orderBy(desc(siteVersions.version))
    .limit(1);
  return row?.version ?? 0;
}

function toVersionView(config: Config, site: SiteRow, row: SiteVersionRow, current: number): SiteVersionView {
  return {
    version: row.version,
    current: row.version === current,
    createdAt: row.createdAt.toISOString(),
    action: row.action,
    summary: row.summary,
    by: row.actor,
    fileCount: row.fileCount,
    bytes: row.bytes,
    entryPoint: row.entryPoint,
    rollbackOf: row.rollbackOf,
    previewUrl: previewUrl(config, site.slug, row.version),
  };
}

/** The site's kept versions, newest first, with the one it serves marked. */
export async function listVersions(deps: Deps, site: SiteRow, page: { limit: number; offset: number }, db: DbOrTx = deps.db) {
  const rows = await db
    .select()
    .from(siteVersions)
    .where(eq(siteVersions.siteId, site.id))
    .orderBy(desc(siteVersions.version))
    .limit(page.limit)
    .offset(page.offset);
  const total = countOf(await db.select({ n: count() }).from(siteVersions).where(eq(siteVersions.siteId, site.id)));
  const current = page.offset === 0 && rows[0] ? rows[0].version : await currentVersion(db, site.id);
  return { siteId: site.id, current, versions: rows.map((r) => toVersionView(deps.config, site, r, current)), total, ...page };
}

async function versionRow(db: DbOrTx, site: SiteRow, version: number): Promise<SiteVersionRow> {
  const [row] = await db
    .select()
    .from(siteVersions)
    .where(and(eq(siteVersions.siteId, site.id), eq(siteVersions.version, version)));
  if (!row) {
    const current = await currentVersion(db, site.id);
    throw new AppError(
      'not_found',
      version > current
        ? `site ${site.slug} has no version ${version}: its newest is ${current}`
        : `version ${version} of site ${site.slug} is no longer kept (the retention setting pruned it); list the versions kept`,
      { site: site.id, version, current },
    );
  }
  return row;
}

/** One version with its file list. */
export async function getVersion(deps: Deps, site: SiteRow, version: number): Promise<SiteVersionDetail> {
  const row = await versionRow(deps.db, site, version);
  const files = await deps.db
    .select({ path: siteVersionFiles.path, size: siteVersionFiles.size, contentType: siteVersionFiles.contentType, sha256: siteVersionFiles.sha256 })
    .from(siteVersionFiles)
    .where(and(eq(siteVersionFiles.siteId, site.id), eq(siteVersionFiles.version, version)))
    .orderBy(asc(siteVersionFiles.path));
  return { ...toVersionView(deps.config, site, row, await currentVersion(deps.db, site.id)), files };
}

/**
 * Makes `version`'s files (and entry point) the site's, in one transaction under the owner's lock,
 * recorded as a new version; served at once on every node (recordSiteFiles announces the change).
 * A `requestId` seen before on this site answers the version it made, and changes nothing.
 */
export async function rollbackSite(
  deps: Deps,
  site: SiteRow,
  input: RollbackBody,
  by: VersionActor,
  db: DbOrTx = deps.db,
): Promise<{ site: SiteRow; version: SiteVersionView; replayed: boolean }> {
  return db.transaction(async (tx) => {
    await lockOwnerQuota(tx, ownerOfSite(site));
    const [fresh] = await tx.select().from(sites).where(eq(sites.id, site.id));
    if (!fresh) throw new AppError('not_found', `site ${site.id} was deleted meanwhile`);
    // A suspended site's files stay as the operator found them until it is restored.
    assertSiteActive(fresh);
    if (input.requestId !== undefined) {
      const [done] = await tx
        .select()
        .from(siteVersions)
        .where(and(eq(siteVersions.siteId, site.id), eq(siteVersions.requestId, input.requestId)));
      if (done) {
        if (done.rollbackOf !== input.version)
          throw new AppError('conflict', `requestId "${input.requestId}" already rolled this site back to version ${done.rollbackOf}; use a new requestId`);
        return { site: fresh, version: toVersionView(deps.config, fresh, done, await currentVersion(tx, site.id)), replayed: true };
      }
    }
    const target = await versionRow(tx, fresh, input.version);
    const files = await tx
      .select({
        path: siteVersionFiles.path,
        blobKey: siteVersionFiles.blobKey,
        size: siteVersionFiles.size,
        contentType: siteVersionFiles.contentType,
        sha256: siteVersionFiles.sha256,
      })
      .from(siteVersionFiles)
      .where(and(eq(siteVersionFiles.siteId, site.id), eq(siteVersionFiles.version, input.version)));
    const current = await tx.select({ path: siteFiles.path, size: siteFiles.size }).from(siteFiles).where(eq(siteFiles.siteId, site.id));
    const keep = new Set(files.map((f) => f.path));
    const remove = current.filter((f) => !keep.has(f.path)).map((f) => f.path);
    const growth = files.reduce((n, f) => n + f.size, 0) - current.reduce((n, f) => n + f.size, 0);
    if (growth > 0) await assertStorageQuota(tx, ownerOfSite(fresh), growth, (await ownerQuotas(deps.config, tx, ownerOfSite(fresh))).storageBytes);
    const row = await recordSiteFiles(
      deps,
      fresh,
      { write: files, remove, entryPoint: target.entryPoint, by, action: 'rollback', rollbackOf: input.version, requestId: input.requestId },
      tx,
    );
    const [made] = await tx.select().from(siteVersions).where(eq(siteVersions.siteId, site.id)).orderBy(desc(siteVersions.version)).limit(1);
    return { site: row, version: toVersionView(deps.config, row, made!, made!.version), replayed: false };
  });
}

/** How many versions of an account's sites (or a wallet's) are kept: the operator's default, or the account's own. */
export interface Retention {
  keepLast: number;
  keepDays: number;
}

/**
 * Prunes versions past the retention: a version goes when it is neither among the site's last
 * `keepLast` (never fewer than 1: the one it serves stays) nor newer than `keepDays` days. Site by
 * site, each under its owner's quota lock (blobOfContent, rollbackSite). Returns how many went.
 */
export async function pruneVersions(deps: Deps, now: Date): Promise<number> {
  const { keepLast, keepDays } = deps.config.versions;
  const candidates = await deps.db
    .select({ siteId: siteVersions.siteId, n: count(), keepLast: versionRetention.keepLast, keepDays: versionRetention.keepDays })
    .from(siteVersions)
    .innerJoin(sites, eq(sites.id, siteVersions.siteId))
    .leftJoin(versionRetention, eq(versionRetention.accountId, sites.ownerAccountId))
    .groupBy(siteVersions.siteId, versionRetention.keepLast, versionRetention.keepDays)
    .having(sql`count(*) > greatest(1, coalesce(${versionRetention.keepLast}, ${keepLast}))`);
  let pruned = 0;
  for (const c of candidates) {
    const last = Math.max(1, c.keepLast ?? keepLast);
    const before = new Date(now.getTime() - (c.keepDays ?? keepDays) * 86_400_000);
    pruned += await deps.db.transaction(async (tx) => {
      const [site] = await tx.select().from(sites).where(eq(sites.id, c.siteId));
      if (!site) return 0;
      await lockOwnerQuota(tx, ownerOfSite(site));
      const [edge] = await tx
        .select({ version: siteVersions.version })
        .from(siteVersions)
        .where(eq(siteVersions.siteId, c.siteId))
        .orderBy(desc(siteVersions.version))
        .limit(1)
        .offset(last - 1);
      if (!edge) return 0;
      const gone = await tx
        .delete(siteVersions)
        .where(and(eq(siteVersions.siteId, c.siteId), lt(siteVersions.version, edge.version), lt(siteVersions.createdAt, before)))
        .returning({ version: siteVersions.version });
      return gone.length;
    });
  }
  return pruned;
}

/** The retention an account's sites follow (its own when set, else the operator's). */
export async function retentionOf(deps: Deps, accountId: string | null): Promise<Retention> {
  if (accountId) {
    const [own] = await deps.db.select().from(versionRetention).where(eq(versionRetention.accountId, accountId));
    if (own) return { keepLast: own.keepLast, keepDays: own.keepDays };
  }
  return { ...deps.config.versions };
}

/** Sets (or, with null, removes) an account's own retention. */
export async function setRetention(deps: Deps, accountId: string, retention: Retention | null): Promise<Retention> {
  if (retention === null) {
    await deps.db.delete(versionRetention).where(eq(versionRetention.accountId, accountId));
    return { ...deps.config.versions };
  }
  await deps.db
    .insert(versionRetention)
    .values({ accountId, ...retention })
    .onConflictDoUpdate({ target: versionRetention.accountId, set: retention });
  return retention;
}

/** Refuses a rollback that could not happen (a version not kept), before any payment; a requestId answered before passes (it is replayed). */
export async function assertCanRollBack(deps: Deps, site: SiteRow, input: RollbackBody): Promise<void> {
  assertSiteActive(site);
  if (input.requestId !== undefined) {
    const [done] = await deps.db
      .select({ version: siteVersions.version })
      .from(siteVersions)
      .where(and(eq(siteVersions.siteId, site.id), eq(siteVersions.requestId, input.requestId)));
    if (done) return;
  }
  await versionRow(deps.db, site, input.version);
}
