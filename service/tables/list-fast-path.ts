import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Deps } from '../deps.js';
import { recordRequest, requestIdOf } from '../http/request-log.js';
import { API_KEY_HEADER, authorizeWithoutApiKey, WRITE_KEY_HEADER } from './access.js';
import { parseTableQuery, type TableQueryPlan } from './query.js';
import { tableListKey } from './table-lists.js';
import type { VersionedTable } from './table-rows.js';
import { TABLE_API_CORS_HEADERS } from './table-api.js';

/** `/api/data/<site>/<table>`, without percent-encoding (the app decodes that). */
const LIST_PATH = /^\/api\/data\/([^/%]+)\/([^/%]+)$/;
/** The pattern the app's router reports for the same request (metrics labels). */
const ROUTE = '/api/data/:siteSlug/:tableSlug';

interface ListRead {
  current: VersionedTable;
  plan: TableQueryPlan;
  search: string;
  path: string;
}

/**
 * The Table API's hot path: a GET of a table's records, on a table this node has read before, is
 * answered straight on Node's response, without the fetch Request, Response and Headers and the
 * router (which made up most of a read's CPU under many clients: docs/performance.md). Only the
 * plain success is answered here: a request the app would refuse (a key to check against the
 * database, a wrong key, a bad query, a method not enabled), a table not in this node's cache, or
 * a read that fails (a stale table row, a timeout) goes to the app, which answers it as it always
 * does — a GET has no body, so nothing of the request is consumed before the app gets it. The
 * answer is the same either way, header for header (test/tables/list-fast-path.test.ts).
 */
export function withTableListFastPath(deps: Deps, app: RequestListener): RequestListener {
  return (req, res) => {
    const read = req.method === 'GET' ? listReadFor(deps, req) : undefined;
    if (read) answer(deps, req, res, read, app);
    else app(req, res);
  };
}

function listReadFor(deps: Deps, req: IncomingMessage): ListRead | undefined {
  const url = req.url ?? '/';
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  const slugs = LIST_PATH.exec(path);
  if (!slugs) return undefined;
  const apiKey = req.headers[API_KEY_HEADER];
  const writeKey = req.headers[WRITE_KEY_HEADER];
  if (Array.isArray(writeKey) || (apiKey !== undefined && writeKey === undefined)) return undefined; // a personal key: the app looks it up
  const current = deps.tableLists.rows.get(tableListKey(slugs[1]!, slugs[2]!));
  if (!current) return undefined;
  const search = query === -1 ? '' : url.slice(query);
  try {
    authorizeWithoutApiKey(current.table, 'GET', 'read', writeKey);
    return { current, plan: parseTableQuery(current.table.schema, new URLSearchParams(search)), search: search === '?' ? '' : search, path };
  } catch {
    return undefined; // the app says why
  }
}

function answer(deps: Deps, req: IncomingMessage, res: ServerResponse, read: ListRead, app: RequestListener): void {
  const started = performance.now();
  deps.tableLists
    .answer(read.current, read.plan, read.search)
    .then(
      (body) => {
        const incoming = req.headers['x-request-id'];
        const requestId = requestIdOf(typeof incoming === 'string' ? incoming : undefined);
        res.writeHead(200, {
          'content-type': 'application/json',
          'content-length': body.length,
          ...TABLE_API_CORS_HEADERS,
          'x-request-id': requestId,
        });
        res.end(body);
        recordRequest(deps, { method: 'GET', path: read.path, route: ROUTE, status: 200, ms: performance.now() - started, requestId });
      },
      () => app(req, res), // stale row, timeout, …: the app reads again or says what went wrong
    )
    .catch((e: unknown) => {
      // A fault of ours while answering: this request's connection goes, never the process.
      deps.log.error('table list fast path failed', { error: e instanceof Error ? (e.stack ?? e.message) : String(e) });
      res.destroy();
    });
}
