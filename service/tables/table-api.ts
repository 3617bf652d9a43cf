import { Hono, type Context } from 'hono';
import { TABLE_LIMITS, type TableMethod } from '../../shared/tables/schema.js';
import { isDataException, sqlStateOf } from '../db/client.js';
import type { ReadRoute } from '../db/read-pools.js';
import { writerAddress } from '../http/client-ip.js';
import { isSiteSuspended, siteSuspendedNotice } from '../sites/suspension.js';
import type { Deps } from '../deps.js';
import { AppError } from '../kernel/app-error.js';
import { publicCors, publicCorsHeaders, type PublicCorsOptions } from '../http/cors.js';
import type { AppEnv } from '../kernel/request-env.js';
import { API_KEY_HEADER, authorizeTableRequest, enabledMethods, WRITE_KEY_HEADER, type TableOperation } from './access.js';
import { tableListKey } from './table-lists.js';
import { assertRowsCurrent, builtOnStaleRows, currentRowsGuard, lookupVersionedTable, type VersionedTable } from './table-rows.js';
import { deleteRecord, getTableBySlugs, insertRecords, replaceRecord, updateRecord } from './tables.js';

/**
 * What a failed Table API read tells the client: a value that passed the query checks but not the
 * column's type (a dataset's date of year 0…) is a 400; a statement stopped by the timeout a 503.
 */
export function tableReadError(e: unknown, timeoutMs: number): unknown {
  if (isDataException(e)) {
    const reason = (e as { cause?: { message?: string } }).cause?.message ?? (e as Error).message;
    return new AppError('validation_failed', `invalid query: a value does not fit its field (${reason})`, {
      issues: [{ field: 'query', message: 'a value does not fit its field' }],
    });
  }
  if (sqlStateOf(e) === '57014') {
    return new AppError(
      'query_timeout',
      `the query ran longer than ${timeoutMs} ms and was stopped; narrow it with filters, a smaller limit, or a cursor instead of a large offset`,
      { timeoutMs },
    );
  }
  return e;
}

async function readJson(c: Context): Promise<Record<string, unknown>> {
  const body = await c.req.json().catch(() => {
    throw new AppError('bad_request', 'body must be a JSON object');
  });
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new AppError('bad_request', 'body must be a JSON object');
  return body as Record<string, unknown>;
}

function onlyKeys(body: Record<string, unknown>, allowed: string[], what: string): void {
  const extra = Object.keys(body).filter((k) => !allowed.includes(k));
  if (extra.length) {
    throw new AppError('validation_failed', `invalid body: unexpected ${extra.join(', ')} (${what})`, {
      issues: extra.map((k) => ({ field: k, message: `unexpected; ${what}` })),
    });
  }
}

const TABLE_API_CORS_OPTIONS: PublicCorsOptions = {
  allowHeaders: ['Content-Type', 'X-Svc-Write-Key', 'X-Svc-Api-Key', 'X-Request-Id'],
  allowMethods: ['GET', 'POST', 'PATCH', 'PUT', 'DELETE', 'OPTIONS'],
  exposeHeaders: ['X-Request-Id', 'Allow', 'Retry-After'],
  maxAge: 600,
};
export const TABLE_API_CORS = publicCors(TABLE_API_CORS_OPTIONS);
/** What TABLE_API_CORS adds to an answer (the fast path's answers carry them too). */
export const TABLE_API_CORS_HEADERS = publicCorsHeaders(TABLE_API_CORS_OPTIONS);

/**
 * The Table API at `/api/data/:siteSlug/:tableSlug[/schema|/:recordId]`. Served on the service host
 * (path fallback) and on every site host (the site middleware lets /api/data/* through).
 */
