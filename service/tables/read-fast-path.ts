import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Deps } from '../deps.js';
import { errorBody, toAppError } from '../http/handle-error.js';
import { clientIpOfRequest } from '../http/client-ip.js';
import { countedRequests } from '../http/limit-by-address.js';
import { recordRequest, requestIdOf } from '../http/request-log.js';
import { PERSONAL_KEY_PREFIX } from '../accounts/personal-keys.js';
import { API_KEY_HEADER, assertMethodEnabled, authorizeWithoutApiKey, personalKeyReadAccess, WRITE_KEY_HEADER } from './access.js';
import { keyChanged, type ReadKey } from './read-keys.js';
import { type CompiledList, tableListKey } from './table-lists.js';
import { builtOnStaleRows, type VersionedTable } from './table-rows.js';
import { TABLE_API_CORS_HEADERS, tableReadError } from './table-api.js';

/** `/api/data/<site>/<table>[/<record id>]`, without percent-encoding (the app decodes that). */
const READ_PATH = /^\/api\/data\/([^/%]+)\/([^/%]+)(?:\/([^/%]+))?$/;
/** The patterns the app's router reports for the same requests (metrics labels). */
const LIST_ROUTE = '/api/data/:siteSlug/:tableSlug';
const RECORD_ROUTE = '/api/data/:siteSlug/:tableSlug/:recordId';

interface TableRead {
  /** The table's key in `deps.tableLists.rows`. */
  key: string;
  /** The JSON answer of the read; rejects as the read does (SV001 when the cached rows are stale). */
  run: () => Promise<Uint8Array | string>;
  path: string;
  route: string;
}

/**
 * The Table API's hot path: a GET of a table's records, or of one record, on a table this node has
 * read before, is answered straight on Node's response, without the fetch Request, Response and
 * Headers and the router (which made up most of a read's CPU: docs/performance.md). The read is
 * answered here, whether it succeeds or fails (a timeout, a record not found: the statement is not
 * run a second time); what the app would decide otherwise goes to it, which answers as it always
 * does: a request it would refuse (a wrong key, a personal key the lookup refuses, a bad query, a
 * method not enabled), a table not in this node's cache, a read refused because the cached table row
 * is stale, a personal key that changed since this node kept it. A personal key is checked here
 * (readWithPersonalKey). A GET has no body, so nothing of the request is consumed before the app
 * gets it. The answer is the same either way, header for header (test/tables/read-fast-path.test.ts,
 * test/tables/timeout.test.ts).
 */
export function withTableReadFastPath(deps: Deps, app: RequestListener): RequestListener {
  return (req, res) => {
    const address = req.method === 'GET' ? clientIpOfRequest(req, deps.config.trustProxy) : '';
    const read = req.method === 'GET' ? tableReadFor(deps, req, address) : undefined;
    // A read refused by its address's limit goes to the app, which refuses it again (not counted
    // twice: a refusal is not counted) with the Table API's 429.
    if (read && deps.addressLimits.take('table-read', address) === null) {
      countedRequests.add(req);
      answer(deps, req, res, read, app);
    } else app(req, res);
  };
}

