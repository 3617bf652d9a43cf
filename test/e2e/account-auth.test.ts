import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../service/db/client.js';
import { listPersonalKeys, revokePersonalKey } from '../../service/accounts/personal-keys.js';
import { SCOPES } from '../../shared/scopes.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';

/** Every Account API route of the foundation with the scope it needs. */
const ROUTES = [
  { method: 'GET', path: '/api/v1/usage', scope: 'svc.usage.read' },
  { method: 'GET', path: '/api/v1/sites', scope: 'svc.sites.read' },
  { method: 'POST', path: '/api/v1/sites', scope: 'svc.publish', json: { requestId: 'm', html: '<p>x</p>' } },
  { method: 'GET', path: '/api/v1/sites/site_x', scope: 'svc.sites.read' },
  { method: 'DELETE', path: '/api/v1/sites/site_x', scope: 'svc.sites.write' },
  { method: 'GET', path: '/api/v1/sites/site_x/content', scope: 'svc.sites.read' },
] as const;

describe.each(dbKinds())('Account API credentials, scopes and limits (%s)', (kind) => {
  let h: Harness;
  beforeAll(async () => {
    // A fixed clock 10 s into a minute: the rate-limit window is deterministic.
    h = await startHarness(
      kind,
      { SVC_RATE_LIMIT_PER_MINUTE: '5', SVC_MAX_SITES_PER_ACCOUNT: '3' },
      { clock: { now: () => new Date('2026-01-01T00:00:10Z') } },
    );
  });
  afterAll(async () => h?.close());

  it.each(ROUTES)('$method $path: 401 without, with a bad, or a revoked credential', async (route) => {
    const init = { method: route.method, json: 'json' in route ? route.json : undefined };
    const none = await h.fetch(route.path, init);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer realm="svc"/);
    // A page of another origin may read the challenge (it starts OAuth there).
    expect(none.headers.get('access-control-expose-headers')?.toLowerCase()).toContain('www-authenticate');
    expect((await none.json()).error.code).toBe('unauthorized');

    const bad = await h.fetch(route.path, { ...init, key: 'svc_pat_notarealkey' });
    expect(bad.status).toBe(401);
    const other = await h.fetch(route.path, { ...init, headers: { authorization: 'Basic abc' } });
    expect(other.status).toBe(401);

    const { accountId, key } = await h.account();
    const keyId = (await h.deps.db.query.personalKeys.findFirst({ where: (k, { eq }) => eq(k.accountId, accountId) }))!.id;
    await revokePersonalKey(h.deps.db, accountId, keyId, new Date());
    const revoked = await h.fetch(route.path, { ...init, key });
    expect(revoked.status).toBe(401);
    expect((await revoked.json()).error.message).toMatch(/revoked/);
  });

  it.each(ROUTES)('$method $path: 403 when the key lacks $scope, allowed with it', async (route) => {
    const init = { method: route.method, json: 'json' in route ? route.json : undefined };
    const without = await h.account(SCOPES.filter((s) => s !== route.scope));
    const res = await h.fetch(route.path, { ...init, key: without.key });
    expect(res.status).toBe(403);
    const body = await res.json();
    expect(body.error).toMatchObject({ code: 'insufficient_scope', details: { required: route.scope } });

    const withOnly = await h.account([route.scope]);
    const ok = await h.fetch(route.path, { ...init, key: withOnly.key });
    // With the scope the request gets past authorization: success, or 404 for the unknown site.
    expect([200, 201, 404]).toContain(ok.status);
  });

  it('400 names the bad fields, and nothing is created', async () => {
    const { key } = await h.account();
    const res = await h.fetch('/api/v1/sites', { method: 'POST', key, json: { html: 42, slug: 'Bad Slug!' } });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.ok).toBe(false);
    expect(body.error.code).toBe('validation_failed');
    const fields = body.error.details.issues.map((i: { field: string }) => i.field);
    expect(fields).toEqual(expect.arrayContaining(['requestId', 'html']));
    const badSlug = await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: 'q', html: '<p/>', slug: 'Bad Slug!' } });
    expect(badSlug.status).toBe(400);
    expect((await badSlug.json()).error.message).toMatch(/DNS label/);
    expect((await (await h.fetch('/api/v1/sites', { key })).json()).total).toBe(0);
  });

  it('413 for a body over 1 MiB, before it is parsed', async () => {
    const { key } = await h.account();
    const res = await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: 'big', html: 'x'.repeat(1024 * 1024 + 10) } });
    expect(res.status).toBe(413);
    expect((await res.json()).error.code).toBe('payload_too_large');
    expect((await (await h.fetch('/api/v1/sites', { key })).json()).total).toBe(0);
    // Sent in chunks, without a declared length, the same body is counted as it is read and refused alike.
    const chunked = (text: string) =>
      fetch(`${h.url}/api/v1/sites`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: new ReadableStream({
          start(controller) {
            for (let i = 0; i < text.length; i += 64 * 1024) controller.enqueue(new TextEncoder().encode(text.slice(i, i + 64 * 1024)));
            controller.close();
          },
        }),
        duplex: 'half',
      } as RequestInit);
    const streamed = await chunked(JSON.stringify({ requestId: 'big-chunked', html: 'x'.repeat(1024 * 1024 + 10) }));
    expect([streamed.status, (await streamed.json()).error.code]).toEqual([413, 'payload_too_large']);
    const small = await chunked(JSON.stringify({ requestId: 'small-chunked', html: '<p>streamed</p>' }));
    expect(small.status).toBe(201);
    expect((await (await h.fetch('/api/v1/sites', { key })).json()).total).toBe(1);
  });

  it('malformed JSON is a 400, not a 500', async () => {
    const { key } = await h.account();
    const res = await h.fetch('/api/v1/sites', { method: 'POST', key, body: '{"requestId": ', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    expect((await res.json()).ok).toBe(false);
  });

  it("records a key's last use (at most once a minute)", async () => {
    const { key, accountId } = await h.account();
    const lastUsed = async () => (await listPersonalKeys(h.deps.db, accountId))[0]!.lastUsedAt;
    expect(await lastUsed()).toBeNull();
    expect((await h.fetch('/api/v1/usage', { key })).status).toBe(200);
    expect(await lastUsed()).toBe('2026-01-01T00:00:10.000Z');
  });

  it('429 with Retry-After once the per-credential rate limit is reached; other keys unaffected', async () => {
    const { key } = await h.account();
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await h.fetch('/api/v1/usage', { key })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    const limited = await h.fetch('/api/v1/usage', { key });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('50');
    expect((await limited.json()).error).toMatchObject({ code: 'rate_limited', details: { limit: 5, retryAfterSeconds: 50 } });
    const other = await h.account();
    expect((await h.fetch('/api/v1/usage', { key: other.key })).status).toBe(200);
    // Counted without a WAL flush per request (migration 0005): the counters are an unlogged table.
    const [table] = rowsOf<{ persistence: string }>(
      await h.deps.db.execute(sql`select relpersistence as persistence from pg_class where relname = 'rate_limit_windows'`),
    );
    expect(table?.persistence).toBe('u');
  });

  it('a quota reached is a 429 quota_exceeded naming the limit, and nothing is created', async () => {
    const { key } = await h.account();
    for (const n of [1, 2, 3]) {
      expect((await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: `q${n}`, html: '<p/>' } })).status).toBe(201);
    }
    const over = await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: 'q4', html: '<p/>' } });
    expect(over.status).toBe(429);
    expect((await over.json()).error).toMatchObject({ code: 'quota_exceeded', details: { limit: 'sites', max: 3, current: 3 } });
    expect((await (await h.fetch('/api/v1/sites', { key })).json()).total).toBe(3);
  });

  it('usage counts sites, files and bytes against the configured limits', async () => {
    const { key } = await h.account();
    await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: 'u1', html: '<p>1234</p>' } });
    const res = await h.fetch('/api/v1/usage', { key });
    expect(res.status).toBe(200);
    const { usage } = await res.json();
    expect(usage.sites).toEqual({ used: 1, limit: 3, unit: 'sites' });
    expect(usage.storageBytes.used).toBe('<p>1234</p>'.length);
    expect(usage.storageBytes.limit).toBe(1024 * 1024 * 1024);
  });
});