export function tableApiRoutes(deps: Deps): Hono<AppEnv> {
  const r = new Hono<AppEnv>();
  const base = '/api/data/:siteSlug/:tableSlug';

  r.get(base, listRecords(deps));

  r.get(
    `${base}/schema`,
    withCurrentTable(deps, 'GET', 'read', noBody, async (c, current, _body, fresh) => {
      // The answer is the row's: a row from the cache is checked to be current (one statement).
      if (!fresh) await assertRowsCurrent(deps.tableReads, current);
      const { table } = current;
      return c.json({
        ok: true,
        id: table.id,
        name: table.name,
        slug: table.slug,
        kind: table.kind,
        schema: table.schema,
        methods: enabledMethods(table),
        requireReadKey: table.requireReadKey,
        publicInsert: table.publicInsert,
        limits: {
          defaultLimit: TABLE_LIMITS.defaultLimit,
          maxLimit: TABLE_LIMITS.maxLimit,
          maxBatch: TABLE_LIMITS.maxBatch,
          maxGroups: TABLE_LIMITS.maxGroups,
        },
      });
    }),
  );

  r.get(
    `${base}/:recordId`,
    withCurrentTable(
      deps,
      'GET',
      'read',
      noBody,
      async (c, current, _body, fresh) =>
        c.body(await deps.tableLists.recordAnswer(current, c.req.param('recordId')!, undefined, readRouteOf(deps, c, fresh)), 200, {
          'content-type': 'application/json',
        }),
      (e) => tableReadError(e, deps.config.tables.statementTimeoutMs),
    ),
  );

  r.post(
    base,
    withCurrentTable(deps, 'POST', 'insert', readInsertBody, async (c, current, body) => {
      const guard = currentRowsGuard(current);
      if ('records' in body) {
        const records = await insertRecords(deps, current.table, body.records, deps.db, guard);
        return c.json({ ok: true, inserted: records.length, records }, 201);
      }
      const [record] = await insertRecords(deps, current.table, [body.record], deps.db, guard).catch((e: unknown) => {
        throw renamePrefix(e, 'records.0.', 'record.');
      });
      return c.json({ ok: true, record }, 201);
    }),
  );

  r.patch(
    `${base}/:recordId`,
    withCurrentTable(deps, 'PATCH', 'write', readPatchBody, async (c, current, fields) =>
      c.json({ ok: true, record: await updateRecord(deps, current.table, c.req.param('recordId')!, fields, deps.db, currentRowsGuard(current)) }),
    ),
  );

  r.put(
    `${base}/:recordId`,
    withCurrentTable(deps, 'PUT', 'write', readReplacementBody, async (c, current, record) =>
      c.json({ ok: true, record: await replaceRecord(deps, current.table, c.req.param('recordId')!, record, deps.db, currentRowsGuard(current)) }),
    ),
  );

  r.delete(
    `${base}/:recordId`,
    withCurrentTable(deps, 'DELETE', 'write', noBody, async (c, current) => {
      const id = c.req.param('recordId')!;
      await deleteRecord(current.table, id, deps.db, currentRowsGuard(current));
      return c.json({ ok: true, deleted: { id } });
    }),
  );

  refuseWrongAddresses(r, deps, base);
  return r;
}

/** Methods that exist but not on this address: a 405 naming what the address takes. */
function refuseWrongAddresses(r: Hono<AppEnv>, deps: Deps, base: string): void {
  const wrongAddress = (allowed: string) => async (c: Context) => {
    await getTableBySlugs(deps, c.req.param('siteSlug')!, c.req.param('tableSlug')!);
    throw new AppError(
      'method_not_allowed',
      `${c.req.method} is not supported on ${new URL(c.req.url).pathname} (use ${allowed})`,
      { method: c.req.method },
      { Allow: `${allowed}, OPTIONS` },
    );
  };
  r.on(['PATCH', 'PUT', 'DELETE'], base, wrongAddress('GET, POST'));
  r.on(['POST', 'PATCH', 'PUT', 'DELETE'], `${base}/schema`, wrongAddress('GET'));
  r.on(['POST'], `${base}/:recordId`, wrongAddress('GET, PATCH, PUT, DELETE'));
}

/**
 * GET on a table: the record reads. The table row comes from this node's cache, checked inside the
 * read statement itself (table-rows.ts), so a read is one statement on the read pool, with no
 * transaction; a refusal or a stale row read from the cache is asked again with a fresh row.
 * Identical reads in flight at once share one statement (table-lists.ts). The plain success of a
 * table read before is usually answered before the app (read-fast-path.ts), the rest here.
 */
function listRecords(deps: Deps) {
  return withCurrentTable(
    deps,
    'GET',
    'read',
    async (c) => new URL(c.req.url).search,
    async (c, current, search, fresh) => {
      const list = deps.tableLists.list(current, search);
      const answer = (await deps.tableLists.answer(list, undefined, readRouteOf(deps, c, fresh))) as Uint8Array<ArrayBuffer>; // never a SharedArrayBuffer
      return c.body(answer, 200, { 'content-type': 'application/json' });
    },
    // A timeout or a value its column refuses is answered, never run again.
    (e) => tableReadError(e, deps.config.tables.statementTimeoutMs),
  );
}

/**
 * Where a record read runs (db/read-pools.ts): a public read (no key) of a cached table row may run
 * on a replica; a read with a key, or on a row just looked up on the primary (its versions may be
 * newer than a replica's: after a stale row, a replica would refuse the check again), on the primary.
 */
function readRouteOf(deps: Deps, c: Context<AppEnv>, fresh: boolean): ReadRoute {
  const keyed = c.req.header(WRITE_KEY_HEADER) !== undefined || c.req.header(API_KEY_HEADER) !== undefined;
  return keyed || fresh ? deps.readPools.primary : deps.readPools.publicRead(writerAddress(c, deps.config.trustProxy));
}

/**
 * A record read or write through this node's cached table row (table-rows.ts): the request is
 * authorized against the cached row and its statement carries the guard, so a row changed since (a
 * new write key, schema or methods, on any node) fails the statement with SV001 and the request
 * starts again from a fresh lookup, as does any refusal from a cached row (a field added since is
 * unknown to the cached schema; refusedByCachedRow); a refusal from a fresh row stands. The body (or the query) is read
 * once, after the first authorization (an unknown table or a refused key is answered before it). A
 * read or a write is one statement. `fresh` tells `run` the row was just read (not from the cache).
 * `finalError`: what a failure that is not asked again becomes.
 */
