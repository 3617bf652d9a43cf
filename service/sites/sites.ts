import { createHash, randomBytes } from 'node:crypto';
import { and, asc, desc, eq, inArray, sql } from 'drizzle-orm';
import type { Config } from '../kernel/config.js';
import type { Db, DbOrTx } from '../db/client.js';
import { isDatabaseUnavailable, isUniqueViolation, onlyRow } from '../db/client.js';
import { lockKey } from '../db/locks.js';
import { idPrefix, newId } from '../kernel/ids.js';
import { siteFiles, sites } from '../db/schema/index.js';
import type { SiteRow } from '../db/schema/sites.js';
import type { Deps } from '../deps.js';
import { dropTableStoragesOfSite } from '../db/table-storage.js';
import { AppError, invalidField } from '../kernel/app-error.js';
import { hashPassword } from '../auth/passwords.js';
import type { SiteAccessBody } from '../../shared/account-api/sites.js';
import { contentTypeForPath, isTextContentType } from '../../shared/content-types.js';
import { ownedBy, ownerColumns, ownerOfSite, walletOwner, type SiteOwner } from '../db/owner.js';
import { ownerKey } from '../db/owner-key.js';
import { listedSitePath, normaliseSitePath } from './site-paths.js';
import { randomSlug, SlugSchema } from './slugs.js';
import { siteChanged } from './site-changes.js';
import { assertSiteActive, siteSuspension, type SiteSuspension } from './suspension.js';
import { ownerQuotas, type Quotas } from '../accounts/quotas.js';
import { blobOfContent, recordVersion, type VersionAction } from './version-records.js';
import type { VersionActor } from '../db/schema/site-versions.js';
import { ownerSubject, readCounter, readCounters, siteSubject } from '../db/counters.js';

export type { SiteRow };

const SITE_ID_KIND = 'site';
const SITE_ID_PREFIX = idPrefix(SITE_ID_KIND);

/** A new site id (`site_…`). No site name (a DNS label) holds its `_`: getOwnedSite tells them apart by it. */
export const newSiteId = (): string => newId(SITE_ID_KIND);

export interface SiteView {
  id: string;
  slug: string;
  /** Path URL on the service's own host: resolves from any client. */
  pathUrl: string;
  /** Host-based address `<slug>.<sites domain>`. */
  url: string;
  visibility: 'public' | 'private';
  hasPassword: boolean;
  published: boolean;
  status: SiteRow['status'];
  entryPoint: string;
  fileCount: number;
  bytes: number;
  createdAt: string;
  updatedAt: string;
  /** Set while the operator has the site suspended (it answers 451 to everyone): why, for its owner. */
  suspension: SiteSuspension | null;
}

export function siteUrls(config: Config, slug: string): { pathUrl: string; url: string } {
  const base = new URL(config.baseUrl);
  const port = base.port ? `:${base.port}` : '';
  // The path URL first: it resolves from any client (Node's fetch, curl on Windows), `*.localhost` does not everywhere.
  return { pathUrl: `${config.baseUrl}/s/${slug}/`, url: `${base.protocol}//${slug}.${config.sitesDomain}${port}/` };
}

export function blobPrefixOfSite(siteId: string): string {
  return `sites/${siteId}/`;
}

/**
 * Every write stores its bytes under a key of its own (content hash and a random suffix): a replaced
 * file never shows half old, half new, and a key that housekeeping finds unreferenced can never be
 * referenced again, so deleting it cannot race a writer (housekeeping/orphan-blobs.ts).
 */
function newFileBlobKey(siteId: string, sha256: string): string {
  return `${blobPrefixOfSite(siteId)}files/${sha256}.${randomBytes(6).toString('hex')}`;
}

/** Files and bytes of each site, from the kept counts (db/counters.ts): one read whatever the number of files. */
async function siteStats(db: DbOrTx, siteIds: string[]): Promise<Map<string, { fileCount: number; bytes: number }>> {
  const kept = await readCounters(db, siteIds.map(siteSubject));
  return new Map(
    siteIds.map((id) => {
      const c = kept.get(siteSubject(id)) ?? {};
      return [id, { fileCount: c.files ?? 0, bytes: c.bytes ?? 0 }];
    }),
  );
}

