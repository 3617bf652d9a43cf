import { and, eq, isNotNull, notExists, or, sql } from 'drizzle-orm';
import { FORWARDABLE_HEADERS, INVOKE_MAX_RESPONSE_BYTES, type InvokeFunctionBody, type InvokeFunctionResponse } from '../../shared/account-api/functions.js';
import type { Principal } from '../kernel/request-env.js';
import { accounts, functionInvocationCounts, functions } from '../db/schema/index.js';
import type { Deps } from '../deps.js';
import { AppError } from '../kernel/app-error.js';
import { consumeRateLimit } from '../http/rate-limit.js';
import { callerIdentity, callerMemory } from './caller-memory.js';
import { loadSecretValues } from './functions.js';
import type { SandboxHost, SandboxOutcome, SandboxValue } from './sandbox.js';
import { SandboxBusyError } from './sandbox-pool.js';
import { sandboxRunner } from './runner.js';
import { accountQuotas } from '../accounts/quotas.js';

/** Invoke accepts personal API keys only (spec §5): an OAuth access token is refused with 403. */
export function assertInvokeCredential(principal: Principal): void {
  if (principal.credential.kind !== 'personal_key') {
    throw new AppError('forbidden', 'invoke accepts only personal API keys (svc_pat_…); OAuth access tokens cannot invoke Functions', {
      credential: principal.credential.kind,
    });
  }
}

/** The request object the handler receives. */
export interface FunctionRequest {
  method: string;
  path: string;
  query: Record<string, string | string[]>;
  rawQuery: string;
  headers: Record<string, string>;
  body: unknown;
}

function forwardedHeaders(headers: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  const allowed = new Set<string>(FORWARDABLE_HEADERS);
  const bad: { field: string; message: string }[] = [];
  for (const [name, value] of Object.entries(headers ?? {})) {
    const lower = name.toLowerCase();
    if (!allowed.has(lower)) bad.push({ field: `headers.${name}`, message: `not forwardable; allowed: ${FORWARDABLE_HEADERS.join(', ')}` });
    else out[lower] = value;
  }
  if (bad.length) throw new AppError('validation_failed', `invalid body: ${bad.map((b) => `${b.field}: ${b.message}`).join('; ')}`, { issues: bad });
  return out;
}

