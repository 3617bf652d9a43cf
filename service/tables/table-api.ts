import { Hono, type Context } from 'hono';
import type { SQL } from 'drizzle-orm';
import { TABLE_LIMITS, type TableMethod } from '../../shared/tables/schema.js';
import type { DbOrTx } from '../db/client.js';
import { isDataException, rowsOf, sqlStateOf } from '../db/client.js';
import type { Deps } from '../deps.js';
import { AppError } from '../http/app-error.js';
import { publicCors } from '../http/cors.js';
import type { AppEnv } from '../http/env.js';
import { API_KEY_HEADER, authorizeTableRequest, enabledMethods, WRITE_KEY_HEADER, type TableOperation } from './access.js';
import { compileAggregateQuery, compileCountQuery, compileListQuery, nextCursorFor, parseTableQuery, recordSource, type TableQueryPlan } from './query.js';
import { CoalescedReads } from './coalesced-reads.js';
import { currentRowsGuard, lookupVersionedTable, STALE_TABLE_ROWS, TableRowCache } from './table-rows.js';
import { deleteRecord, getRecord, getTableBySlugs, insertRecords, replaceRecord, updateRecord, type TableRow } from './tables.js';

/**
 * What a failed Table API read tells the client: a value that passed the query checks but not the
 * column's type (a dataset's date of year 0…) is a 400; a statement stopped by the timeout a 503.
 */
