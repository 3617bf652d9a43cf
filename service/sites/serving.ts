import { Readable } from 'node:stream';
import { and, eq, sql } from 'drizzle-orm';
import type { Context, MiddlewareHandler } from 'hono';
import { Hono } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import { siteFiles, sites, siteVersions } from '../db/schema/index.js';
import type { Deps } from '../deps.js';
import { AppError } from '../kernel/app-error.js';
import { clientIp } from '../http/client-ip.js';
import { readersOf } from '../http/read-your-writes.js';
import type { DbOrTx } from '../db/client.js';
import { consumeRateLimit } from '../http/rate-limit.js';
import { verifyPassword } from '../auth/passwords.js';
import type { CachedFile, CachedSite } from './site-cache.js';
import { signUnlockCookie, unlockCookieName, UNLOCK_TTL_SECONDS, verifyUnlockCookie } from './site-cookies.js';
import { notFoundPage, passwordPage, suspendedPage } from './site-pages.js';
import { SLUG_PATTERN } from './slugs.js';
import { PREVIEW_PREFIX, previewFile } from './version-records.js';
import { sharedCacheHeaders } from '../cdn/surrogate-keys.js';

const UNLOCK_PATH = '__svc/unlock';
/**
 * Sites served under the service's own origin (path fallback) get an opaque origin through a CSP
 * sandbox, so a hosted page can never read the service's cookies or call its API as same-origin.
 */
const PATH_MODE_CSP = 'sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads allow-popups-to-escape-sandbox';

/**
 * A site's row, from this node's cache, else read and cached. Without a CDN the read may run on a
 * replica (db/read-pools.ts): one past every site change this node has heard of (the cache it fills
 * must never hold a row older than a change it was told of) and past the reader's own last write;
 * the primary otherwise. With a CDN in front the origin sees only the CDN's misses, and what it
 * answers is stored for every visitor: each miss reads the committed row, on the primary. The
 * node-local row, or a replica's, could be older than a change another node just made and purged
 * (a site just made private or suspended, until this node's change notification arrives), and the
 * CDN would keep that answer (docs/operator.md, "With replicas" and "Origin reads").
 */
async function loadSite(deps: Deps, c: Context, slug: string): Promise<CachedSite | null> {
  const now = Date.now();
  const hit = deps.config.cdn ? undefined : deps.siteCache.getSite(slug, now);
  if (hit !== undefined) return hit;
  const generation = deps.siteCache.generation;
  const route = deps.config.cdn ? deps.readPools.primary : deps.readPools.publicRead(readersOf(c, deps.config.trustProxy), { afterSiteChanges: true });
  const [row] = await route.run((db) =>
    db
      .select({
        id: sites.id,
        slug: sites.slug,
        visibility: sites.visibility,
        passwordHash: sites.passwordHash,
        published: sites.published,
        entryPoint: sites.entryPoint,
        contentVersion: sites.contentVersion,
        version: sql<number>`(select coalesce(max(${siteVersions.version}), 0) from ${siteVersions} where ${siteVersions.siteId} = ${sites.id})`.mapWith(
          Number,
        ),
        suspended: sql<boolean>`(${sites.suspendedAt} is not null or ${sites.ownerSuspension} is not null)`,
      })
      .from(sites)
      .where(eq(sites.slug, slug)),
  );
  const site = row ?? null;
  deps.siteCache.setSite(slug, site, now, generation);
  return site;
}

/**
 * A file's row, read with the content version its site has on the same snapshot: files are cached
 * by the content version of the site row they were resolved from, so a replica behind that row
 * (it has not replayed the change yet) must not answer; its answer is then the primary's.
 */
async function readFileRow(deps: Deps, c: Context, site: CachedSite, path: string): Promise<Omit<CachedFile, 'body' | 'shared'> | null> {
  const read = (db: DbOrTx) =>
    db
      .select({
        contentVersion: sites.contentVersion,
        contentType: siteFiles.contentType,
        sha256: siteFiles.sha256,
        size: siteFiles.size,
        blobKey: siteFiles.blobKey,
      })
      .from(sites)
      .leftJoin(siteFiles, and(eq(siteFiles.siteId, sites.id), eq(siteFiles.path, path)))
      .where(eq(sites.id, site.id));
  const route = deps.readPools.publicRead(readersOf(c, deps.config.trustProxy));
  let [row] = await route.run(read);
  if (route !== deps.readPools.primary && row?.contentVersion !== site.contentVersion) [row] = await deps.readPools.primary.run(read);
  if (!row?.contentType || !row.sha256 || row.size === null || !row.blobKey) return null;
  return { contentType: row.contentType, sha256: row.sha256, size: row.size, blobKey: row.blobKey };
}

