import { Hono, type Context } from 'hono';
import { cors } from 'hono/cors';
import { sql } from 'drizzle-orm';
import { TABLE_LIMITS, type TableMethod } from '../../shared/tables/schema.js';
import type { Tx } from '../db/client.js';
import { isDataException, rowsOf, sqlStateOf } from '../db/client.js';
import type { Deps } from '../deps.js';
import { AppError } from '../http/app-error.js';
import type { AppEnv } from '../http/env.js';
import { API_KEY_HEADER, authorizeTableRequest, enabledMethods, WRITE_KEY_HEADER, type TableOperation } from './access.js';
import { compileAggregateQuery, compileCountQuery, compileListQuery, nextCursorFor, parseTableQuery, recordSource, type TableQueryPlan } from './query.js';
import { deleteRecord, getRecord, getTableBySlugs, insertRecords, replaceRecord, updateRecord, type TableRow } from './tables.js';

/** Runs read queries in one transaction bounded by the configured statement timeout. */
export async function withStatementTimeout<T>(deps: Deps, fn: (tx: Tx) => Promise<T>, isolationLevel?: 'repeatable read'): Promise<T> {
  const ms = deps.config.tables.statementTimeoutMs;
  try {
    return await deps.db.transaction(
      async (tx) => {
        // Both settings last for this transaction only. Custom plans: a prepared statement's generic
        // plan cannot see which JSONB values are filtered on and picks bad plans on big tables.
        // Awaited before the query: pipelined with it, the timeout did not apply (test/tables/timeout.test.ts).
        const settings = tx.execute(
          sql`select set_config('statement_timeout', ${String(Math.max(0, Math.floor(ms)))}, true), set_config('plan_cache_mode', 'force_custom_plan', true)`,
        );
        await settings;
        return fn(tx);
      },
      isolationLevel ? { isolationLevel } : undefined,
    );
  } catch (e) {
    // A value that passed the query checks but not the column's type (a dataset's date of year 0…).
    if (isDataException(e)) {
      const reason = (e as { cause?: { message?: string } }).cause?.message ?? (e as Error).message;
      throw new AppError('validation_failed', `invalid query: a value does not fit its field (${reason})`, {
        issues: [{ field: 'query', message: 'a value does not fit its field' }],
      });
    }
    if (sqlStateOf(e) === '57014') {
      throw new AppError(
        'query_timeout',
        `the query ran longer than ${ms} ms and was stopped; narrow it with filters, a smaller limit, or a cursor instead of a large offset`,
        { timeoutMs: ms },
      );
    }
    throw e;
  }
}

/**
 * Executes a checked plan (the record page, default or compact shape, or an aggregate) inside the
 * caller's transaction, so the table row and its records come from one snapshot.
 */
