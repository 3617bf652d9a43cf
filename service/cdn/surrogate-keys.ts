import { createHash } from 'node:crypto';

/*
 * Surrogate keys (Fastly, Varnish xkey) and cache tags (Cloudflare) of hosted files. A cached answer
 * carries three: its site, the site's version it came from, and the file it served. svc purges only
 * site and file keys (a version key names what one version served, for an operator purging by hand:
 * an answer stays right after later versions until a file of it changes, which its file key covers).
 * Keys are plain tokens ([a-z0-9_.]): a path may hold spaces, commas or any Unicode, so a file's key
 * is a hash of its path; Cloudflare's tags are case-insensitive, which lower-case hex survives.
 */

export function siteKey(siteId: string): string {
  return siteId;
}

export function versionKey(siteId: string, version: number): string {
  return `${siteId}.v${version}`;
}

export function fileKey(siteId: string, path: string): string {
  return `${siteId}.f${createHash('sha256').update(path).digest('hex').slice(0, 16)}`;
}

/**
 * The files whose answers a file at `path` can take over when it is added, beside its own: a request
 * path `a` is served by the first of `a`, `a.html`, `a/index.html` that exists (serving.ts
 * `candidates`), so adding `a` changes what `/a` served from `a.html` or `a/index.html`, and adding
 * `a.html` what it served from `a/index.html`. Those answers carry the key of the file they served:
 * purging it purges them.
 */
export function shadowedBy(path: string): string[] {
  const last = path.slice(path.lastIndexOf('/') + 1);
  if (!last.includes('.')) return [`${path}.html`, `${path}/index.html`];
  if (path.endsWith('.html')) {
    const base = path.slice(0, -'.html'.length);
    const baseLast = base.slice(base.lastIndexOf('/') + 1);
    if (baseLast !== '' && !baseLast.includes('.')) return [`${base}/index.html`];
  }
  return [];
}

/** Past this many file keys a change purges its site's key instead: one purge rather than many calls. */
export const MAX_FILE_KEYS = 100;

/** What a change of a site made stale: all of it, or the answers of some files. */
export type SiteChange = { all: true } | { paths: readonly string[] };

/** The keys to purge after `change` of the site. */
export function keysToPurge(siteId: string, change: SiteChange): string[] {
  if ('all' in change) return [siteKey(siteId)];
  const paths = new Set<string>();
  for (const p of change.paths) {
    paths.add(p);
    for (const s of shadowedBy(p)) paths.add(s);
  }
  if (paths.size > MAX_FILE_KEYS) return [siteKey(siteId)];
  return [...paths].map((p) => fileKey(siteId, p));
}

/** The shared-cache headers of one public file's answer, built once per cached file. */
export interface SharedCacheHeaders {
  'cache-control': string;
  'cdn-cache-control': string;
  'surrogate-key': string;
  'cache-tag': string;
}

/**
 * Browsers revalidate every time (max-age=0, must-revalidate, with the ETag) as without a CDN; the
 * shared cache keeps the answer `maxAgeSeconds` (s-maxage for any shared cache, CDN-Cache-Control,
 * RFC 9213, for CDNs that read it first) and is purged on every change.
 */
export function sharedCacheHeaders(maxAgeSeconds: number, site: { id: string; version: number }, path: string): SharedCacheHeaders {
  const keys = [siteKey(site.id), versionKey(site.id, site.version), fileKey(site.id, path)];
  return {
    'cache-control': `public, max-age=0, must-revalidate, s-maxage=${maxAgeSeconds}`,
    'cdn-cache-control': `public, max-age=${maxAgeSeconds}`,
    'surrogate-key': keys.join(' '),
    'cache-tag': keys.join(','),
  };
}
