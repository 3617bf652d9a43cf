import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import { SITE_UPLOAD_URL_TTL_SECONDS } from '../../shared/agent-api/actions/common.js';
import { contentMatchesType, isValidContentType } from '../../shared/content-types.js';
import type { DbOrTx } from '../db/client.js';
import { siteFiles } from '../db/schema/index.js';
import type { Deps } from '../deps.js';
import { AppError } from '../kernel/app-error.js';
import { ownerOfSite } from '../db/owner.js';
import { ownerQuotas } from '../accounts/quotas.js';
import { SitePathSchema } from './site-paths.js';
import { assertCanWriteFiles, blobPrefixOfSite, lockSiteOwner, recordSiteFiles, type SiteFileRecord, type SiteRow } from './sites.js';
import type { VersionActor } from '../db/schema/site-versions.js';

/*
 * Files uploaded by URL into a site: binary or large files that no JSON body carries. The owner asks
 * for upload URLs (paths, sizes, media types), PUTs each file straight to the blob store (a presigned
 * S3 PUT, or the local store's signed upload URL), then finalizes: the files are checked as they
 * arrived and added to the site. The Agent API's create_site_upload_urls / finalize_site_upload (a
 * wallet's app, paid) and the Account API's `/sites/:id/upload-urls[/finalize]` (an account's site,
 * free) are these same functions.
 */

/** A path of the request, checked and normalised; refused naming `field`. */
export function sitePath(field: string, p: string): string {
  const r = SitePathSchema.safeParse(p);
  if (!r.success)
    throw new AppError('validation_failed', `invalid ${field}: ${r.error.issues[0]?.message}`, { issues: [{ field, message: r.error.issues[0]?.message }] });
  return r.data;
}

/** Files announced for upload: path, exact size, media type. */
export interface AnnouncedFile {
  path: string;
  size: number;
  type: string;
}

/**
 * Checks, before anything is signed (and, on the Agent API, before payment), that the announced
 * files may be uploaded: each path a site path and listed once, each type a media type, each size
 * within the per-file limit, and all of them together within the site's file count and the owner's
 * storage.
 */
export async function checkUploadRequest(deps: Deps, site: SiteRow, files: readonly AnnouncedFile[]): Promise<void> {
  const seen = new Set<string>();
  const max = (await ownerQuotas(deps.config, deps.db, ownerOfSite(site))).fileBytes;
  files.forEach((f, i) => {
    const p = sitePath(`files.${i}.path`, f.path);
    if (seen.has(p))
      throw new AppError('validation_failed', `files.${i}.path: ${p} is listed twice`, { issues: [{ field: `files.${i}.path`, message: 'duplicate' }] });
    seen.add(p);
    if (!isValidContentType(f.type))
      throw new AppError('validation_failed', `files.${i}.type: not a media type`, { issues: [{ field: `files.${i}.type`, message: 'not a media type' }] });
    if (f.size > max) throw new AppError('payload_too_large', `${p} is ${f.size} bytes; the limit per file is ${max} bytes`, { path: p, size: f.size, max });
  });
  await assertCanWriteFiles(
    deps,
    site,
    files.map((f) => ({ path: sitePath('path', f.path), size: f.size })),
  );
}

/** One signed upload URL per announced file (each bound to its size and type), and the token that finalizes them. */
export async function issueUploadUrls(deps: Deps, site: SiteRow, files: readonly AnnouncedFile[]) {
  const batch = randomBytes(8).toString('hex');
  const exp = Math.floor(deps.clock.now().getTime() / 1000) + SITE_UPLOAD_URL_TTL_SECONDS;
  const urls = [];
  const claims: UploadClaims = { siteId: site.id, ...ownerClaim(site), exp, files: [] };
  for (const [i, f] of files.entries()) {
    const path = sitePath('path', f.path);
    const key = `${blobPrefixOfSite(site.id)}uploads/${batch}/${i}`;
    const put = await deps.blobs.presignPut(key, { contentType: f.type, contentLength: f.size, expiresInSeconds: SITE_UPLOAD_URL_TTL_SECONDS });
    claims.files.push({ path, size: f.size, type: f.type, key });
    urls.push({ path, size: f.size, type: f.type, method: 'PUT' as const, uploadUrl: put.url, headers: put.headers, expiresAt: put.expiresAt });
  }
  return { uploadToken: signUploadToken(deps.secret, claims), expiresAt: new Date(exp * 1000).toISOString(), files: urls };
}

/**
 * Adds files that arrived (`checkArrivedFiles`) to the site in `tx`, under its owner's quota lock and
 * checked against the limits again; `entryPoint` (when given) becomes the file served for "/" and must
 * be one of the site's files by then. Returns the site as it now is.
 */