export async function runTableQuery(tx: Tx, table: TableRow, plan: TableQueryPlan): Promise<Record<string, unknown>> {
  const src = recordSource(table);
  if (plan.aggregate) {
    const rows = rowsOf<{ key?: unknown; value: unknown; count: number }>(await tx.execute(compileAggregateQuery(src, plan)));
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
  const raw = rowsOf<Record<string, unknown>>(await tx.execute(compileListQuery(src, plan)));
  const more = raw.length > plan.limit;
  const page = raw.slice(0, plan.limit).map((r) => ({ id: Number(r.id), fields: src.rowFields(r) }));
  const total = plan.includeTotal ? Number(rowsOf<{ n: number }>(await tx.execute(compileCountQuery(src, plan)))[0]?.n ?? 0) : undefined;
  const nextCursor = more && page.length ? nextCursorFor(plan, page[page.length - 1]) : null;
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

export const TABLE_API_CORS = cors({
  origin: '*',
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

  // No per-node cache of table rows: a dataset replaced on any node swaps table ids, and a cached
  // id would read an emptied table. A lookup is one indexed query.
  const lookup = (siteSlug: string, tableSlug: string, db?: Tx) => getTableBySlugs(deps, siteSlug, tableSlug, db);

  async function open(c: Context, method: TableMethod, op: TableOperation) {
    const { site, table } = await lookup(c.req.param('siteSlug')!, c.req.param('tableSlug')!);
    await authorizeTableRequest(deps, c, site, table, method, op);
    return { site, table };
  }

  r.get(base, async (c) => {
    await open(c, 'GET', 'read');
    // The key check runs outside the transaction (it queries through deps.db, and PGlite has one
    // connection). The table row is then read again with its records in one REPEATABLE READ
    // snapshot: a dataset replaced meanwhile (a new row takes the slug, the old one is deleted) is
    // read whole, old or new, never empty.
    const read = () =>
      withStatementTimeout(
        deps,
        async (tx) => {
          const { table } = await lookup(c.req.param('siteSlug')!, c.req.param('tableSlug')!, tx);
          return runTableQuery(tx, table, parseTableQuery(table.schema, new URL(c.req.url).searchParams));
        },
        'repeatable read',
      );
    // A dataset's column table is dropped right after a replacement commits; a reader whose snapshot
    // still named the old table finds it gone (42P01) and reads again, from a snapshot with the new one.
    for (let attempt = 1; ; attempt++) {
      try {
        return c.json(await read(), 200);
      } catch (e) {
        if (attempt >= 3 || sqlStateOf(e) !== '42P01') throw e;
      }
    }
  });

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
    const body = await readJson(c);
    onlyKeys(body, ['record', 'records'], 'send {record} or {records}');
    if ('record' in body === 'records' in body)
      throw new AppError('validation_failed', 'invalid body: send either record (one object) or records (an array)', {
        issues: [{ field: 'record', message: 'required' }],
      });
    if ('records' in body) {
      if (!Array.isArray(body.records))
        throw new AppError('validation_failed', 'invalid body: records: expected an array', { issues: [{ field: 'records', message: 'expected an array' }] });
      const records = await insertRecords(deps, table, body.records);
      return c.json({ ok: true, inserted: records.length, records }, 201);
    }
    if (typeof body.record !== 'object' || body.record === null || Array.isArray(body.record)) {
      throw new AppError('validation_failed', 'invalid body: record: expected an object of field name to value', {
        issues: [{ field: 'record', message: 'expected an object' }],
      });
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
    if (typeof body.fields !== 'object' || body.fields === null || Array.isArray(body.fields)) {
      throw new AppError('validation_failed', 'invalid body: fields: expected an object of the fields to change', {
        issues: [{ field: 'fields', message: 'expected an object' }],
      });
    }
    return c.json({ ok: true, record: await updateRecord(deps, table, c.req.param('recordId'), body.fields) });
  });

  r.put(`${base}/:recordId`, async (c) => {
    const { table } = await open(c, 'PUT', 'write');
    const body = await readJson(c);
    onlyKeys(body, ['record', 'fields'], 'send {record}: the complete new record');
    const record = body.record ?? body.fields;
    if ('record' in body && 'fields' in body)
      throw new AppError('validation_failed', 'invalid body: send record or fields, not both', {
        issues: [{ field: 'fields', message: 'send record or fields, not both' }],
      });
    if (typeof record !== 'object' || record === null || Array.isArray(record)) {
      throw new AppError('validation_failed', 'invalid body: record: expected the complete record as an object', {
        issues: [{ field: 'record', message: 'expected an object' }],
      });
    }
    return c.json({ ok: true, record: await replaceRecord(deps, table, c.req.param('recordId'), record) });
  });

  r.delete(`${base}/:recordId`, async (c) => {
    const { table } = await open(c, 'DELETE', 'write');
    const id = c.req.param('recordId');
    await deleteRecord(deps, table, id);
    return c.json({ ok: true, deleted: { id } });
  });

  // Methods that exist but not on this address: a 405 naming what the address takes.
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
  return r;
}

function renamePrefix(e: unknown, from: string, to: string): unknown {
  if (!(e instanceof AppError) || e.code !== 'validation_failed') return e;
  const details = e.details as { issues?: { field: string; message: string }[] } | undefined;
  if (!details?.issues) return e;
  const issues = details.issues.map((i) => ({ ...i, field: i.field.startsWith(from) ? to + i.field.slice(from.length) : i.field }));
  return new AppError('validation_failed', e.message.split(from).join(to), { ...details, issues });
}

export { API_KEY_HEADER, WRITE_KEY_HEADER };