export function toSiteView(config: Config, row: SiteRow, stats?: { fileCount: number; bytes: number }): SiteView {
  return {
    id: row.id,
    slug: row.slug,
    ...siteUrls(config, row.slug),
    visibility: row.visibility,
    hasPassword: row.passwordHash !== null,
    published: row.published,
    status: row.status,
    entryPoint: row.entryPoint,
    fileCount: stats?.fileCount ?? 0,
    bytes: stats?.bytes ?? 0,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
    suspension: siteSuspension(row),
  };
}

export async function viewSite(deps: Deps, row: SiteRow, db: DbOrTx = deps.db): Promise<SiteView> {
  return toSiteView(deps.config, row, (await siteStats(db, [row.id])).get(row.id));
}

export async function isSlugTaken(db: DbOrTx, slug: string): Promise<boolean> {
  const [row] = await db.select({ id: sites.id }).from(sites).where(eq(sites.slug, slug));
  return Boolean(row);
}

/** An available readable name (checked against the database, not reserved). */
export async function suggestAvailableSlug(db: DbOrTx, base?: string): Promise<string> {
  for (let i = 0; i < 20; i++) {
    const candidate = base && i < 5 ? `${base}-${Math.floor(1000 + Math.random() * 9000)}`.slice(-63).replace(/^-+/, '') : randomSlug();
    if (SlugSchema.safeParse(candidate).success && !(await isSlugTaken(db, candidate))) return candidate;
  }
  throw new AppError('service_unavailable', 'could not find a free site name; retry');
}

async function assertSiteQuota(db: DbOrTx, owner: SiteOwner, max: number): Promise<void> {
  const n = await readCounter(db, ownerSubject(owner), 'sites');
  if (n >= max) {
    throw new AppError('quota_exceeded', `site limit reached (${max} sites); delete a site first`, { limit: 'sites', max, current: n });
  }
}

export async function ownerStorageBytes(db: DbOrTx, owner: SiteOwner): Promise<number> {
  return readCounter(db, ownerSubject(owner), 'bytes');
}

/** One file of a site as bytes (of a new site, or written into one); its path is checked by `normaliseSitePath`, its type comes from the extension when omitted. */
export interface SiteFileBytes {
  path: string;
  bytes: Buffer;
  contentType?: string;
}

export interface CreateSiteInput {
  /** Pre-chosen id (idempotent publish records it before the site exists). */
  id?: string;
  slug?: string;
  /** The HTML document served as index.html (the entry point). */
  html: string;
  /** Other files of the site. */
  files?: SiteFileBytes[];
  visibility?: 'public' | 'private';
  password?: string;
  /** Account API sites are published on creation; Agent API apps start as `created` (and are served too). */
  status: 'created' | 'published';
  /** Who publishes it (its first version's author); the operator when not said (tests, admin tools). */
  by?: VersionActor;
}

/** index.html and the other files of a new site, checked before anything is stored: paths, duplicates, sizes, count. */
function newSiteFiles(quotas: Quotas, input: CreateSiteInput): SiteFileRecordInput[] {
  const index = { path: 'index.html', bytes: Buffer.from(input.html, 'utf8'), contentType: 'text/html; charset=utf-8' };
  const others = input.files ?? [];
  const max = quotas.filesPerSite;
  if (others.length + 1 > max)
    throw new AppError('quota_exceeded', `${others.length + 1} files given (index.html and ${others.length} more); the limit is ${max} files per site`, {
      limit: 'filesPerSite',
      max,
      current: 0,
    });
  const seen = new Set<string>();
  assertFileSize(quotas.fileBytes, index.path, index.bytes.length);
  const files = others.map((f, i) => {
    const path = listedSitePath(f.path, `files.${i}.path`, seen, { 'index.html': 'index.html is the html field; give it there' });
    assertFileSize(quotas.fileBytes, path, f.bytes.length);
    return { path, bytes: f.bytes, contentType: f.contentType ?? contentTypeForPath(path) };
  });
  return [index, ...files];
}

type SiteFileRecordInput = Required<SiteFileBytes>;