function tableReadFor(deps: Deps, req: IncomingMessage, address: string): TableRead | undefined {
  const url = req.url ?? '/';
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  const slugs = READ_PATH.exec(path);
  if (!slugs) return undefined;
  const recordId = slugs[3];
  if (recordId === 'schema') return undefined; // its own route: the app's
  const apiKey = req.headers[API_KEY_HEADER];
  const writeKey = req.headers[WRITE_KEY_HEADER];
  if (Array.isArray(writeKey) || Array.isArray(apiKey)) return undefined;
  // A personal key (checked against the database in `run`); the write key, when sent, wins as in the app.
  const personalKey = writeKey === undefined ? apiKey?.trim() : undefined;
  if (personalKey !== undefined && !personalKey.startsWith(PERSONAL_KEY_PREFIX)) return undefined; // the app says why
  const key = tableListKey(slugs[1]!, slugs[2]!);
  const current = deps.tableLists.rows.get(key);
  if (!current || current.site.suspendedAt !== null || current.site.ownerSuspension !== null) return undefined; // the app refuses it
  try {
    if (personalKey === undefined) authorizeWithoutApiKey(current.table, 'GET', 'read', writeKey);
    else assertMethodEnabled(current.table, 'GET');
  } catch {
    return undefined; // the app says why
  }
  // A read with a personal key carries the check of the key this node keeps (readWithPersonalKey).
  // One with no key at all is public: a replica may answer it (db/read-pools.ts); a keyed one, the primary.
  const route = personalKey === undefined && writeKey === undefined ? deps.readPools.publicRead(address) : undefined;
  let read: (key?: ReadKey) => Promise<Uint8Array | string>;
  if (recordId !== undefined) {
    // The query string of a record read means nothing, as in the app.
    read = (key) => deps.tableLists.recordAnswer(current, recordId, key, route);
  } else {
    const search = query === -1 ? '' : url.slice(query);
    let list: CompiledList;
    try {
      list = deps.tableLists.list(current, search === '?' ? '' : search, personalKey !== undefined);
    } catch {
      return undefined; // the app says why
    }
    read = (key) => deps.tableLists.answer(list, key, route);
  }
  const run = personalKey === undefined ? () => read() : () => readWithPersonalKey(deps, current, personalKey, read);
  return { key, run, path, route: recordId === undefined ? LIST_ROUTE : RECORD_ROUTE };
}

/** Rejection of a keyed read the app must answer: a key not let in, or changed since this node kept it. */
const TO_APP = Symbol('personal key: the app answers');

/**
 * A read with a personal key: one statement with a key this node keeps (read-keys.ts), the read
 * checking inside it that the key and its account are unchanged; a lookup first when none is kept.
 * Anything else goes to the app, which looks the key up afresh and answers as it always does: a key
 * the lookup does not let in (a refusal costs three lookups), a kept key that changed (SV002: revoked,
 * suspended, new scopes), a lookup that could not tell the key's version.
 */
async function readWithPersonalKey(
  deps: Deps,
  current: VersionedTable,
  personalKey: string,
  read: (key: ReadKey) => Promise<Uint8Array | string>,
): Promise<Uint8Array | string> {
  let key: ReadKey | null;
  try {
    key = await personalKeyReadAccess(deps, current.site, personalKey);
  } catch {
    throw TO_APP;
  }
  if (!key) throw TO_APP;
  try {
    return await read(key);
  } catch (e) {
    if (!keyChanged(e)) throw e;
    deps.tableLists.readKeys.drop(personalKey);
    throw TO_APP;
  }
}

function answer(deps: Deps, req: IncomingMessage, res: ServerResponse, read: TableRead, app: RequestListener): void {
  const started = performance.now();
  const requestId = requestIdOf(req.headers['x-request-id']);
  const send = (status: number, body: Uint8Array | string, headers: Record<string, string> = {}) => {
    res.writeHead(status, {
      'content-type': 'application/json',
      'content-length': typeof body === 'string' ? Buffer.byteLength(body) : body.length,
      ...TABLE_API_CORS_HEADERS,
      ...headers,
      'x-request-id': requestId,
    });
    res.end(body);
    recordRequest(deps, { method: 'GET', path: read.path, route: read.route, status, ms: performance.now() - started, requestId });
  };
  read
    .run()
    .then(
      (body) => send(200, body),
      (e: unknown) => {
        if (e === TO_APP) {
          app(req, res);
          return;
        }
        if (builtOnStaleRows(e)) {
          // The cached row is stale: the app reads the table afresh.
          deps.tableLists.rows.delete(read.key);
          app(req, res);
          return;
        }
        // Anything else (a timeout, a value its column refuses, the database gone) is answered here
        // as the app answers it: handing it over would run the failed statement a second time.
        const error = toAppError(tableReadError(e, deps.config.tables.statementTimeoutMs), deps.log);
        send(error.status, JSON.stringify(errorBody(error, requestId)), error.headers);
      },
    )
    .catch((e: unknown) => {
      // A fault of ours while answering: this request's connection goes, never the process.
      deps.log.error('table read fast path failed', { error: e instanceof Error ? (e.stack ?? e.message) : String(e) });
      res.destroy();
    });
}
