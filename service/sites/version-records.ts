import { and, asc, desc, eq, sql } from 'drizzle-orm';
import type { DbOrTx } from '../db/client.js';
import { siteFiles, siteVersionFiles, siteVersions } from '../db/schema/index.js';
import type { SiteVersionRow, VersionActor } from '../db/schema/site-versions.js';
import type { SiteRow } from '../db/schema/sites.js';
import type { Clock } from '../kernel/clock.js';

/*
 * The writing side of versions (versions.ts reads, rolls back and prunes them): what recordSiteFiles
 * (sites.ts, the one place a site's files change) calls to record each change as a version, and
 * what serving reads to answer a preview.
 */

export type VersionAction = SiteVersionRow['action'];

/** Prefix of a version's preview inside a site's path: `/s/<slug>/__svc/v/<n>/`. */
export const PREVIEW_PREFIX = '__svc/v/';

/**
 * A blob of the site holding these bytes (a file's or a kept version's), to reuse rather than store
 * them again. Callers hold the owner's quota lock, which pruning takes too: a version's blob found
 * here is not pruned (and then swept) before the caller's rows naming it commit.
 */
export async function blobOfContent(db: DbOrTx, siteId: string, sha256: string): Promise<string | undefined> {
  const [file] = await db
    .select({ blobKey: siteFiles.blobKey })
    .from(siteFiles)
    .where(and(eq(siteFiles.siteId, siteId), eq(siteFiles.sha256, sha256)))
    .limit(1);
  if (file) return file.blobKey;
  const [kept] = await db
    .select({ blobKey: siteVersionFiles.blobKey })
    .from(siteVersionFiles)
    .where(and(eq(siteVersionFiles.siteId, siteId), eq(siteVersionFiles.sha256, sha256)))
    .limit(1);
  return kept?.blobKey;
}

export interface VersionMark {
  by: VersionActor;
  action: VersionAction;
  rollbackOf?: number;
  requestId?: string;
}

/** Records the site's files as they now are (in `db`, after the change) as its next version; returns its number. */
export async function recordVersion(deps: { clock: Clock }, db: DbOrTx, site: SiteRow, mark: VersionMark): Promise<number> {
  const [prev] = await db
    .select({ version: siteVersions.version, entryPoint: siteVersions.entryPoint })
    .from(siteVersions)
    .where(eq(siteVersions.siteId, site.id))
    .orderBy(desc(siteVersions.version))
    .limit(1);
  const version = (prev?.version ?? 0) + 1;
  const files = await db
    .select({ path: siteFiles.path, sha256: siteFiles.sha256, size: siteFiles.size })
    .from(siteFiles)
    .where(eq(siteFiles.siteId, site.id))
    .orderBy(asc(siteFiles.path));
  const before = prev
    ? await db
        .select({ path: siteVersionFiles.path, sha256: siteVersionFiles.sha256 })
        .from(siteVersionFiles)
        .where(and(eq(siteVersionFiles.siteId, site.id), eq(siteVersionFiles.version, prev.version)))
    : [];
  let summary = summarise(before, files, mark.action);
  if (prev && prev.entryPoint !== site.entryPoint) summary += `; "/" serves ${site.entryPoint}`;
  if (mark.rollbackOf !== undefined) summary = `rolled back to version ${mark.rollbackOf}: ${summary}`;
  await db.insert(siteVersions).values({
    siteId: site.id,
    version,
    createdAt: deps.clock.now(),
    actor: mark.by,
    action: mark.action,
    summary,
    entryPoint: site.entryPoint,
    fileCount: files.length,
    bytes: files.reduce((n, f) => n + f.size, 0),
    rollbackOf: mark.rollbackOf ?? null,
    requestId: mark.requestId ?? null,
  });
  await db.execute(
    sql`insert into site_version_files (site_id, version, path, blob_key, size, content_type, sha256)
        select site_id, ${version}, path, blob_key, size, content_type, sha256 from site_files where site_id = ${site.id}`,
  );
  return version;
}

/** Names at most three paths of a list, then how many more. */
function some(paths: string[]): string {
  const shown = paths.slice(0, 3).join(', ');
  return paths.length > 3 ? `${shown} and ${paths.length - 3} more` : shown;
}

/** One line: what changed from `before` to `after` (the first version: what it holds). */
export function summarise(before: { path: string; sha256: string }[], after: { path: string; sha256: string }[], action: VersionAction): string {
  if (action === 'create') return `published ${after.length} file${after.length === 1 ? '' : 's'} (${some(after.map((f) => f.path))})`;
  const old = new Map(before.map((f) => [f.path, f.sha256]));
  const now = new Set(after.map((f) => f.path));
  const added = after.filter((f) => !old.has(f.path)).map((f) => f.path);
  const changed = after.filter((f) => old.has(f.path) && old.get(f.path) !== f.sha256).map((f) => f.path);
  const removed = before.filter((f) => !now.has(f.path)).map((f) => f.path);
  const parts = [
    ...(added.length ? [`added ${some(added)}`] : []),
    ...(changed.length ? [`changed ${some(changed)}`] : []),
    ...(removed.length ? [`removed ${some(removed)}`] : []),
  ];
  return parts.length ? parts.join('; ') : 'no file changed';
}

/** The version row and one file of it, for serving a preview; null when either is not there. */
export async function previewFile(db: DbOrTx, siteId: string, version: number, candidatesOf: (entryPoint: string) => string[]) {
  const [row] = await db
    .select({ entryPoint: siteVersions.entryPoint })
    .from(siteVersions)
    .where(and(eq(siteVersions.siteId, siteId), eq(siteVersions.version, version)));
  if (!row) return { kept: false as const };
  for (const path of candidatesOf(row.entryPoint)) {
    const [file] = await db
      .select({ contentType: siteVersionFiles.contentType, sha256: siteVersionFiles.sha256, size: siteVersionFiles.size, blobKey: siteVersionFiles.blobKey })
      .from(siteVersionFiles)
      .where(and(eq(siteVersionFiles.siteId, siteId), eq(siteVersionFiles.version, version), eq(siteVersionFiles.path, path)));
    if (file) return { kept: true as const, file };
  }
  return { kept: true as const, file: null };
}