/**
 * Quota checks read a count and then insert: two nodes (or two requests) doing that at once would
 * both pass. Holding this lock until the transaction ends makes an owner's checks-then-writes run one
 * at a time, on every node (a PostgreSQL advisory lock; PGlite has them too).
 */
export async function lockOwnerQuota(tx: DbOrTx, owner: SiteOwner): Promise<void> {
  await lockKey(tx, `quota:${ownerKey(owner)}`);
}

/**
 * Creates a site from its HTML document (index.html) and any other files. Checks the quotas (under the owner's
 * lock) and the slug; 409 slug_taken with a suggestion. Runs in its own transaction (a savepoint
 * when `db` is already one).
 */
export async function createSite(deps: Deps, owner: SiteOwner, input: CreateSiteInput, db: DbOrTx = deps.db): Promise<SiteRow> {
  const quotas = await ownerQuotas(deps.config, db, owner);
  const files = newSiteFiles(quotas, input);
  const slug = input.slug !== undefined ? SlugSchema.parse(input.slug) : await suggestAvailableSlug(db);
  const id = input.id ?? newSiteId();
  const written: string[] = [];
  try {
    return await db.transaction(async (tx) => {
      await lockOwnerQuota(tx, owner);
      await assertSiteQuota(tx, owner, quotas.sites);
      if (await isSlugTaken(tx, slug)) throw slugTaken(slug, await suggestAvailableSlug(tx, slug));
      await assertStorageQuota(
        tx,
        owner,
        files.reduce((n, f) => n + f.bytes.length, 0),
        quotas.storageBytes,
      );
      const visibility = input.password ? 'private' : (input.visibility ?? 'public');
      const row = onlyRow(
        await tx
          .insert(sites)
          .values({
            id,
            slug,
            ...ownerColumns(owner),
            visibility,
            passwordHash: input.password ? await hashPassword(input.password, deps.config.passwordHashCost) : null,
            published: true,
            status: input.status,
          })
          .returning(),
        'insert the site',
      );
      const records: SiteFileRecord[] = [];
      for (const f of files) {
        const sha256 = createHash('sha256').update(f.bytes).digest('hex');
        // Identical files of one upload are stored once.
        let blobKey = records.find((r) => r.sha256 === sha256)?.blobKey;
        if (!blobKey) {
          blobKey = newFileBlobKey(id, sha256);
          written.push(blobKey);
          await deps.blobs.put(blobKey, f.bytes, f.contentType);
        }
        records.push({ path: f.path, blobKey, size: f.bytes.length, contentType: f.contentType, sha256 });
      }
      // Any node that answered this slug before holds "no such site" for it (recordSiteFiles tells them).
      return recordSiteFiles(deps, row, { write: records, status: input.status, by: input.by ?? BY_OPERATOR, action: 'create' }, tx);
    });
  } catch (e) {
    await forgetBlobs(deps, written, e);
    if (isUniqueViolation(e)) throw slugTaken(slug, await suggestAvailableSlug(db, slug));
    throw e;
  }
}

/**
 * Deletes the blobs a failed write stored before its transaction rolled back (blobs are not
 * transactional). Not when the database connection failed: the commit may have happened. Best
 * effort: what this leaves (and what a crash leaves), housekeeping collects.
 */
async function forgetBlobs(deps: Deps, keys: string[], cause: unknown): Promise<void> {
  if (isDatabaseUnavailable(cause)) return;
  await Promise.all(keys.map((k) => deps.blobs.delete(k).catch(() => {})));
}

function slugTaken(slug: string, suggestion: string): AppError {
  return new AppError('slug_taken', `the site name "${slug}" is taken; try "${suggestion}"`, { slug, suggestion });
}

/**
 * The site if `owner` owns it; otherwise 404 (another owner's site is indistinguishable from none).
 * `ref` is the site's id (`site_…`) or its name (slug): a name is a DNS label, which never holds the
 * id's underscore, so the two cannot be confused; a name is matched as it was made (trimmed, lower
 * case), as a host name is. Callers use the row's `id` from here on.
 */
export async function getOwnedSite(db: DbOrTx, owner: SiteOwner, ref: string): Promise<SiteRow> {
  const [row] = await db
    .select()
    .from(sites)
    .where(and(ref.startsWith(SITE_ID_PREFIX) ? eq(sites.id, ref) : eq(sites.slug, ref.trim().toLowerCase()), ownedBy(owner)));
  if (!row) throw new AppError('not_found', `site ${ref} not found`, { site: ref });
  return row;
}

