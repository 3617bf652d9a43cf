import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Deps } from '../deps.js';
import { recordRequest, requestIdOf } from '../http/request-log.js';
import type { CachedSite, HeldFile } from './site-cache.js';
import { candidates, etagMatches, fileHeaders, siteSlugFromHost } from './serving.js';
import { SLUG_PATTERN } from './slugs.js';

/** `/s/<slug>/<rest>` on the service's own host. */
const PATH_MOUNT = /^\/s\/([^/]+)\/(.*)$/;

interface Hit {
  site: CachedSite;
  file: HeldFile;
  pathMode: boolean;
  /** The request's path, without its query (the access log's). */
  path: string;
  /** The pattern the app's router reports for the same request (metrics labels). */
  route: string;
}

/**
 * The hot path of hosted sites: a GET or HEAD of a public site's small file that this node holds in
 * its cache is answered straight on Node's response, without the fetch Request, Response and
 * Headers and the router, which nearly halved the requests a node answers (docs/performance.md).
 * Everything else (a cache miss, a private site, a streamed file, another method, a redirect, a
 * percent-encoded path, a missing file; every request with a CDN in front) goes on to the app, which fills the cache. The answer is the
 * same either way, header for header (test/e2e/site-fast-path.test.ts).
 */
export function withSiteFastPath(deps: Deps, app: RequestListener, isStopping: () => boolean = () => false): RequestListener {
  return (req, res) => {
    // While the service stops, every answer goes through the app: the drain tracks it and it closes its connection.
    const hit = (req.method === 'GET' || req.method === 'HEAD') && !isStopping() ? cachedFileFor(deps, req) : undefined;
    if (hit) answer(deps, req, res, hit);
    else app(req, res);
  };
}

function cachedFileFor(deps: Deps, req: IncomingMessage): Hit | undefined {
  // With a CDN in front, each request here is a CDN miss, answered from the committed site row (serving.ts, loadSite).
  if (deps.config.cdn) return undefined;
  const url = req.url ?? '/';
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  if (!path.startsWith('/') || path.includes('%')) return undefined; // absolute-form, or the app decodes it
  if (path.startsWith('/api/data/')) return undefined; // the Table API, on any host
  let slug = siteSlugFromHost(req.headers.host, deps.config.sitesDomain);
  let rest: string;
  let route: string;
  if (slug !== null) {
    rest = path.slice(1);
    route = '*';
  } else {
    const mount = PATH_MOUNT.exec(path);
    if (!mount) return undefined;
    slug = mount[1]!;
    rest = mount[2]!;
    route = '/s/:slug/*';
  }
  if (!SLUG_PATTERN.test(slug)) return undefined;
  const site = deps.siteCache.getSite(slug, Date.now());
  if (!site?.published || site.visibility !== 'public' || site.suspended) return undefined;
  const file = deps.siteCache.getRoute(site, rest) ?? resolve(deps, site, rest);
  return file ? { site, file, pathMode: route !== '*', path, route } : undefined;
}

/** The cached small file a request path names (remembered for the next request), else undefined: the app answers. */
function resolve(deps: Deps, site: CachedSite, rest: string): HeldFile | undefined {
  for (const candidate of candidates(site, rest)) {
    const file = deps.siteCache.getFile(site, candidate);
    if (file === null) continue; // known not to exist: the next candidate
    if (file === undefined || !file.body) return undefined; // not cached, or streamed from the blob store
    deps.siteCache.setRoute(site, rest, file as HeldFile);
    return file as HeldFile;
  }
  return undefined; // the 404 page is the app's
}

function answer(deps: Deps, req: IncomingMessage, res: ServerResponse, hit: Hit): void {
  const started = performance.now();
  const requestId = requestIdOf(req.headers['x-request-id']);
  const headers = fileHeaders(hit.site, hit.file, hit.pathMode);
  let status = 200;
  if (etagMatches(req.headers['if-none-match'], headers.etag!)) status = 304;
  else headers['content-length'] = String(hit.file.size);
  headers['x-request-id'] = requestId;
  res.writeHead(status, headers);
  const body = status === 200 && req.method === 'GET' ? hit.file.body : undefined;
  res.end(body);
  deps.traffic.count(hit.site.id, body ? hit.file.size : 0, false);
  recordRequest(deps, { method: req.method!, path: hit.path, route: hit.route, status, ms: performance.now() - started, requestId });
}
