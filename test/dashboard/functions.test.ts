import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { BrowserClient, formFields, signUp } from '../oauth/browser-client.js';

const PASSWORD = 'a long enough password';
const REDIRECT = 'http://localhost:7/cb';

describe.each(dbKinds())('Dashboard functions, and OAuth tokens at invoke (%s)', (kind) => {
  let h: Harness;
  let n = 0;
  beforeAll(async () => {
    h = await startHarness(kind, { SVC_TRUST_PROXY: '1' });
  });
  afterAll(async () => h?.close());

  /** A dashboard user plus a personal key of theirs made through the dashboard. */
  async function user(scopes: string[]) {
    const browser = new BrowserClient(h.url);
    expect((await signUp(browser, `fn${++n}-${kind}@example.com`, PASSWORD)).status).toBe(303);
    const page = await (await browser.get('/dashboard/keys')).text();
    const made = await (await browser.post('/dashboard/keys', { csrf: formFields(page, '/dashboard/keys').csrf, name: 'k', scopes })).text();
    return { browser, key: /id="new-key-secret">(svc_pat_[\w-]+)</.exec(made)![1] };
  }

  async function liveFunction(key: string, body: string) {
    const slug = `dash-fn-${kind}-${++n}`;
    const res = await h.fetch('/api/v1/functions', {
      method: 'POST',
      key,
      json: { name: `Fn ${n}`, slug, code: `export default () => ${JSON.stringify(body)}` },
    });
    expect(res.status).toBe(201);
    const { function: fn } = await res.json();
    expect((await h.fetch(`/api/v1/functions/${fn.id}/publish`, { method: 'POST', key })).status).toBe(200);
    return fn as { id: string; slug: string };
  }

  it('toggles svc-user access: another account can invoke only while it is on', async () => {
    const owner = await user(['svc.functions.write', 'svc.functions.read', 'svc.functions.invoke']);
    const other = await user(['svc.functions.invoke']);
    const fn = await liveFunction(owner.key!, 'shared hello');
    const invoke = () => h.fetch(`/api/v1/functions/invoke/${fn.slug}`, { method: 'POST', key: other.key, json: { method: 'GET', path: '/' } });
    expect((await invoke()).status).toBe(404);

    const page = await (await owner.browser.get('/dashboard/functions')).text();
    expect(page).toContain(fn.slug);
    const on = await owner.browser.post(`/dashboard/functions/${fn.id}/user-access`, formFields(page, `/dashboard/functions/${fn.id}/user-access`));
    expect(on.status).toBe(303);
    const res = await invoke();
    expect(res.status).toBe(200);
    expect((await res.json()).response.body).toBe('shared hello');

    const page2 = await (await owner.browser.get('/dashboard/functions')).text();
    expect(page2).toContain('svc-user access: <b>on</b>');
    await owner.browser.post(`/dashboard/functions/${fn.id}/user-access`, formFields(page2, `/dashboard/functions/${fn.id}/user-access`));
    expect((await invoke()).status).toBe(404);

    // Another account cannot flip it.
    const otherPage = await (await other.browser.get('/dashboard/functions')).text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(otherPage)![1]!;
    expect((await other.browser.post(`/dashboard/functions/${fn.id}/user-access`, { csrf, enabled: 'true' })).status).toBe(404);
    expect((await invoke()).status).toBe(404);
  });

  it('sets and deletes secrets without ever showing their values', async () => {
    const owner = await user(['svc.functions.write', 'svc.functions.read']);
    const fn = await liveFunction(owner.key!, 'x');
    const value = `s3cr3t-${randomBytes(8).toString('hex')}`;
    const page = await (await owner.browser.get('/dashboard/functions')).text();
    const csrf = formFields(page, `/dashboard/functions/${fn.id}/user-access`).csrf;
    const set = await owner.browser.post(`/dashboard/functions/${fn.id}/secrets`, { csrf, name: 'API_TOKEN', value });
    expect(set.status).toBe(303);
    const after = await (await owner.browser.get('/dashboard/functions?done=secret_set')).text();
    expect(after).toContain('API_TOKEN');
    expect(after).not.toContain(value);
    const api = await (await h.fetch(`/api/v1/functions/${fn.id}`, { key: owner.key })).text();
    expect(api).toContain('API_TOKEN');
    expect(api).not.toContain(value);
    // The spec: draft and publish are refused on the Account API once secrets exist.
    expect((await h.fetch(`/api/v1/functions/${fn.id}/publish`, { method: 'POST', key: owner.key })).status).toBe(409);

    const bad = await owner.browser.post(`/dashboard/functions/${fn.id}/secrets`, { csrf, name: 'not valid!', value: 'v' });
    expect(bad.status).toBe(400);
    const del = await owner.browser.post(`/dashboard/functions/${fn.id}/secrets/delete`, { csrf, name: 'API_TOKEN' });
    expect(del.status).toBe(303);
    expect(await (await h.fetch(`/api/v1/functions/${fn.id}`, { key: owner.key })).text()).not.toContain('API_TOKEN');
  });

  it('invoke refuses OAuth access tokens even when they carry svc.functions.invoke', async () => {
    const owner = await user(['svc.functions.write', 'svc.functions.invoke']);
    const fn = await liveFunction(owner.key!, 'personal keys only');
    const { client_id } = await (await h.fetch('/api/oauth/register', { method: 'POST', json: { redirect_uris: [REDIRECT], client_name: 'Invoker' } })).json();
    const verifier = randomBytes(32).toString('base64url');
    const q = new URLSearchParams({
      response_type: 'code',
      client_id,
      redirect_uri: REDIRECT,
      scope: 'svc.functions.invoke svc.functions.read',
      resource: `${h.url}/api/v1`,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    });
    const consent = await (await owner.browser.get(`/oauth/authorize?${q}`)).text();
    const back = await owner.browser.post('/oauth/authorize', { ...formFields(consent, '/oauth/authorize'), decision: 'approve' });
    const code = new URL(back.headers.get('location')!).searchParams.get('code')!;
    const tokenRes = await h.fetch('/oauth/token', {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'authorization_code', client_id, code, redirect_uri: REDIRECT, code_verifier: verifier }),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    const { access_token, scope } = await tokenRes.json();
    expect(scope).toBe('svc.functions.invoke svc.functions.read');
    expect((await h.fetch('/api/v1/functions', { key: access_token })).status).toBe(200);
    const res = await h.fetch(`/api/v1/functions/invoke/${fn.slug}`, { method: 'POST', key: access_token, json: { method: 'GET', path: '/' } });
    expect(res.status).toBe(403);
    expect((await h.fetch(`/api/v1/functions/invoke/${fn.slug}`, { method: 'POST', key: owner.key, json: { method: 'GET', path: '/' } })).status).toBe(200);
  });
});