/** `getOwnedSite` for a change: a suspended site is refused (451 with the operator's reason), nothing of it changed. */
export async function getChangeableSite(db: DbOrTx, owner: SiteOwner, ref: string): Promise<SiteRow> {
  const row = await getOwnedSite(db, owner, ref);
  assertSiteActive(row);
  return row;
}

/**
 * The app (site) if the paying wallet owns it, for the Agent API (whose app actions all change it:
 * a suspended app is refused, in the free check before any payment): a 404 in its words ("app … not
 * found for this wallet") otherwise, whether the app is another wallet's or none at all.
 */
export function getWalletApp(db: DbOrTx, wallet: string, ref: string): Promise<SiteRow> {
  return getChangeableSite(db, walletOwner(wallet), ref).catch((e: unknown) => {
    if (e instanceof AppError && e.code === 'not_found') throw new AppError('not_found', `app ${ref} not found for this wallet`);
    throw e;
  });
}

/** An owner's sites, newest first; `db`: where to read them (a replica for the Account API's list, db/read-pools.ts). */
export async function listOwnedSites(
  deps: Deps,
  owner: SiteOwner,
  page: { limit: number; offset: number },
  db: DbOrTx = deps.db,
): Promise<{ sites: SiteView[]; total: number }> {
  const rows = await db.select().from(sites).where(ownedBy(owner)).orderBy(desc(sites.createdAt), asc(sites.id)).limit(page.limit).offset(page.offset);
  const n = await readCounter(db, ownerSubject(owner), 'sites');
  const stats = await siteStats(
    db,
    rows.map((r) => r.id),
  );
  return { sites: rows.map((r) => toSiteView(deps.config, r, stats.get(r.id))), total: Number(n) };
}

/** Removes the site and everything that hangs off it in the database (cascade; datasets' column tables and Tables' record id sequences dropped). */
export async function deleteSite(deps: Deps, site: SiteRow, db: DbOrTx = deps.db): Promise<void> {
  const remove = async (tx: DbOrTx) => {
    await dropTableStoragesOfSite(tx, site.id);
    await tx.delete(sites).where(eq(sites.id, site.id));
    await siteChanged(deps, tx, site);
  };
  // The drops and the delete are one transaction: the caller's, or one of its own.
  await (db === deps.db ? (db as Db).transaction((tx) => remove(tx)) : remove(db));
}

/** Blob cleanup after the deleting transaction committed (blobs are not transactional). */
export async function deleteSiteBlobs(deps: Deps, siteId: string): Promise<void> {
  await deps.blobs.deletePrefix(blobPrefixOfSite(siteId));
}

function assertFileSize(max: number, path: string, size: number): void {
  if (size > max) throw new AppError('payload_too_large', `${path} is ${size} bytes; the limit per file is ${max} bytes`, { path, size, max });
}

export async function assertStorageQuota(db: DbOrTx, owner: SiteOwner, addBytes: number, max: number): Promise<void> {
  const used = await ownerStorageBytes(db, owner);
  if (used + addBytes > max) {
    throw new AppError('quota_exceeded', `storage limit reached: ${used} of ${max} bytes used, ${addBytes} more requested`, {
      limit: 'storageBytes',
      max,
      current: used,
    });
  }
}

/** The quota lock of the site's owner (lockOwnerQuota), for writers of files inside their transaction. */
export async function lockSiteOwner(tx: DbOrTx, site: SiteRow): Promise<void> {
  await lockOwnerQuota(tx, ownerOfSite(site));
}

/** Checks, before any bytes move, that a file of `size` bytes may be added or replace one at `path`. */
export function assertCanWriteFile(deps: Deps, site: SiteRow, path: string, size: number, db: DbOrTx = deps.db): Promise<void> {
  return assertCanWriteFiles(deps, site, [{ path, size }], db);
}