export function buildFunctionRequest(body: InvokeFunctionBody): FunctionRequest {
  const rawQuery = (body.query ?? '').replace(/^\?/, '');
  const query: Record<string, string | string[]> = Object.create(null);
  for (const [k, v] of new URLSearchParams(rawQuery)) {
    const prev = query[k];
    query[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  return { method: body.method, path: body.path, query: { ...query }, rawQuery, headers: forwardedHeaders(body.headers), body: body.body ?? null };
}

/** A live Function this account may invoke: its own, or another account's with svc-user access on. */
async function findInvokable(deps: Deps, accountId: string, slug: string) {
  const [row] = await deps.db
    .select({ id: functions.id, slug: functions.slug, accountId: functions.accountId, liveCode: functions.liveCode, liveVersion: functions.liveVersion })
    .from(functions)
    .where(
      and(
        eq(functions.slug, slug.toLowerCase()),
        eq(functions.state, 'active'),
        isNotNull(functions.liveCode),
        or(eq(functions.accountId, accountId), eq(functions.allowUserInvoke, true)),
        // A suspended account's Functions answer no one (docs/operator.md); nothing of them is deleted.
        notExists(
          deps.db
            .select({ id: accounts.id })
            .from(accounts)
            .where(and(eq(accounts.id, functions.accountId), isNotNull(accounts.suspendedAt))),
        ),
      ),
    );
  if (!row || row.liveCode === null || row.liveVersion === null) {
    throw new AppError('not_found', `function ${slug} not found, not published, or not open to other svc users`);
  }
  return { ...row, liveCode: row.liveCode, liveVersion: row.liveVersion };
}

/**
 * Counts the invocation against the caller's monthly quota (UTC calendar month). A refused
 * invocation is not counted: the count stops at the limit (one statement, so concurrent callers
 * cannot pass it either).
 */
async function countInvocation(deps: Deps, accountId: string): Promise<void> {
  const period = deps.clock.now().toISOString().slice(0, 7);
  const max = (await accountQuotas(deps.config, deps.db, accountId)).invocationsPerMonth;
  const counted = await deps.db
    .insert(functionInvocationCounts)
    .values({ accountId, period, count: 1 })
    .onConflictDoUpdate({
      target: [functionInvocationCounts.accountId, functionInvocationCounts.period],
      set: { count: sql`${functionInvocationCounts.count} + 1` },
      ...(max > 0 ? { setWhere: sql`${functionInvocationCounts.count} < ${max}` } : {}),
    })
    .returning({ count: functionInvocationCounts.count });
  if (counted.length === 0) {
    throw new AppError('quota_exceeded', `this account used its ${max} function invocations for ${period}`, { limit: max, period });
  }
}

/** Host errors other than the memory store's own limit messages never reach the guest verbatim. */
function sanitizedHost(host: SandboxHost, deps: Deps): SandboxHost {
  const wrap =
    <A extends unknown[], R>(f: (...a: A) => Promise<R>) =>
    async (...a: A): Promise<R> => {
      try {
        return await f(...a);
      } catch (e) {
        const message = e instanceof Error ? e.message : String(e);
        if (message.startsWith('SVC_MEMORY')) throw e;
        deps.log.error('function memory failure', { error: message });
        throw new Error('SVC_MEMORY is temporarily unavailable');
      }
    };
  return { memoryGet: wrap(host.memoryGet), memorySet: wrap(host.memorySet), memoryDelete: wrap(host.memoryDelete) };
}

const RESPONSE_KEYS = new Set(['status', 'headers', 'body']);
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/;

function invalidReturn(message: string): AppError {
  return new AppError('function_failed', `the function returned an invalid response: ${message}`, { reason: 'invalid_return', message });
}

/** Maps the handler's return value to the envelope's response: status, headers, body, truncation. */
export function normalizeResponse(value: SandboxValue): InvokeFunctionResponse['response'] {
  if (value.kind === 'undefined') return { status: 204, headers: {}, bodyType: 'empty', body: null, truncated: false, bytes: 0 };
  if (value.kind === 'string') return cut(200, {}, 'text', value.text, value.text);
  const v: unknown = JSON.parse(value.json);
  const isResponse =
    v !== null &&
    typeof v === 'object' &&
    !Array.isArray(v) &&
    Object.keys(v).length > 0 &&
    Object.keys(v).every((k) => RESPONSE_KEYS.has(k)) &&
    ('status' in v || 'body' in v);
  if (!isResponse) return cut(200, {}, 'json', v, value.json);
  const r = v as { status?: unknown; headers?: unknown; body?: unknown };
  const status = r.status === undefined ? 200 : r.status;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 200 || status > 599) throw invalidReturn('status must be an integer from 200 to 599');
  const headers: Record<string, string> = {};
  if (r.headers !== undefined) {
    if (r.headers === null || typeof r.headers !== 'object' || Array.isArray(r.headers)) throw invalidReturn('headers must be an object of strings');
    const entries = Object.entries(r.headers as Record<string, unknown>);
    if (entries.length > 50) throw invalidReturn('at most 50 headers');
    for (const [k, hv] of entries) {
      if (!HEADER_NAME.test(k)) throw invalidReturn(`header name "${k.slice(0, 100)}" is not a valid token`);
      if (typeof hv !== 'string' && typeof hv !== 'number' && typeof hv !== 'boolean') throw invalidReturn(`header ${k} must be a string`);
      const s = String(hv);
      if (s.length > 4096 || /[\r\n\0]/.test(s)) throw invalidReturn(`header ${k} is too long or contains line breaks`);
      headers[k.toLowerCase()] = s;
    }
  }
  if (r.body === undefined) return { status, headers, bodyType: 'empty', body: null, truncated: false, bytes: 0 };
  if (typeof r.body === 'string') return cut(status, headers, 'text', r.body, r.body);
  return cut(status, headers, 'json', r.body, JSON.stringify(r.body));
}

/** Applies the 256 KiB content limit: a larger body becomes its first 256 KiB as text, marked truncated. */
function cut(status: number, headers: Record<string, string>, bodyType: 'json' | 'text', body: unknown, content: string): InvokeFunctionResponse['response'] {
  const buf = Buffer.from(content, 'utf8');
  if (buf.length <= INVOKE_MAX_RESPONSE_BYTES) return { status, headers, bodyType, body, truncated: false, bytes: buf.length };
  let end = INVOKE_MAX_RESPONSE_BYTES;
  while (end > 0 && (buf[end]! & 0xc0) === 0x80) end--; // never split a UTF-8 sequence
  return { status, headers, bodyType: 'text', body: buf.subarray(0, end).toString('utf8'), truncated: true, bytes: buf.length };
}

/** POST /api/v1/functions/invoke/:slug. */
export async function invokeFunction(deps: Deps, principal: Principal, slug: string, body: InvokeFunctionBody): Promise<InvokeFunctionResponse> {
  assertInvokeCredential(principal);
  const request = buildFunctionRequest(body);
  await consumeRateLimit(deps.db, `fninvoke:${principal.credential.id}`, deps.config.functions.invokesPerMinute, 60_000, deps.clock.now());
  const fn = await findInvokable(deps, principal.accountId, slug);
  await countInvocation(deps, principal.accountId);
  const secrets = await loadSecretValues(deps.db, fn.id);
  const { functions: limits } = deps.config;
  let outcome: SandboxOutcome;
  try {
    outcome = await sandboxRunner(deps.config).run(
      {
        code: fn.liveCode,
        requestJson: JSON.stringify(request),
        caller: callerIdentity(deps.secret, fn.id, principal.accountId),
        secrets,
      },
      sanitizedHost(callerMemory(deps, fn.id, principal.accountId), deps),
      { memoryBytes: limits.memoryBytes, cpuMs: limits.cpuMs, wallMs: limits.timeoutMs, maxHostCalls: 100 },
    );
  } catch (e) {
    if (e instanceof SandboxBusyError) {
      deps.metrics.functionInvocations.inc({ outcome: 'busy' });
      throw new AppError('service_unavailable', 'too many function invocations are waiting; retry shortly', undefined, { 'Retry-After': '1' });
    }
    throw e;
  }
  deps.metrics.functionInvocations.inc({ outcome: outcome.ok ? 'ok' : outcome.reason });
  if (!outcome.ok && outcome.stopped) deps.metrics.sandboxKills.inc({ reason: outcome.reason });
  if (!outcome.ok) {
    throw new AppError('function_failed', `function ${fn.slug} failed (${outcome.reason}): ${outcome.message}`, {
      reason: outcome.reason,
      message: outcome.message,
      cpuMs: outcome.cpuMs,
      wallMs: outcome.wallMs,
    });
  }
  return {
    ok: true,
    function: { id: fn.id, slug: fn.slug, version: fn.liveVersion },
    response: normalizeResponse(outcome.value),
    durationMs: outcome.wallMs,
  };
}
