import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import {
  createAppFromHtml,
  createSiteUploadUrls,
  deleteApp,
  finalizeSiteUpload,
  listApps,
  publishApp,
  suggestSiteName,
  unpublishApp,
  updateAppFile,
  updateAppMeta,
} from '../../shared/agent-api/actions/apps.js';
import { and, asc, desc, eq } from 'drizzle-orm';
import { SITE_UPLOAD_URL_TTL_SECONDS } from '../../shared/agent-api/actions/common.js';
import { handlerFor } from '../agent/typed-handler.js';
import type { TouchedApp } from '../agent/handler.js';
import { siteFiles, sites } from '../db/schema/index.js';
import type { Deps } from '../deps.js';
import { AppError } from '../http/app-error.js';
import { isValidContentType, mediaTypeOf } from '../../shared/content-types.js';
import { ownedBy, walletOwner } from './owner.js';
import { SitePathSchema } from './site-paths.js';
import {
  assertCanWriteFile,
  assertCanWriteFiles,
  lockSiteOwner,
  assertAccessChange,
  blobPrefixOfSite,
  changeSiteAccess,
  createSite,
  deleteSite,
  deleteSiteBlobs,
  getWalletApp,
  isSlugTaken,
  recordSiteFiles,
  suggestAvailableSlug,
  toSiteView,
  updateSite,
  viewSite,
  writeSiteFile,
  type SiteFileRecord,
  type SiteRow,
} from './sites.js';
import { SlugSchema } from './slugs.js';

type AppStatus = 'created' | 'updated' | 'published' | 'deleted';

function touched(row: SiteRow): TouchedApp {
  return { id: row.id, slug: row.slug, visibility: row.visibility };
}

function appResult(deps: Deps, row: SiteRow, status: AppStatus) {
  const view = toSiteView(deps.config, row);
  return {
    app: {
      appId: row.id,
      status,
      appName: row.slug,
      visibility: row.visibility,
      published: status === 'deleted' ? false : row.published,
      url: view.url,
      pathUrl: view.pathUrl,
    },
  };
}

function sitePath(field: string, p: string): string {
  const r = SitePathSchema.safeParse(p);
  if (!r.success)
    throw new AppError('validation_failed', `invalid ${field}: ${r.error.issues[0]?.message}`, { issues: [{ field, message: r.error.issues[0]?.message }] });
  return r.data;
}

// ── upload tokens ────────────────────────────────────────────────────────────────────────────────
// Stateless: HMAC(service secret) over {siteId, wallet, files with their blob keys, expiry}. The file
// bytes go straight to the blob store (presigned S3 PUT, or the local store's signed upload URL).

interface UploadClaims {
  siteId: string;
  wallet: string;
  exp: number;
  files: { path: string; size: number; type: string; key: string }[];
}

function signUploadToken(secret: string, claims: UploadClaims): string {
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  const mac = createHmac('sha256', secret).update(`agent-upload:${payload}`).digest('base64url');
  return `${payload}.${mac}`;
}