export async function addUploadedFiles(
  deps: Deps,
  site: SiteRow,
  files: SiteFileRecord[],
  entryPoint: string | undefined,
  by: VersionActor,
  tx: DbOrTx,
): Promise<SiteRow> {
  await lockSiteOwner(tx, site);
  await assertCanWriteFiles(deps, site, files, tx);
  const entry = entryPoint === undefined ? undefined : sitePath('entryPoint', entryPoint);
  if (entry !== undefined && !files.some((f) => f.path === entry)) {
    const [found] = await tx
      .select({ path: siteFiles.path })
      .from(siteFiles)
      .where(and(eq(siteFiles.siteId, site.id), eq(siteFiles.path, entry)));
    if (!found) {
      throw new AppError('validation_failed', `entryPoint ${entry} is neither among the uploaded files nor an existing file of the app`, {
        issues: [{ field: 'entryPoint', message: 'no such file' }],
      });
    }
  }
  return recordSiteFiles(deps, site, { write: files, entryPoint: entry, by, action: 'upload' }, tx);
}

// ── upload tokens ────────────────────────────────────────────────────────────────────────────────
// Stateless: HMAC(service secret) over {siteId, its owner, files with their blob keys, expiry}.

export interface UploadClaims {
  siteId: string;
  /** The owner: a wallet's app carries `wallet` (as tokens did before accounts could upload), an account's site `account`. */
  wallet?: string;
  account?: string;
  exp: number;
  files: { path: string; size: number; type: string; key: string }[];
}

function ownerClaim(site: SiteRow): Pick<UploadClaims, 'wallet' | 'account'> {
  const owner = ownerOfSite(site);
  return owner.kind === 'account' ? { account: owner.accountId } : { wallet: owner.wallet };
}

function signUploadToken(secret: string, claims: UploadClaims): string {
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  const mac = createHmac('sha256', secret).update(`agent-upload:${payload}`).digest('base64url');
  return `${payload}.${mac}`;
}

/** The claims of a token this service signed for `site` (its owner too), not expired; refused naming `uploadToken` otherwise. */
export function readUploadToken(deps: Deps, token: string, site: SiteRow): UploadClaims {
  const [payload, mac] = token.split('.');
  const bad = (msg: string) => new AppError('validation_failed', msg, { issues: [{ field: 'uploadToken', message: msg }] });
  if (!payload || !mac) throw bad('uploadToken is malformed');
  const expected = createHmac('sha256', deps.secret).update(`agent-upload:${payload}`).digest();
  const given = Buffer.from(mac, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw bad('uploadToken is invalid');
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as UploadClaims;
  const owner = ownerClaim(site);
  if (claims.siteId !== site.id || claims.wallet !== owner.wallet || claims.account !== owner.account) throw bad('uploadToken belongs to another app');
  if (claims.exp * 1000 <= deps.clock.now().getTime()) throw bad('uploadToken has expired; request new upload URLs');
  return claims;
}

/**
 * Finalize checks what actually arrived: every listed file is in the token with the same size, its
 * blob exists with exactly that many bytes, and its bytes match the announced type (magic numbers
 * for images/PDF, UTF-8 for text). Free: runs before the payment.
 */
export async function checkArrivedFiles(deps: Deps, claims: UploadClaims, input: { files: { path: string; size: number }[] }): Promise<SiteFileRecord[]> {
  const byPath = new Map(claims.files.map((f) => [f.path, f]));
  const out: SiteFileRecord[] = [];
  const problems: { field: string; message: string }[] = [];
  let notArrived = 0;
  for (const [i, f] of input.files.entries()) {
    const path = sitePath(`files.${i}.path`, f.path);
    const c = byPath.get(path);
    if (!c) {
      problems.push({ field: `files.${i}.path`, message: `${path} was not part of this upload` });
      continue;
    }
    if (c.size !== f.size) {
      problems.push({ field: `files.${i}.size`, message: `${path}: ${f.size} bytes given, ${c.size} announced` });
      continue;
    }
    const head = await deps.blobs.head(c.key);
    if (!head) {
      problems.push({ field: `files.${i}`, message: `${path} has not been uploaded` });
      notArrived++;
      continue;
    }
    if (head.size !== c.size) {
      problems.push({ field: `files.${i}.size`, message: `${path}: ${head.size} bytes arrived, ${c.size} announced` });
      continue;
    }
    const bytes = await deps.blobs.get(c.key);
    if (!bytes || bytes.length !== c.size) {
      problems.push({ field: `files.${i}`, message: `${path} could not be read back` });
      continue;
    }
    if (!contentMatchesType(c.type, bytes)) {
      problems.push({ field: `files.${i}.type`, message: `${path}: the bytes are not ${c.type}` });
      continue;
    }
    out.push({ path, blobKey: c.key, size: c.size, contentType: c.type, sha256: createHash('sha256').update(bytes).digest('hex') });
  }
  if (problems.length) {
    const message = `upload check failed: ${problems.map((p) => p.message).join('; ')}`;
    // Only bytes that have not arrived yet: the arguments are right, the PUTs are what is missing.
    if (notArrived === problems.length)
      throw new AppError('not_uploaded', `${message}; PUT each to its upload URL with the headers given, then finalize again`, { issues: problems });
    throw new AppError('validation_failed', message, { issues: problems });
  }
  return out;
}