function tableReadError(e: unknown, timeoutMs: number): unknown {
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

/**
 * Executes a checked plan (the record page, default or compact shape, or an aggregate), each
 * statement carrying `guard` (table-rows.ts). With a total, the page and the count run side by side
 * on two connections: each is exact for its own snapshot.
 */
export async function runTableQuery(db: DbOrTx, table: TableRow, plan: TableQueryPlan, guard: SQL | null = null): Promise<Record<string, unknown>> {
  const src = recordSource(table, guard);
  if (plan.aggregate) {
    const rows = rowsOf<{ key?: unknown; value: unknown; count: number }>(await db.execute(compileAggregateQuery(src, plan)));
    const a = plan.aggregate;
    const base = { ok: true as const, aggregate: a.fn, field: a.field?.name ?? null };
    if (!a.groupBy) return { ...base, value: numeric(rows[0]?.value), count: Number(rows[0]?.count ?? 0) };
    const truncated = rows.length > TABLE_LIMITS.maxGroups;
    return {
      ...base,
      groupBy: a.groupBy.name,
      groups: rows.slice(0, TABLE_LIMITS.maxGroups).map((r) => ({ key: r.key ?? null, value: numeric(r.value), count: Number(r.count) })),
      truncated,
    };
  }
  const [list, count] = await Promise.all([
    db.execute(compileListQuery(src, plan)),
    plan.includeTotal ? db.execute(compileCountQuery(src, plan)) : Promise.resolve(undefined),
  ]);
  const raw = rowsOf<Record<string, unknown>>(list);
  const more = raw.length > plan.limit;
  const page = raw.slice(0, plan.limit).map((r) => ({ id: Number(r.id), fields: src.rowFields(r) }));
  const total = count === undefined ? undefined : Number(rowsOf<{ n: number }>(count)[0]?.n ?? 0);
  const last = page.at(-1);
  const nextCursor = more && last ? nextCursorFor(plan, last) : null;
  const paging = { limit: plan.limit, offset: plan.cursor ? 0 : plan.offset, ...(total !== undefined ? { total } : {}), nextCursor };
  const names = plan.projection ?? table.schema.fields.map((f) => f.name);
  if (plan.compact) {
    return { ok: true, columns: ['id', ...names], rows: page.map((r) => [String(r.id), ...names.map((n) => r.fields[n] ?? null)]), ...paging };
  }
  const pick = plan.projection
    ? (f: Record<string, unknown>) => Object.fromEntries(plan.projection!.filter((n) => n in f).map((n) => [n, f[n]]))
    : (f: Record<string, unknown>) => f;
  return { ok: true, records: page.map((r) => ({ id: String(r.id), fields: pick(r.fields) })), ...paging };
}

/** min/max of text fields stay text; numbers arrive as numbers (float8) under both drivers. */
function numeric(v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint') return Number(v);
  return v;
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

export const TABLE_API_CORS = publicCors({
  allowHeaders: ['Content-Type', 'X-Svc-Write-Key', 'X-Svc-Api-Key', 'X-Request-Id'],
  allowMethods: ['GET', 'POST', 'PATCH', 'PUT', 'DELETE', 'OPTIONS'],
  exposeHeaders: ['X-Request-Id', 'Allow', 'Retry-After'],
  maxAge: 600,
});

/**
 * The Table API at `/api/data/:siteSlug/:tableSlug[/schema|/:recordId]`. Served on the service host
 * (path fallback) and on every site host (the site middleware lets /api/data/* through).
 */
export function tableApiRoutes(deps: Deps): Hono<AppEnv> {
  const r = new Hono<AppEnv>();
  const base = '/api/data/:siteSlug/:tableSlug';

  // Writes, schema and single records look their table up afresh (one indexed query).
  async function open(c: Context, method: TableMethod, op: TableOperation) {
    const { site, table } = await getTableBySlugs(deps, c.req.param('siteSlug')!, c.req.param('tableSlug')!);
    await authorizeTableRequest(deps, c, site, table, method, op);
    return { site, table };
  }

  r.get(base, listRecords(deps));

  r.get(`${base}/schema`, async (c) => {
    const { table } = await open(c, 'GET', 'read');
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
      limits: { defaultLimit: TABLE_LIMITS.defaultLimit, maxLimit: TABLE_LIMITS.maxLimit, maxBatch: TABLE_LIMITS.maxBatch, maxGroups: TABLE_LIMITS.maxGroups },
    });
  });

  r.get(`${base}/:recordId`, async (c) => {
    const { table } = await open(c, 'GET', 'read');
    return c.json({ ok: true, record: await getRecord(deps, table, c.req.param('recordId')) });
  });

  r.post(base, async (c) => {
    const { table } = await open(c, 'POST', 'insert');
    const body = insertBody(await readJson(c));
    if ('records' in body) {
      const records = await insertRecords(deps, table, body.records);
      return c.json({ ok: true, inserted: records.length, records }, 201);
    }
    const [record] = await insertRecords(deps, table, [body.record]).catch((e: unknown) => {
      throw renamePrefix(e, 'records.0.', 'record.');
    });
    return c.json({ ok: true, record }, 201);
  });

  r.patch(`${base}/:recordId`, async (c) => {
    const { table } = await open(c, 'PATCH', 'write');
    const body = await readJson(c);
    onlyKeys(body, ['fields'], 'send {fields}');
    const fields = objectIn(body.fields, 'fields', 'fields: expected an object of the fields to change');
    return c.json({ ok: true, record: await updateRecord(deps, table, c.req.param('recordId'), fields) });
  });

  r.put(`${base}/:recordId`, async (c) => {
    const { table } = await open(c, 'PUT', 'write');
    const record = replacementRecord(await readJson(c));
    return c.json({ ok: true, record: await replaceRecord(deps, table, c.req.param('recordId'), record) });
  });

  r.delete(`${base}/:recordId`, async (c) => {
    const { table } = await open(c, 'DELETE', 'write');
    const id = c.req.param('recordId');
    await deleteRecord(deps, table, id);
    return c.json({ ok: true, deleted: { id } });
  });

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
 * Identical reads in flight at once share one statement (coalesced-reads.ts).
 */
function listRecords(deps: Deps) {
  const tableRows = new TableRowCache();
  const reads = new CoalescedReads<string>((shared) => deps.metrics.tableReads.inc({ run: shared ? 'shared' : 'own' }));
  return async (c: Context<AppEnv>) => {
    const siteSlug = c.req.param('siteSlug')!;
    const tableSlug = c.req.param('tableSlug')!;
    const key = `${siteSlug.toLowerCase()}/${tableSlug.toLowerCase()}`;
    const { search, searchParams: params } = new URL(c.req.url);
    for (let attempt = 1; ; attempt++) {
      const cached = attempt === 1 ? tableRows.get(key) : undefined;
      const current = cached ?? (await lookupVersionedTable(deps.db, siteSlug, tableSlug));
      if (!cached) tableRows.set(key, current);
      let plan: TableQueryPlan;
      try {
        await authorizeTableRequest(deps, c, current.site, current.table, 'GET', 'read');
        plan = parseTableQuery(current.table.schema, params);
      } catch (e) {
        // A refusal (key, method, unknown field) may come from a row changed since: ask again.
        if (!cached) throw e;
        tableRows.delete(key);
        continue;
      }
      try {
        // The answer depends on the table and site rows and the query only, not on who asks (each
        // request was authorized above): identical reads share a run (coalesced-reads.ts).
        const readKey = `${current.table.id} ${current.tableVersion} ${current.siteVersion} ${search}`;
        const answer = await reads.read(readKey, async () =>
          JSON.stringify(await runTableQuery(deps.tableReads, current.table, plan, currentRowsGuard(current))),
        );
        return c.body(answer, 200, { 'content-type': 'application/json' });
      } catch (e) {
        // A stale row (SV001), or a replaced dataset whose column table is dropped (42P01): read again.
        const state = sqlStateOf(e);
        if (attempt >= 3 || (state !== STALE_TABLE_ROWS && state !== '42P01')) throw tableReadError(e, deps.config.tables.statementTimeoutMs);
        tableRows.delete(key);
      }
    }
  };
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