async function loadFile(deps: Deps, c: Context, site: CachedSite, path: string): Promise<CachedFile | null> {
  const hit = deps.siteCache.getFile(site, path);
  if (hit !== undefined) return hit;
  let file: CachedFile | null = await readFileRow(deps, c, site, path);
  if (file && file.size <= deps.siteCache.maxBodyBytes) {
    const body = await deps.blobs.get(file.blobKey);
    file = body ? { ...file, body } : null;
  }
  if (file && deps.config.cdn && site.visibility === 'public') file.shared = sharedCacheHeaders(deps.config.cdn.maxAgeSeconds, site, path);
  deps.siteCache.setFile(site, path, file);
  return file;
}

/** Candidate files for a request path: `a/` → a/index.html; `a` → a, a.html, a/index.html. */
export function candidates(site: CachedSite, rawPath: string): string[] {
  let p: string;
  try {
    p = decodeURIComponent(rawPath);
  } catch {
    return [];
  }
  if (p.split('/').some((seg) => seg === '..')) return [];
  p = p.replace(/^\/+/, '');
  if (p === '') return [site.entryPoint];
  if (p.endsWith('/')) return [`${p}index.html`];
  const last = p.slice(p.lastIndexOf('/') + 1);
  return last.includes('.') ? [p] : [p, `${p}.html`, `${p}/index.html`];
}

interface Mount {
  /** URL prefix of the site root: '' on its own host, '/s/<slug>' on the service host. */
  prefix: string;
  pathMode: boolean;
}

function htmlResponse(c: Context, status: 401 | 404 | 429 | 451, html: string, mount: Mount): Response {
  const res = c.html(html, status);
  res.headers.set('cache-control', 'no-store');
  if (mount.pathMode) res.headers.set('content-security-policy', PATH_MODE_CSP);
  return res;
}

async function serveSite(deps: Deps, c: Context, slug: string, rest: string, mount: Mount): Promise<Response> {
  const site = SLUG_PATTERN.test(slug) ? await loadSite(deps, c, slug) : null;
  const privateWithoutPassword = site?.visibility === 'private' && !site.passwordHash;
  // Before anything else of the site (its password form, its files): a takedown shows the same
  // neutral notice to everyone; the reason is the owner's to read (Account API, dashboard, MCP tools).
  if (site?.suspended) return htmlResponse(c, 451, suspendedPage(site.slug), mount);
  if (!site?.published || privateWithoutPassword) {
    return htmlResponse(c, 404, notFoundPage(`There is no published site named "${slug}".`), mount);
  }

  if (site.visibility === 'private') {
    const now = Date.now();
    const cookieName = unlockCookieName(site.id);
    if (rest === UNLOCK_PATH && c.req.method === 'POST') return unlock(deps, c, site, mount);
    if (!verifyUnlockCookie(deps.secret, site.id, site.passwordHash!, getCookie(c, cookieName), now)) {
      const next = `${mount.prefix}/${rest}`;
      return htmlResponse(c, 401, passwordPage({ action: `${mount.prefix}/${UNLOCK_PATH}`, next, slug: site.slug }), mount);
    }
  }

  if (c.req.method !== 'GET' && c.req.method !== 'HEAD') {
    return c.text('Method not allowed', 405, { allow: 'GET, HEAD' });
  }

  if (rest.startsWith(PREVIEW_PREFIX)) return servePreview(deps, c, site, rest.slice(PREVIEW_PREFIX.length), mount);
  for (const path of candidates(site, rest)) {
    const file = await loadFile(deps, c, site, path);
    if (file) return fileResponse(deps, c, site, file, mount);
  }
  return htmlResponse(c, 404, notFoundPage(`The site "${slug}" has no file at /${rest}.`), mount);
}

/**
 * `/s/<slug>/__svc/v/<n>/<path>`: exactly version n's files, read from its manifest (not cached: a
 * preview is looked at, not served at scale), under the site's own rules (published, password: the
 * site's unlock covers its previews) and, in path form, the same sandbox.
 */
async function servePreview(deps: Deps, c: Context, site: CachedSite, rest: string, mount: Mount): Promise<Response> {
  const m = /^(\d{1,9})(\/.*)?$/.exec(rest);
  if (!m) return htmlResponse(c, 404, notFoundPage(`There is no version "${rest.split('/')[0]}" of the site "${site.slug}".`), mount);
  const version = Number(m[1]);
  if (m[2] === undefined) return c.redirect(`${mount.prefix}/${PREVIEW_PREFIX}${version}/`, 301);
  const previewMount = { ...mount, prefix: `${mount.prefix}/${PREVIEW_PREFIX}${version}` };
  const found = await previewFile(deps.db, site.id, version, (entryPoint) => candidates({ ...site, entryPoint }, m[2]!.slice(1)));
  if (!found.kept) return htmlResponse(c, 404, notFoundPage(`Version ${version} of the site "${site.slug}" is not kept.`), mount);
  if (!found.file) return htmlResponse(c, 404, notFoundPage(`Version ${version} of the site "${site.slug}" has no file at ${m[2]}.`), mount);
  const res = await fileResponse(deps, c, site, found.file, previewMount, true);
  res.headers.set('x-robots-tag', 'noindex');
  return res;
}

/**
 * The headers of a file's answer (a 304 sends the same, without content-length). Browsers revalidate
 * every time; a shared cache keeps only a public site's file, and only with a CDN configured (then
 * with its lifetime and surrogate keys, `file.shared`); a private site's files are `private`.
 */