/**
 * Checks, before any bytes move, that `files` (distinct paths) may be added to the site or replace
 * its files at those paths, all together, with the files at `removing` (distinct from those) gone in
 * the same change: each path to remove names a file of the site and not its entry point (what "/"
 * serves: replaced, never removed), refused naming `delete.N`; then the site's file count after the
 * change, and the owner's storage after every size change, within the limits (each file alone within
 * them is not enough: 3 new files on a site one short of its limit would all pass one by one).
 */
export async function assertCanWriteFiles(
  deps: Deps,
  site: SiteRow,
  files: readonly { path: string; size: number }[],
  db: DbOrTx = deps.db,
  removing: readonly string[] = [],
): Promise<void> {
  const entry = removing.indexOf(site.entryPoint);
  if (entry >= 0) throw invalidField(`delete.${entry}`, `${site.entryPoint} is the entry point ("/" serves it): replace it instead`);
  const paths = [...files.map((f) => f.path), ...removing];
  const existing = new Map(
    (
      await db
        .select({ path: siteFiles.path, size: siteFiles.size })
        .from(siteFiles)
        .where(and(eq(siteFiles.siteId, site.id), inArray(siteFiles.path, paths)))
    ).map((r) => [r.path, r.size]),
  );
  const missing = removing.findIndex((p) => !existing.has(p));
  if (missing >= 0) throw invalidField(`delete.${missing}`, `the site has no file ${removing[missing]}`);
  const quotas = await ownerQuotas(deps.config, db, ownerOfSite(site));
  for (const f of files) assertFileSize(quotas.fileBytes, f.path, f.size);
  const added = files.filter((f) => !existing.has(f.path)).length - removing.length;
  if (added > 0) {
    const n = await readCounter(db, siteSubject(site.id), 'files');
    const max = quotas.filesPerSite;
    if (n + added > max)
      throw new AppError('quota_exceeded', `file limit reached: the site has ${n} files, ${added} more would pass the limit of ${max} files per site`, {
        limit: 'filesPerSite',
        max,
        current: n,
      });
  }
  const freed = removing.reduce((sum, p) => sum + (existing.get(p) ?? 0), 0);
  const growth = files.reduce((sum, f) => sum + f.size - (existing.get(f.path) ?? 0), 0) - freed;
  await assertStorageQuota(db, ownerOfSite(site), growth, quotas.storageBytes);
}

/** A change made by the operator (admin tools), not by the site's owner. */
export const BY_OPERATOR: VersionActor = { kind: 'operator' };

/** Creates or replaces one file of the site (`changeSiteFiles` of one); returns the site as it now is. */
export function writeSiteFile(deps: Deps, site: SiteRow, file: SiteFileBytes, by: VersionActor = BY_OPERATOR, db: DbOrTx = deps.db): Promise<SiteRow> {
  return changeSiteFiles(deps, site, { write: [file] }, by, db);
}

/** Files to create or replace in a site, and paths of files to delete from it, in one change. */
export interface SiteFilesChange {
  write: readonly SiteFileBytes[];
  remove?: readonly string[];
}

/**
 * Creates or replaces `write` and deletes `remove` in one transaction (all or none; the site's other
 * files stay): checked together under the owner's quota lock (`assertCanWriteFiles`: a file to delete
 * that is not there, or the site's entry point, refuses the whole change), bytes stored, rows upserted and deleted, the
 * site's version bumped once. Paths must be distinct across both lists. Returns the site as it now is.
 */
export async function changeSiteFiles(deps: Deps, site: SiteRow, change: SiteFilesChange, by: VersionActor, db: DbOrTx = deps.db): Promise<SiteRow> {
  const writes = change.write.map((f) => ({ ...f, path: normaliseSitePath(f.path) }));
  const removes = (change.remove ?? []).map(normaliseSitePath);
  const written: string[] = [];
  try {
    return await db.transaction(async (tx) => {
      await lockSiteOwner(tx, site);
      await assertCanWriteFiles(
        deps,
        site,
        writes.map((f) => ({ path: f.path, size: f.bytes.length })),
        tx,
        removes,
      );
      const records: SiteFileRecord[] = [];
      for (const f of writes) {
        const sha256 = createHash('sha256').update(f.bytes).digest('hex');
        const contentType = f.contentType ?? contentTypeForPath(f.path);
        // Bytes the site holds already (a redeploy, a file copied, a version restored by hand) keep their blob.
        let blobKey = records.find((r) => r.sha256 === sha256)?.blobKey ?? (await blobOfContent(tx, site.id, sha256));
        if (!blobKey) {
          blobKey = newFileBlobKey(site.id, sha256);
          written.push(blobKey);
          await deps.blobs.put(blobKey, f.bytes, contentType);
        }
        records.push({ path: f.path, blobKey, size: f.bytes.length, contentType, sha256 });
      }
      return recordSiteFiles(deps, site, { write: records, remove: removes, by, action: 'change' }, tx);
    });
  } catch (e) {
    await forgetBlobs(deps, written, e);
    throw e;
  }
}

