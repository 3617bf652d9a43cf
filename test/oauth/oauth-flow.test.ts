import { sql } from 'drizzle-orm';
import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashCredential } from '../../service/accounts/personal-keys.js';
import { rowsOf } from '../../service/db/client.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { BrowserClient, formFields, signIn, signUp } from './browser-client.js';

const insecure = { [oauth.allowInsecureRequests]: true } as const;
const REDIRECT = 'http://127.0.0.1:9/callback';
const PASSWORD = 'correct horse battery';

/** A clock the tests move forward instead of sleeping. */
function testClock() {
  let t = Date.parse('2026-01-01T00:00:00Z');
  return { now: () => new Date(t), advance: (seconds: number) => (t += seconds * 1000) };
}

describe.each(dbKinds())('OAuth 2.0 with PKCE, driven by oauth4webapi (%s)', (kind) => {
  let h: Harness;
  const clock = testClock();
  let as: oauth.AuthorizationServer;
  let n = 0;

  beforeAll(async () => {
    h = await startHarness(kind, { SVC_TRUST_PROXY: '1' }, { clock });
    as = await oauth.processDiscoveryResponse(new URL(h.url), await oauth.discoveryRequest(new URL(h.url), { algorithm: 'oauth2', ...insecure }));
  });
  afterAll(async () => h?.close());

  async function newUser() {
    const email = `oauth-user${++n}@example.com`;
    const browser = new BrowserClient(h.url);
    expect((await signUp(browser, email, PASSWORD)).status).toBe(303);
    return { email, browser };
  }

  async function register(metadata: Record<string, unknown> = {}) {
    const res = await oauth.dynamicClientRegistrationRequest(
      as,
      { redirect_uris: [REDIRECT], client_name: 'Test App', token_endpoint_auth_method: 'none', ...metadata },
      insecure,
    );
    return oauth.processDynamicClientRegistrationResponse(res);
  }

  function authorizeUrl(client: oauth.Client, params: Record<string, string | undefined>) {
    const u = new URL(as.authorization_endpoint!);
    const all: Record<string, string | undefined> = {
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      scope: 'svc.sites.read svc.usage.read',
      resource: `${h.url}/api/v1`,
      code_challenge_method: 'S256',
      ...params,
    };
    for (const [k, v] of Object.entries(all)) if (v !== undefined) u.searchParams.set(k, v);
    return u.toString();
  }

  /** The user, already signed in in `browser`, approves; returns the redirect back to the client. */
  async function approve(browser: BrowserClient, url: string, decision = 'approve'): Promise<URL> {
    const consent = await browser.get(url);
    expect(consent.status).toBe(200);
    const page = await consent.text();
    const res = await browser.post('/oauth/authorize', { ...formFields(page, '/oauth/authorize'), decision });
    expect(res.status).toBe(303);
    return new URL(res.headers.get('location')!);
  }

  async function authorizedTokens(scope = 'svc.sites.read svc.usage.read') {
    const { browser } = await newUser();
    const client = await register();
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const back = await approve(browser, authorizeUrl(client, { code_challenge: await oauth.calculatePKCECodeChallenge(verifier), state, scope }));
    const params = oauth.validateAuthResponse(as, client, back, state);
    const res = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, REDIRECT, verifier, insecure);
    return { client, browser, tokens: await oauth.processAuthorizationCodeResponse(as, client, res), params, verifier };
  }

  const api = (token: string, path = '/api/v1/usage', init: RequestInit = {}) =>
    fetch(`${h.url}${path}`, { ...init, headers: { authorization: `Bearer ${token}`, ...(init.headers ?? {}) } });

  it('discovers the server from the resource, registers, signs in, approves, exchanges, calls the API, rotates, and detects reuse', async () => {
    // Protected-resource metadata (RFC 9728) names this server; its metadata (RFC 8414) names the endpoints.
    const rs = await oauth.processResourceDiscoveryResponse(
      new URL(`${h.url}/api/v1`),
      await oauth.resourceDiscoveryRequest(new URL(`${h.url}/api/v1`), insecure),
    );
    expect(rs.authorization_servers).toEqual([h.url]);
    expect(as.code_challenge_methods_supported).toEqual(['S256']);
    expect(as.registration_endpoint).toBe(`${h.url}/api/oauth/register`);

    const email = `flow-${Date.now()}@example.com`;
    await signUp(new BrowserClient(h.url), email, PASSWORD); // the account exists; this browser has no session
    const client = await register();
    expect(client.client_id).toMatch(/^client_/);

    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const url = authorizeUrl(client, { code_challenge: await oauth.calculatePKCECodeChallenge(verifier), state });
    const browser = new BrowserClient(h.url);
    const toSignIn = await browser.get(url);
    expect(toSignIn.status).toBe(302);
    const signInAt = new URL(toSignIn.headers.get('location')!, h.url);
    expect(signInAt.pathname).toBe('/dashboard/signin');
    const signedIn = await signIn(browser, email, PASSWORD, signInAt.searchParams.get('next')!);
    expect(signedIn.status).toBe(303);
    expect(signedIn.headers.get('location')).toBe(new URL(url).pathname + new URL(url).search);

    const consent = await (await browser.get(url)).text();
    expect(consent).toContain('Test App');
    expect(consent).toContain('svc.sites.read');
    expect(consent).toContain('svc.usage.read');
    expect(consent).not.toContain('data-scope="svc.publish"');
    const back = await approve(browser, url);
    expect(back.origin + back.pathname).toBe(REDIRECT);
    expect(back.searchParams.get('iss')).toBe(h.url);
    const params = oauth.validateAuthResponse(as, client, back, state);

    const tokenRes = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, REDIRECT, verifier, insecure);
    expect(tokenRes.headers.get('cache-control')).toBe('no-store');
    const tokens = await oauth.processAuthorizationCodeResponse(as, client, tokenRes);
    expect(tokens.token_type).toBe('bearer');
    expect(tokens.access_token).toMatch(/^svc_oat_/);
    expect(tokens.refresh_token).toMatch(/^svc_ort_/);
    expect(tokens.expires_in).toBe(900);
    expect(tokens.scope).toBe('svc.sites.read svc.usage.read');

    // Exactly the approved scopes: reads work, publishing (not approved) is a 403.
    expect((await api(tokens.access_token)).status).toBe(200);
    const sitesRes = await api(tokens.access_token, '/api/v1/sites');
    expect(sitesRes.status).toBe(200);
    const publish = await api(tokens.access_token, '/api/v1/sites', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ requestId: 'r', html: '<h1>x</h1>' }),
    });
    expect(publish.status).toBe(403);
    expect((await publish.json()).error).toMatchObject({ code: 'insufficient_scope', details: { required: 'svc.publish' } });

    // Rotation: a refresh gives a new pair, and the new access token works.
    const r1 = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, insecure),
    );
    expect(r1.refresh_token).not.toBe(tokens.refresh_token);
    expect(r1.access_token).not.toBe(tokens.access_token);
    expect(r1.scope).toBe('svc.sites.read svc.usage.read');
    expect((await api(r1.access_token)).status).toBe(200);

    // Reuse of the spent refresh token: refused, and the whole family dies with it.
    const reuse = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, insecure);
    expect(reuse.status).toBe(400);
    expect(await reuse.json()).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('reuse') });
    const fresh = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), r1.refresh_token!, insecure);
    expect(fresh.status).toBe(400);
    expect((await fresh.json()).error).toBe('invalid_grant');
    const dead = await api(r1.access_token);
    expect(dead.status).toBe(401);
    expect((await dead.json()).error.message).toContain('revoked');
    expect((await api(tokens.access_token)).status).toBe(401);
  });

  it('a wrong code_verifier is refused; the right one still redeems the code once', async () => {
    const { browser } = await newUser();
    const client = await register();
    const verifier = oauth.generateRandomCodeVerifier();
    const back = await approve(browser, authorizeUrl(client, { code_challenge: await oauth.calculatePKCECodeChallenge(verifier), state: 's1' }));
    const params = oauth.validateAuthResponse(as, client, back, 's1');
    const wrong = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, REDIRECT, oauth.generateRandomCodeVerifier(), insecure);
    expect(wrong.status).toBe(400);
    expect(await wrong.json()).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('code_verifier') });
    const right = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, REDIRECT, verifier, insecure);
    expect(right.status).toBe(200);
  });

  it('a reused code is refused and revokes the tokens issued from it', async () => {
    const { client, tokens, params, verifier } = await authorizedTokens();
    expect((await api(tokens.access_token)).status).toBe(200);
    const again = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, REDIRECT, verifier, insecure);
    expect(again.status).toBe(400);
    expect(await again.json()).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('already used') });
    expect((await api(tokens.access_token)).status).toBe(401);
    const refresh = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, insecure);
    expect((await refresh.json()).error).toBe('invalid_grant');
  });

  it('concurrent redemptions of one code: exactly one wins, and the family is revoked', async () => {
    const { browser } = await newUser();
    const client = await register();
    const verifier = oauth.generateRandomCodeVerifier();
    const back = await approve(browser, authorizeUrl(client, { code_challenge: await oauth.calculatePKCECodeChallenge(verifier), state: 'c' }));
    const params = oauth.validateAuthResponse(as, client, back, 'c');
    const results = await Promise.all([1, 2, 3].map(() => oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, REDIRECT, verifier, insecure)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status === 400)).toHaveLength(2);
    const winner = await oauth.processAuthorizationCodeResponse(as, client, results.find((r) => r.status === 200)!);
    expect((await api(winner.access_token)).status).toBe(401);
  });

  it('redirect URIs match exactly: a different one is never redirected to, and the token request must repeat it', async () => {
    const { browser } = await newUser();
    const client = await register();
    const challenge = await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier());
    for (const other of [`${REDIRECT}/`, `${REDIRECT}?x=1`, 'http://127.0.0.1:9/Callback', 'https://evil.example/callback']) {
      const res = await browser.get(authorizeUrl(client, { code_challenge: challenge, redirect_uri: other }));
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      expect(await res.text()).toContain('does not exactly match');
    }
    const verifier = oauth.generateRandomCodeVerifier();
    const back = await approve(browser, authorizeUrl(client, { code_challenge: await oauth.calculatePKCECodeChallenge(verifier), state: 'r' }));
    const params = oauth.validateAuthResponse(as, client, back, 'r');
    const res = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, 'http://127.0.0.1:9/other', verifier, insecure);
    expect(await res.json()).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('redirect_uri') });
  });

  it('missing, unknown and unregistered scopes, plain PKCE and a foreign resource are sent back as errors', async () => {
    const { browser } = await newUser();
    const client = await register({ scope: 'svc.sites.read svc.usage.read' });
    const challenge = await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier());
    const cases: [Record<string, string | undefined>, string][] = [
      [{ scope: undefined }, 'invalid_scope'],
      [{ scope: '' }, 'invalid_scope'],
      [{ scope: 'svc.sites.read svc.everything' }, 'invalid_scope'],
      [{ scope: 'svc.sites.read svc.publish' }, 'invalid_scope'],
      [{ code_challenge_method: 'plain' }, 'invalid_request'],
      [{ code_challenge_method: undefined }, 'invalid_request'],
      [{ resource: 'https://other.example/api/v1' }, 'invalid_target'],
      [{ resource: undefined }, 'invalid_target'],
      [{ response_type: 'token' }, 'unsupported_response_type'],
    ];
    for (const [params, error] of cases) {
      const res = await browser.get(authorizeUrl(client, { code_challenge: challenge, state: 'st', ...params }));
      expect(res.status, JSON.stringify(params)).toBe(302);
      const back = new URL(res.headers.get('location')!);
      expect(back.origin + back.pathname).toBe(REDIRECT);
      expect(back.searchParams.get('error'), JSON.stringify(params)).toBe(error);
      expect(back.searchParams.get('state')).toBe('st');
      expect(back.searchParams.get('code')).toBeNull();
    }
    const noChallenge = await browser.get(authorizeUrl(client, { state: 'st' }));
    expect(new URL(noChallenge.headers.get('location')!).searchParams.get('error')).toBe('invalid_request');
  });

  it('connected apps lists an app once its code is redeemed, with the approved scopes', async () => {
    const { browser } = await newUser();
    const client = await register({ client_name: 'Listed App' });
    const verifier = oauth.generateRandomCodeVerifier();
    const back = await approve(browser, authorizeUrl(client, { code_challenge: await oauth.calculatePKCECodeChallenge(verifier), state: 'l' }));
    expect(await (await browser.get('/dashboard/apps')).text()).not.toContain('Listed App');
    await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), oauth.validateAuthResponse(as, client, back, 'l'), REDIRECT, verifier, insecure),
    );
    const apps = await (await browser.get('/dashboard/apps')).text();
    expect(apps).toContain('Listed App');
    expect(apps).toContain('svc.usage.read');
    expect(apps).toContain('127.0.0.1:9');
  });

  it('the user can deny; the client gets access_denied and no code', async () => {
    const { browser } = await newUser();
    const client = await register();
    const back = await approve(
      browser,
      authorizeUrl(client, { code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()), state: 'd' }),
      'deny',
    );
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.get('state')).toBe('d');
    expect(back.searchParams.get('code')).toBeNull();
  });

  it('access tokens expire (clock), refresh tokens keep working, and expired codes are refused', async () => {
    const { client, tokens } = await authorizedTokens();
    expect((await api(tokens.access_token)).status).toBe(200);
    clock.advance(899);
    expect((await api(tokens.access_token)).status).toBe(200);
    clock.advance(2);
    const expired = await api(tokens.access_token);
    expect(expired.status).toBe(401);
    expect((await expired.json()).error.message).toContain('expired');
    expect(expired.headers.get('www-authenticate')).toContain('error="invalid_token"');
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, insecure),
    );
    expect((await api(refreshed.access_token)).status).toBe(200);

    const { browser } = await newUser();
    const verifier = oauth.generateRandomCodeVerifier();
    const back = await approve(browser, authorizeUrl(client, { code_challenge: await oauth.calculatePKCECodeChallenge(verifier), state: 'e' }));
    clock.advance(61);
    const late = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      oauth.None(),
      oauth.validateAuthResponse(as, client, back, 'e'),
      REDIRECT,
      verifier,
      insecure,
    );
    expect(await late.json()).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('expired') });
  });

  it("every request is counted once against its grant's rate limit, whichever of the grant's access tokens it carries; an expired one is not counted", async () => {
    const { client, tokens } = await authorizedTokens();
    const [token] = rowsOf<{ grant_id: string }>(
      await h.deps.db.execute(sql`select grant_id from oauth_tokens where hash = ${hashCredential(tokens.access_token)}`),
    );
    const counted = async () => {
      const rows = rowsOf<{ n: number | null }>(
        await h.deps.db.execute(sql`select sum(count)::int as n from rate_limit_windows where key = ${`cred:${token!.grant_id}`}`),
      );
      return rows[0]?.n ?? 0;
    };
    for (let i = 0; i < 3; i++) expect((await api(tokens.access_token)).status).toBe(200);
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, insecure),
    );
    for (let i = 0; i < 2; i++) expect((await api(refreshed.access_token)).status).toBe(200);
    expect(await counted()).toBe(5);
    clock.advance(901);
    expect((await api(refreshed.access_token)).status).toBe(401);
    expect(await counted()).toBe(5);
  });

  it('a refresh may narrow the scopes but never widen them', async () => {
    const { client, tokens } = await authorizedTokens();
    const wide = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, {
      ...insecure,
      additionalParameters: { scope: 'svc.sites.read svc.publish' },
    });
    expect(wide.status).toBe(400);
    expect((await wide.json()).error).toBe('invalid_scope');
    const narrow = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, { ...insecure, additionalParameters: { scope: 'svc.usage.read' } }),
    );
    expect(narrow.scope).toBe('svc.usage.read');
    expect((await api(narrow.access_token)).status).toBe(200);
    expect((await api(narrow.access_token, '/api/v1/sites')).status).toBe(403);
    // The next refresh can go back up to the approved scopes, not beyond.
    const back = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), narrow.refresh_token!, insecure),
    );
    expect(back.scope).toBe('svc.sites.read svc.usage.read');
  });

  it('another client cannot redeem the code or the refresh token', async () => {
    const { browser } = await newUser();
    const client = await register();
    const thief = await register({ client_name: 'Thief' });
    const verifier = oauth.generateRandomCodeVerifier();
    const back = await approve(browser, authorizeUrl(client, { code_challenge: await oauth.calculatePKCECodeChallenge(verifier), state: 't' }));
    const params = oauth.validateAuthResponse(as, client, back, 't');
    const stolen = await oauth.authorizationCodeGrantRequest(as, thief, oauth.None(), params, REDIRECT, verifier, insecure);
    expect((await stolen.json()).error).toBe('invalid_grant');
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, REDIRECT, verifier, insecure),
    );
    const refresh = await oauth.refreshTokenGrantRequest(as, thief, oauth.None(), tokens.refresh_token!, insecure);
    expect((await refresh.json()).error).toBe('invalid_grant');
  });

  it('an access token cannot create, rotate or revoke credentials: the dashboard only honours its session cookie', async () => {
    const { tokens, browser } = await authorizedTokens('svc.sites.read svc.usage.read');
    const keysBefore = await (await browser.get('/dashboard/keys')).text();
    const csrf = formFields(keysBefore, '/dashboard/keys').csrf;
    const res = await fetch(`${h.url}/dashboard/keys`, {
      method: 'POST',
      redirect: 'manual',
      headers: { authorization: `Bearer ${tokens.access_token}`, 'content-type': 'application/x-www-form-urlencoded', origin: h.url },
      body: new URLSearchParams({ csrf, name: 'sneaky', scopes: 'svc.publish' }!),
    });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toContain('/dashboard/signin');
    expect(await (await browser.get('/dashboard/keys')).text()).not.toContain('sneaky');
    // Nor is there any Account API route for credentials.
    for (const path of ['/api/v1/keys', '/api/v1/tokens', '/api/oauth/register/x']) {
      expect([404, 405]).toContain((await api(tokens.access_token, path, { method: 'POST' })).status);
    }
    // And a refresh token is not an access token.
    expect((await api(tokens.refresh_token!)).status).toBe(401);
  });

  it('the client can revoke its own authorization (RFC 7009); another client cannot', async () => {
    const { client, tokens } = await authorizedTokens();
    const thief = await register({ client_name: 'Thief' });
    await oauth.processRevocationResponse(await oauth.revocationRequest(as, thief, oauth.None(), tokens.refresh_token!, insecure));
    expect((await api(tokens.access_token)).status).toBe(200);
    await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, oauth.None(), tokens.refresh_token!, insecure));
    expect((await api(tokens.access_token)).status).toBe(401);
    const refresh = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, insecure);
    expect((await refresh.json()).error).toBe('invalid_grant');
    // Unknown tokens are fine to revoke (nothing happens).
    await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, oauth.None(), 'svc_ort_unknown', insecure));
  });

  it('disconnecting the app in the dashboard revokes its tokens', async () => {
    const { client, tokens, browser } = await authorizedTokens();
    const apps = await (await browser.get('/dashboard/apps')).text();
    expect(apps).toContain('Test App');
    const revoke = await browser.post(`/dashboard/apps/${client.client_id}/revoke`, formFields(apps, `/dashboard/apps/${client.client_id}/revoke`));
    expect(revoke.status).toBe(303);
    expect((await api(tokens.access_token)).status).toBe(401);
    const refresh = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, insecure);
    expect((await refresh.json()).error).toBe('invalid_grant');
    expect(await (await browser.get('/dashboard/apps')).text()).toContain('No connected apps');
  });
});