function withCurrentTable<B>(
  deps: Deps,
  method: TableMethod,
  op: TableOperation,
  readBody: (c: Context<AppEnv>) => Promise<B>,
  run: (c: Context<AppEnv>, current: VersionedTable, body: B, fresh: boolean) => Promise<Response>,
  finalError: (e: unknown) => unknown = (e) => e,
) {
  const { rows } = deps.tableLists;
  return async (c: Context<AppEnv>) => {
    const siteSlug = c.req.param('siteSlug')!;
    const tableSlug = c.req.param('tableSlug')!;
    const key = tableListKey(siteSlug, tableSlug);
    let body: { value: B } | undefined;
    for (let attempt = 1; ; attempt++) {
      const cached = attempt === 1 ? rows.get(key) : undefined;
      const current = cached ?? (await lookupVersionedTable(deps.db, siteSlug, tableSlug));
      if (!cached) rows.set(key, current);
      try {
        // A suspended site's tables answer no one, key or not (a cached row is asked again, fresh).
        if (isSiteSuspended(current.site)) throw siteSuspendedNotice(current.site.slug);
        await authorizeTableRequest(deps, c, current.site, current.table, method, op);
      } catch (e) {
        if (!cached) throw e;
        rows.delete(key);
        continue;
      }
      body ??= { value: await readBody(c) };
      try {
        const response = await run(c, current, body.value, !cached);
        // The writer's next public reads see this write, on whichever replica (db/read-pools.ts).
        // Committed already: a failure to learn its position is logged, never answered as the write's.
        if (op !== 'read')
          await deps.readPools
            .wrote(writerAddress(c, deps.config.trustProxy))
            .catch((e: unknown) => deps.log.warn('read-your-writes: the write position could not be read', { error: (e as Error).message }));
        return response;
      } catch (e) {
        if (attempt >= 3 || !(builtOnStaleRows(e) || (cached && refusedByCachedRow(e)))) throw finalError(e);
        rows.delete(key);
      }
    }
  };
}

/**
 * A refusal that a stale cached row could have caused (a field unknown to its schema…). A record
 * not found is not one: its statement ran, so its guard passed and the row was current.
 */
function refusedByCachedRow(e: unknown): boolean {
  return e instanceof AppError && e.code !== 'not_found';
}

const readInsertBody = async (c: Context) => insertBody(await readJson(c));

const readReplacementBody = async (c: Context) => replacementRecord(await readJson(c));
const noBody = async () => undefined;

/** A PATCH body: `{fields}`, the fields to change. */
async function readPatchBody(c: Context): Promise<Record<string, unknown>> {
  const body = await readJson(c);
  onlyKeys(body, ['fields'], 'send {fields}');
  return objectIn(body.fields, 'fields', 'fields: expected an object of the fields to change');
}

/** A POST body: exactly one of `record` (an object) or `records` (an array). */
function insertBody(body: Record<string, unknown>): { record: Record<string, unknown> } | { records: unknown[] } {
  onlyKeys(body, ['record', 'records'], 'send {record} or {records}');
  if ('record' in body === 'records' in body)
    throw new AppError('validation_failed', 'invalid body: send either record (one object) or records (an array)', {
      issues: [{ field: 'record', message: 'required' }],
    });
  if ('records' in body) {
    if (!Array.isArray(body.records))
      throw new AppError('validation_failed', 'invalid body: records: expected an array', { issues: [{ field: 'records', message: 'expected an array' }] });
    return { records: body.records };
  }
  return { record: objectIn(body.record, 'record', 'record: expected an object of field name to value') };
}

/** A PUT body: the complete new record, as `record` (or `fields`, not both). */
function replacementRecord(body: Record<string, unknown>): Record<string, unknown> {
  onlyKeys(body, ['record', 'fields'], 'send {record}: the complete new record');
  if ('record' in body && 'fields' in body)
    throw new AppError('validation_failed', 'invalid body: send record or fields, not both', {
      issues: [{ field: 'fields', message: 'send record or fields, not both' }],
    });
  return objectIn(body.record ?? body.fields, 'record', 'record: expected the complete record as an object');
}

/** `value` when it is a plain object; else a 400 naming `field` (`problem` says what was expected). */
function objectIn(value: unknown, field: string, problem: string): Record<string, unknown> {
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
  throw new AppError('validation_failed', `invalid body: ${problem}`, { issues: [{ field, message: 'expected an object' }] });
}

function renamePrefix(e: unknown, from: string, to: string): unknown {
  if (!(e instanceof AppError) || e.code !== 'validation_failed') return e;
  const details = e.details as { issues?: { field: string; message: string }[] } | undefined;
  if (!details?.issues) return e;
  const issues = details.issues.map((i) => ({ ...i, field: i.field.startsWith(from) ? to + i.field.slice(from.length) : i.field }));
  return new AppError('validation_failed', e.message.split(from).join(to), { ...details, issues });
}

export { API_KEY_HEADER, WRITE_KEY_HEADER };