export interface SiteFileRecord {
  path: string;
  blobKey: string;
  size: number;
  contentType: string;
  sha256: string;
}

/** One change of a site's file set, as `recordSiteFiles` applies it. */
export interface SiteFilesCommit {
  /** Files to create or replace, their bytes stored already. */
  write: readonly SiteFileRecord[];
  /** Paths to delete (distinct from `write`'s). */
  remove?: readonly string[];
  /** The file "/" serves from now on. */
  entryPoint?: string;
  status?: SiteRow['status'];
  by: VersionActor;
  action: VersionAction;
  /** A rollback: the version restored, and its requestId. */
  rollbackOf?: number;
  requestId?: string;
}

/**
 * The one place a site's file set changes: deletes and upserts the file rows, sets the entry point,
 * bumps the site's content version, records the result as a new version (versions.ts) and
 * invalidates the site on every node, all in `db` (the caller's transaction, holding the owner's
 * quota lock). Returns the site as it now is.
 */
export async function recordSiteFiles(deps: Deps, site: SiteRow, commit: SiteFilesCommit, db: DbOrTx = deps.db): Promise<SiteRow> {
  const now = deps.clock.now();
  const stale = deps.purges.enabled ? await pathsChangedBy(db, site, commit) : [];
  if (commit.remove?.length) await db.delete(siteFiles).where(and(eq(siteFiles.siteId, site.id), inArray(siteFiles.path, [...commit.remove])));
  for (const f of commit.write) {
    await db
      .insert(siteFiles)
      .values({ siteId: site.id, ...f, updatedAt: now })
      .onConflictDoUpdate({
        target: [siteFiles.siteId, siteFiles.path],
        set: { blobKey: f.blobKey, size: f.size, contentType: f.contentType, sha256: f.sha256, updatedAt: now },
      });
  }
  const [row] = await db
    .update(sites)
    .set({
      contentVersion: sql`${sites.contentVersion} + 1`,
      updatedAt: now,
      status: commit.status ?? 'updated',
      ...(commit.entryPoint !== undefined ? { entryPoint: commit.entryPoint } : {}),
    })
    .where(eq(sites.id, site.id))
    .returning();
  if (!row) throw new AppError('not_found', `site ${site.id} was deleted meanwhile`);
  await recordVersion(deps, db, row, commit);
  await siteChanged(deps, db, site, { paths: stale });
  return row;
}

/**
 * The paths whose answers `commit` changes, for the CDN's purge: files removed, files written with
 * other bytes or type than they had (a rollback or a redeploy rewrites many unchanged ones), and the
 * old entry point when "/" moves away from it (the answer of "/" carries its entry point's key).
 */
async function pathsChangedBy(db: DbOrTx, site: SiteRow, commit: SiteFilesCommit): Promise<string[]> {
  const paths = commit.write.map((f) => f.path);
  const before = new Map(
    paths.length
      ? (
          await db
            .select({ path: siteFiles.path, sha256: siteFiles.sha256, contentType: siteFiles.contentType })
            .from(siteFiles)
            .where(and(eq(siteFiles.siteId, site.id), inArray(siteFiles.path, paths)))
        ).map((r) => [r.path, r])
      : [],
  );
  const changed = commit.write.filter((f) => {
    const was = before.get(f.path);
    return was?.sha256 !== f.sha256 || was.contentType !== f.contentType;
  });
  const stale = [...changed.map((f) => f.path), ...(commit.remove ?? [])];
  if (commit.entryPoint !== undefined) {
    // Read here, under the owner's lock the caller holds: `site` may have been read before it.
    const [now] = await db.select({ entryPoint: sites.entryPoint }).from(sites).where(eq(sites.id, site.id));
    if (now && now.entryPoint !== commit.entryPoint) stale.push(now.entryPoint);
  }
  return stale;
}

