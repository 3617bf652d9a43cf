import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPersonalKey } from '../../service/accounts/personal-keys.js';
import type { Principal } from '../../service/kernel/request-env.js';
import type { Clock } from '../../service/kernel/clock.js';
import { assertInvokeCredential, invokeFunction } from '../../service/functions/invoke.js';
import { registerClient } from '../../service/oauth/clients.js';
import { exchangeAuthorizationCode, issueAuthorizationCode } from '../../service/oauth/tokens.js';
import { SCOPES } from '../../shared/scopes.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';

/** A clock the test moves by hand: rate-limit windows and monthly quotas without sleeping. */
class ManualClock implements Clock {
  constructor(private t: number) {}
  now() {
    return new Date(this.t);
  }
  advance(ms: number) {
    this.t += ms;
  }
}

describe.each(dbKinds())('Function invoke: credentials, rate limit and quota (%s)', (kind) => {
  let h: Harness;
  const clock = new ManualClock(Date.UTC(2026, 10, 30, 23, 58, 0));
  beforeAll(async () => {
    // A CPU budget far above what the other requests take (tens of ms), so a runaway Function is still
    // running while they are answered, even on a loaded machine.
    h = await startHarness(
      kind,
      { SVC_FUNCTION_INVOKES_PER_MINUTE: '3', SVC_MAX_FUNCTION_INVOCATIONS_PER_MONTH: '5', SVC_FUNCTION_CPU_MS: '1500', SVC_FUNCTION_TIMEOUT_MS: '8000' },
      { clock },
    );
  });
  afterAll(async () => h?.close());

  async function liveFunction(key: string, slug: string) {
    const res = await h.fetch('/api/v1/functions', {
      method: 'POST',
      key,
      json: { name: slug, slug, code: 'export default () => "hi"', allowUserInvoke: true },
    });
    const { function: fn } = await res.json();
    expect((await h.fetch(`/api/v1/functions/${fn.id}/publish`, { method: 'POST', key })).status).toBe(200);
    return fn as { id: string; slug: string };
  }
  const invoke = (key: string, slug: string) => h.fetch(`/api/v1/functions/invoke/${slug}`, { method: 'POST', key, json: { method: 'GET', path: '/' } });

  it('refuses OAuth access tokens with 403, over HTTP and in the domain layer', async () => {
    const owner = await h.account();
    const fn = await liveFunction(owner.key, `oauth-target-${kind}`);

    // A real OAuth access token with every scope, issued through the authorization-code + PKCE flow.
    const redirectUri = 'http://127.0.0.1:9/callback';
    const client = await registerClient(h.deps, { redirect_uris: [redirectUri], client_name: 'test' });
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const code = await issueAuthorizationCode(h.deps, {
      accountId: owner.accountId,
      clientId: client.client_id,
      scopes: [...SCOPES],
      redirectUri,
      codeChallenge: challenge,
      resource: `${h.url}/api/v1`,
    });
    const tokens = await exchangeAuthorizationCode(h.deps, { clientId: client.client_id, code, redirectUri, codeVerifier: verifier });

    // The token works for the rest of the Account API…
    expect((await h.fetch(`/api/v1/functions/${fn.id}`, { key: tokens.access_token })).status).toBe(200);
    // …but not for invoke, even on the account's own Function.
    const res = await invoke(tokens.access_token, fn.slug);
    expect(res.status).toBe(403);
    const body = await res.json();
    expect(body.error.code).toBe('forbidden');
    expect(body.error.message).toMatch(/personal API keys/);

    const oauthPrincipal: Principal = { accountId: owner.accountId, scopes: [...SCOPES], credential: { kind: 'oauth_token', id: 'tok_x' } };
    expect(() => assertInvokeCredential(oauthPrincipal)).toThrow(/personal API keys/);
    await expect(invokeFunction(h.deps, oauthPrincipal, fn.slug, { method: 'GET', path: '/' })).rejects.toMatchObject({ code: 'forbidden', status: 403 });
  });

  it('a runaway Function does not hold up other requests (it runs in a worker thread)', async () => {
    const a = await h.account();
    const create = async (slug: string, code: string) => {
      const { function: fn } = await (await h.fetch('/api/v1/functions', { method: 'POST', key: a.key, json: { name: slug, slug, code } })).json();
      await h.fetch(`/api/v1/functions/${fn.id}/publish`, { method: 'POST', key: a.key });
      return fn as { slug: string };
    };
    const loop = await create(`runaway-${kind}`, 'export default () => { for (;;) {} }');
    const healthy = await create(`healthy-${kind}`, 'export default () => "still serving"');
    // Two workers started first (a key of its own: 3 invokes a minute per key): the race below is
    // between a running guest and a warm worker, not a worker's start (~0.1 s, more on a loaded machine).
    const { secret: warmKey } = await createPersonalKey(h.deps.db, { accountId: a.accountId, name: 'warm-up', scopes: [...SCOPES] });
    for (const r of await Promise.all([invoke(warmKey, healthy.slug), invoke(warmKey, healthy.slug)])) expect(r.status).toBe(200);
    const order: string[] = [];
    const runaway = invoke(a.key, loop.slug).then(async (r) => {
      order.push('runaway');
      return r.json();
    });
    const others = Promise.all([
      fetch(`${h.url}/healthz`).then((r) => order.push(`healthz ${r.status}`)),
      invoke(a.key, healthy.slug).then(async (r) => order.push(`invoke ${r.status} ${(await r.json()).response.body}`)),
    ]);
    const [out] = await Promise.all([runaway, others]);
    // Both others answered while the loop was still burning its 1.5 s CPU budget (they take tens of ms).
    expect(order.slice(0, 2).sort()).toEqual(['healthz 200', 'invoke 200 still serving']);
    expect(order[2]).toBe('runaway');
    expect(out.error.details.reason).toBe('timeout');
    // GET /metrics counts both outcomes (the counter of this node, read directly).
    const counted = (outcome: string) => h.deps.metrics.functionInvocations.get().then((m) => m.values.find((v) => v.labels.outcome === outcome)?.value ?? 0);
    expect(await counted('timeout')).toBeGreaterThanOrEqual(1);
    expect(await counted('ok')).toBeGreaterThanOrEqual(1);
  });

  it('rate-limits invokes per key (429 + Retry-After), then counts against the monthly quota', async () => {
    const caller = await h.account();
    const fn = await liveFunction(caller.key, `limited-${kind}`);
    for (let i = 0; i < 3; i++) expect((await invoke(caller.key, fn.slug)).status).toBe(200);
    const limited = await invoke(caller.key, fn.slug);
    expect(limited.status).toBe(429);
    expect((await limited.json()).error.code).toBe('rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);

    clock.advance(60_000); // next minute, same month
    expect((await invoke(caller.key, fn.slug)).status).toBe(200);
    expect((await invoke(caller.key, fn.slug)).status).toBe(200);
    const quota = await invoke(caller.key, fn.slug);
    expect(quota.status).toBe(429);
    expect((await quota.json()).error.code).toBe('quota_exceeded');
    const usage = await (await h.fetch('/api/v1/usage', { key: caller.key })).json();
    // Refused invocations are not counted: the account used 5 of 5, not 6.
    expect(usage.usage.functionInvocations).toMatchObject({ used: 5, limit: 5 });

    clock.advance(60_000); // 2026-12: a new month, a fresh quota
    expect((await invoke(caller.key, fn.slug)).status).toBe(200);
    const fresh = await (await h.fetch('/api/v1/usage', { key: caller.key })).json();
    expect(fresh.usage.functionInvocations).toMatchObject({ used: 1, unit: 'function invocations in 2026-12 (UTC)' });
  });
});