export function fileHeaders(site: CachedSite, file: CachedFile, pathMode: boolean): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': file.contentType,
    etag: `"${file.sha256.slice(0, 32)}"`,
    'cache-control': site.visibility === 'public' ? 'public, max-age=0, must-revalidate' : 'private, no-cache',
    'x-content-type-options': 'nosniff',
  };
  if (file.shared && site.visibility === 'public') Object.assign(headers, file.shared);
  if (pathMode) headers['content-security-policy'] = PATH_MODE_CSP;
  return headers;
}

/** Whether an If-None-Match header names this etag (weak or strong), or `*`. */
export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  return ifNoneMatch?.split(',').some((t) => t.trim() === etag || t.trim() === `W/${etag}` || t.trim() === '*') ?? false;
}

async function fileResponse(deps: Deps, c: Context, site: CachedSite, file: CachedFile, mount: Mount, preview = false): Promise<Response> {
  const headers = fileHeaders(site, file, mount.pathMode);
  if (etagMatches(c.req.header('if-none-match'), headers.etag!)) {
    deps.traffic.count(site.id, 0, preview);
    return new Response(null, { status: 304, headers });
  }
  headers['content-length'] = String(file.size);
  deps.traffic.count(site.id, c.req.method === 'HEAD' ? 0 : file.size, preview);
  if (c.req.method === 'HEAD') return new Response(null, { status: 200, headers });
  // A Buffer's memory is an ArrayBuffer, never a shared one: the cast only narrows the type.
  if (file.body) return new Response(file.body as Uint8Array<ArrayBuffer>, { status: 200, headers });
  const stream = await deps.blobs.getStream(file.blobKey);
  if (!stream) return htmlResponse(c, 404, notFoundPage('This file is missing from storage.'), mount);
  return new Response(Readable.toWeb(stream) as ReadableStream, { status: 200, headers });
}

async function unlock(deps: Deps, c: Context, site: CachedSite, mount: Mount): Promise<Response> {
  try {
    await consumeRateLimit(deps.db, `unlock:${site.id}:${clientIp(c, deps.config.trustProxy)}`, 10, 60_000, deps.clock.now());
  } catch (e) {
    if (e instanceof AppError) return htmlResponse(c, 429, notFoundPage('Too many password attempts; wait a minute.'), mount);
    throw e;
  }
  const form = await c.req.parseBody();
  const password = typeof form.password === 'string' ? form.password : '';
  const nextRaw = typeof form.next === 'string' ? form.next : `${mount.prefix}/`;
  // Only same-site relative targets: never an open redirect.
  const next = nextRaw.startsWith(`${mount.prefix}/`) && !nextRaw.startsWith('//') ? nextRaw : `${mount.prefix}/`;
  if (!(await verifyPassword(password, site.passwordHash!))) {
    return htmlResponse(c, 401, passwordPage({ action: `${mount.prefix}/${UNLOCK_PATH}`, next, slug: site.slug, error: 'Wrong password.' }), mount);
  }
  setCookie(c, unlockCookieName(site.id), signUnlockCookie(deps.secret, site.id, site.passwordHash!, Date.now()), {
    path: mount.prefix || '/',
    httpOnly: true,
    sameSite: 'Lax',
    secure: new URL(deps.config.baseUrl).protocol === 'https:',
    maxAge: UNLOCK_TTL_SECONDS,
  });
  return c.redirect(next, 303);
}

/** The site slug when the request's Host is `<slug>.<sites domain>[:port]`, else null. */
export function siteSlugFromHost(host: string | undefined, sitesDomain: string): string | null {
  if (!host) return null;
  const hostname = host.replace(/:\d+$/, '').toLowerCase();
  const suffix = `.${sitesDomain}`;
  if (!hostname.endsWith(suffix)) return null;
  const label = hostname.slice(0, -suffix.length);
  return label && !label.includes('.') ? label : null;
}

/**
 * Serves a site for requests on its own host, except `/api/data/…` (its Table API), which goes on
 * to the API routes.
 */
export function siteHostMiddleware(deps: Deps): MiddlewareHandler {
  return async (c, next) => {
    const slug = siteSlugFromHost(c.req.header('host'), deps.config.sitesDomain);
    if (!slug || c.req.path.startsWith('/api/data/')) return next();
    return serveSite(deps, c, slug, c.req.path.slice(1), { prefix: '', pathMode: false });
  };
}

/** Path fallback: `/s/<slug>/…` on the service's own host. */
export function sitePathRoutes(deps: Deps): Hono {
  const r = new Hono();
  r.all('/s/:slug', (c) => c.redirect(`/s/${c.req.param('slug')}/`, 301));
  r.all('/s/:slug/*', (c) => {
    const slug = c.req.param('slug');
    const prefix = `/s/${slug}`;
    return serveSite(deps, c, slug, c.req.path.slice(prefix.length + 1), { prefix, pathMode: true });
  });
  return r;
}