/** Changes site fields (visibility, password, published, status, entry point) and invalidates the cache. */
export async function updateSite(
  deps: Deps,
  site: SiteRow,
  patch: Partial<Pick<SiteRow, 'visibility' | 'passwordHash' | 'published' | 'status' | 'entryPoint'>>,
  db: DbOrTx = deps.db,
): Promise<SiteRow> {
  // One transaction (a savepoint inside the caller's): the purge the change records commits with it.
  return db.transaction(async (tx) => {
    const [row] = await tx
      .update(sites)
      .set({ ...patch, updatedAt: deps.clock.now(), contentVersion: sql`${sites.contentVersion} + 1` })
      .where(eq(sites.id, site.id))
      .returning();
    if (!row) throw new AppError('not_found', `site ${site.id} was deleted meanwhile`);
    await siteChanged(deps, tx, site);
    return row;
  });
}

/**
 * A change of visibility and/or password, as both APIs apply it: a password makes the site private;
 * making it public removes the password; null removes it. Refuses "public with a password".
 */
export async function changeSiteAccess(deps: Deps, site: SiteRow, input: SiteAccessBody, db: DbOrTx = deps.db): Promise<SiteRow> {
  assertAccessChange(input);
  let passwordHash = site.passwordHash;
  let visibility = input.visibility ?? site.visibility;
  if (typeof input.password === 'string') {
    passwordHash = await hashPassword(input.password, deps.config.passwordHashCost);
    visibility = 'private';
  } else if (input.password === null || visibility === 'public') {
    passwordHash = null;
  }
  return updateSite(deps, site, { visibility, passwordHash, status: 'updated' }, db);
}

/** The one refusal of an access change, before any work or payment. */
export function assertAccessChange(input: SiteAccessBody): void {
  if (input.visibility === 'public' && typeof input.password === 'string') {
    throw new AppError('validation_failed', 'a password makes the site private: drop visibility "public" or the password', {
      issues: [{ field: 'visibility', message: 'public with a password' }],
    });
  }
}

export interface SiteContentFile {
  path: string;
  contentType: string;
  size: number;
  content: string;
}

/** Max bytes of text `GET /sites/:id/content` returns in one answer; more is marked truncated. */
export const MAX_CONTENT_BYTES = 5 * 1024 * 1024;

/** Text files of a site: the named paths (404 naming a missing one), or every text file. */
export async function readSiteContent(deps: Deps, site: SiteRow, paths: string[]): Promise<{ files: SiteContentFile[]; truncated: boolean }> {
  const wanted = paths.map((p) => normaliseSitePath(p));
  const rows = await deps.db
    .select()
    .from(siteFiles)
    .where(wanted.length ? and(eq(siteFiles.siteId, site.id), inArray(siteFiles.path, wanted)) : eq(siteFiles.siteId, site.id))
    .orderBy(asc(siteFiles.path));
  if (wanted.length) {
    const found = new Set(rows.map((r) => r.path));
    const missing = wanted.filter((p) => !found.has(p));
    if (missing.length) throw new AppError('not_found', `no such file in site ${site.id}: ${missing.join(', ')}`, { missing });
    const binary = rows.filter((r) => !isTextContentType(r.contentType)).map((r) => r.path);
    if (binary.length) throw new AppError('unsupported_media_type', `not text content: ${binary.join(', ')}`, { paths: binary });
  }
  const files: SiteContentFile[] = [];
  let total = 0;
  let truncated = false;
  for (const r of rows) {
    if (!isTextContentType(r.contentType)) continue;
    if (total + r.size > MAX_CONTENT_BYTES) {
      truncated = true;
      break;
    }
    const body = await deps.blobs.get(r.blobKey);
    if (!body) continue;
    total += r.size;
    files.push({ path: r.path, contentType: r.contentType, size: r.size, content: body.toString('utf8') });
  }
  return { files, truncated };
}