function readUploadToken(deps: Deps, token: string, siteId: string, wallet: string): UploadClaims {
  const [payload, mac] = token.split('.');
  const bad = (msg: string) => new AppError('validation_failed', msg, { issues: [{ field: 'uploadToken', message: msg }] });
  if (!payload || !mac) throw bad('uploadToken is malformed');
  const expected = createHmac('sha256', deps.secret).update(`agent-upload:${payload}`).digest();
  const given = Buffer.from(mac, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw bad('uploadToken is invalid');
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as UploadClaims;
  if (claims.siteId !== siteId || claims.wallet !== wallet) throw bad('uploadToken belongs to another app');
  if (claims.exp * 1000 <= deps.clock.now().getTime()) throw bad('uploadToken has expired; request new upload URLs');
  return claims;
}

/** Magic numbers of the binary types most often uploaded; text types must be UTF-8 without NUL bytes. */
const SIGNATURES: [RegExp, (b: Buffer) => boolean][] = [
  [/^image\/png$/, (b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))],
  [/^image\/jpeg$/, (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff],
  [/^image\/gif$/, (b) => b.subarray(0, 4).toString('latin1') === 'GIF8'],
  [/^image\/webp$/, (b) => b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP'],
  [/^application\/pdf$/, (b) => b.subarray(0, 5).toString('latin1') === '%PDF-'],
  [/^(text\/|application\/(javascript|json|xml)|image\/svg\+xml)/, (b) => !b.includes(0) && Buffer.from(b.toString('utf8'), 'utf8').equals(b)],
];

function contentMatchesType(type: string, bytes: Buffer): boolean {
  const base = mediaTypeOf(type);
  const check = SIGNATURES.find(([re]) => re.test(base));
  return check ? check[1](bytes) : true;
}

// ── handlers ───────────────────────────────────────────────────────────────────────────────────────

export const appAgentHandlers = {
  [suggestSiteName.name]: handlerFor(suggestSiteName, {
    async run({ tx }) {
      return { result: { name: await suggestAvailableSlug(tx) }, app: null };
    },
  }),

  [listApps.name]: handlerFor(listApps, {
    async run({ deps, wallet, tx }) {
      const rows = await tx
        .select()
        .from(sites)
        .where(ownedBy(walletOwner(wallet)))
        .orderBy(desc(sites.createdAt), asc(sites.id));
      const apps = [];
      for (const row of rows) {
        const v = await viewSite(deps, row, tx);
        apps.push({
          appId: v.id,
          appName: v.slug,
          visibility: v.visibility,
          hasPassword: v.hasPassword,
          published: v.published,
          status: v.status,
          url: v.url,
          pathUrl: v.pathUrl,
          entryPoint: v.entryPoint,
          fileCount: v.fileCount,
          bytes: v.bytes,
          createdAt: v.createdAt,
          updatedAt: v.updatedAt,
        });
      }
      return { result: { apps }, app: null };
    },
  }),

  [createAppFromHtml.name]: handlerFor(createAppFromHtml, {
    async check({ deps, input }) {
      const slug = SlugSchema.safeParse(input.name);
      if (!slug.success) {
        throw new AppError('validation_failed', `invalid name: ${slug.error.issues[0]?.message}`, {
          issues: [{ field: 'name', message: slug.error.issues[0]?.message }],
        });
      }
      if (input.visibility === 'public' && input.password) {
        throw new AppError('validation_failed', 'a password makes the app private: drop visibility "public" or the password', {
          issues: [{ field: 'visibility', message: 'public with a password' }],
        });
      }
      if (await isSlugTaken(deps.db, slug.data)) {
        const suggestion = await suggestAvailableSlug(deps.db, slug.data);
        throw new AppError('slug_taken', `the app name "${slug.data}" is taken; try "${suggestion}"`, { slug: slug.data, suggestion });
      }
    },
    async run({ deps, wallet, input, tx }) {
      const row = await createSite(
        deps,
        walletOwner(wallet),
        { slug: input.name, html: input.html, password: input.password, visibility: input.visibility, status: 'created' },
        tx,
      );
      return { result: appResult(deps, row, 'created'), app: touched(row) };
    },
  }),

  [updateAppFile.name]: handlerFor(updateAppFile, {
    async check({ deps, wallet, params, input }) {
      sitePath('path', input.path);
      if (input.contentType !== undefined && !isValidContentType(input.contentType)) {
        throw new AppError('validation_failed', `invalid contentType: ${input.contentType}`, {
          issues: [{ field: 'contentType', message: 'not a media type' }],
        });
      }
      const site = await getWalletApp(deps.db, wallet, params.siteId);
      await assertCanWriteFile(deps, site, sitePath('path', input.path), Buffer.byteLength(input.content, 'utf8'));
    },
    async run({ deps, wallet, params, input, tx }) {
      const site = await getWalletApp(tx, wallet, params.siteId);
      const row = await writeSiteFile(
        deps,
        site,
        { path: sitePath('path', input.path), bytes: Buffer.from(input.content, 'utf8'), contentType: input.contentType },
        tx,
      );
      return { result: appResult(deps, row, 'updated'), app: touched(row) };
    },
  }),

  [updateAppMeta.name]: handlerFor(updateAppMeta, {
    async check({ deps, wallet, params, input }) {
      assertAccessChange(input);
      await getWalletApp(deps.db, wallet, params.siteId);
    },
    async run({ deps, wallet, params, input, tx }) {
      const row = await changeSiteAccess(deps, await getWalletApp(tx, wallet, params.siteId), input, tx);
      return { result: appResult(deps, row, 'updated'), app: touched(row) };
    },
  }),

  [publishApp.name]: handlerFor(publishApp, {
    async check({ deps, wallet, params }) {
      await getWalletApp(deps.db, wallet, params.siteId);
    },
    async run({ deps, wallet, params, tx }) {
      const site = await getWalletApp(tx, wallet, params.siteId);
      const row = await updateSite(deps, site, { published: true, status: 'published' }, tx);
      return { result: appResult(deps, row, 'published'), app: touched(row) };
    },
  }),

  [unpublishApp.name]: handlerFor(unpublishApp, {
    async check({ deps, wallet, params }) {
      await getWalletApp(deps.db, wallet, params.siteId);
    },
    async run({ deps, wallet, params, tx }) {
      const site = await getWalletApp(tx, wallet, params.siteId);
      const row = await updateSite(deps, site, { published: false, status: 'updated' }, tx);
      return { result: appResult(deps, row, 'updated'), app: touched(row) };
    },
  }),

  [deleteApp.name]: handlerFor(deleteApp, {
    async check({ deps, wallet, params }) {
      await getWalletApp(deps.db, wallet, params.siteId);
    },
    async run({ deps, wallet, params, tx }) {
      const site = await getWalletApp(tx, wallet, params.siteId);
      // Tables, datasets and file rows hang off the site with ON DELETE CASCADE; blobs go after commit.
      await deleteSite(deps, site, tx);
      return { result: appResult(deps, site, 'deleted'), app: touched(site), afterCommit: () => deleteSiteBlobs(deps, site.id) };
    },
  }),

  [createSiteUploadUrls.name]: handlerFor(createSiteUploadUrls, {
    async check({ deps, wallet, params, input }) {
      const site = await getWalletApp(deps.db, wallet, params.siteId);
      const seen = new Set<string>();
      input.files.forEach((f, i) => {
        const p = sitePath(`files.${i}.path`, f.path);
        if (seen.has(p))
          throw new AppError('validation_failed', `files.${i}.path: ${p} is listed twice`, { issues: [{ field: `files.${i}.path`, message: 'duplicate' }] });
        seen.add(p);
        if (!isValidContentType(f.type))
          throw new AppError('validation_failed', `files.${i}.type: not a media type`, { issues: [{ field: `files.${i}.type`, message: 'not a media type' }] });
        const max = deps.config.limits.maxFileBytes;
        if (f.size > max)
          throw new AppError('payload_too_large', `${p} is ${f.size} bytes; the limit per file is ${max} bytes`, { path: p, size: f.size, max });
      });
      await assertCanWriteFiles(
        deps,
        site,
        input.files.map((f) => ({ path: sitePath('path', f.path), size: f.size })),
      );
    },
    async run({ deps, wallet, params, input, tx }) {
      const site = await getWalletApp(tx, wallet, params.siteId);
      const batch = randomBytes(8).toString('hex');
      const exp = Math.floor(deps.clock.now().getTime() / 1000) + SITE_UPLOAD_URL_TTL_SECONDS;
      const files = [];
      const claims: UploadClaims = { siteId: site.id, wallet, exp, files: [] };
      for (const [i, f] of input.files.entries()) {
        const path = sitePath('path', f.path);
        const key = `${blobPrefixOfSite(site.id)}uploads/${batch}/${i}`;
        const put = await deps.blobs.presignPut(key, { contentType: f.type, contentLength: f.size, expiresInSeconds: SITE_UPLOAD_URL_TTL_SECONDS });
        claims.files.push({ path, size: f.size, type: f.type, key });
        files.push({ path, size: f.size, type: f.type, method: 'PUT' as const, uploadUrl: put.url, headers: put.headers, expiresAt: put.expiresAt });
      }
      return {
        result: { uploadToken: signUploadToken(deps.secret, claims), expiresAt: new Date(exp * 1000).toISOString(), files },
        app: touched(site),
      };
    },
  }),

  [finalizeSiteUpload.name]: handlerFor(finalizeSiteUpload, {
    async check({ deps, wallet, params, input }) {
      const site = await getWalletApp(deps.db, wallet, params.siteId);
      const claims = readUploadToken(deps, input.uploadToken, site.id, wallet);
      return { site, claims, files: await checkArrivedFiles(deps, claims, input) };
    },
    async run({ deps, wallet, params, input, tx, state }) {
      const site = await getWalletApp(tx, wallet, params.siteId);
      await lockSiteOwner(tx, site);
      await assertCanWriteFiles(deps, site, state.files, tx);
      let row = await recordSiteFiles(deps, site, state.files, tx);
      const entryPoint = sitePath('entryPoint', input.entryPoint);
      const [entry] = await tx
        .select({ path: siteFiles.path })
        .from(siteFiles)
        .where(and(eq(siteFiles.siteId, site.id), eq(siteFiles.path, entryPoint)));
      if (!entry) {
        throw new AppError('validation_failed', `entryPoint ${entryPoint} is neither among the uploaded files nor an existing file of the app`, {
          issues: [{ field: 'entryPoint', message: 'no such file' }],
        });
      }
      row = await updateSite(deps, row, { entryPoint, status: 'updated' }, tx);
      return { result: appResult(deps, row, 'updated'), app: touched(row) };
    },
  }),
};

/**
 * Finalize checks what actually arrived: every listed file is in the token with the same size, its
 * blob exists with exactly that many bytes, and its bytes match the announced type (magic numbers
 * for images/PDF, UTF-8 for text). Free: runs before the payment.
 */
async function checkArrivedFiles(
  deps: Deps,
  claims: UploadClaims,
  input: { entryPoint: string; files: { path: string; size: number }[] },
): Promise<SiteFileRecord[]> {
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
