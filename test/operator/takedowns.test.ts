import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerClient } from '../../service/oauth/clients.js';
import { exchangeAuthorizationCode, issueAuthorizationCode } from '../../service/oauth/tokens.js';
import { accountApiResource } from '../../service/auth/resources.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { getWithHost } from '../helpers/host-request.js';
import { BrowserClient, signIn, signUp } from '../oauth/browser-client.js';
import { ADMIN_TOKEN, callAdmin } from './admin.js';

const SCHEMA = { fields: [{ name: 'title', label: 'Title', type: 'string' }] };
const PASSWORD = 'a long enough password';

describe.each(dbKinds())('Takedowns: site, account (%s)', (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(kind, {}, { adminToken: ADMIN_TOKEN });
  });
  afterAll(async () => h?.close());

  const admin = (operation: string, input: unknown) => callAdmin(h, operation, input);

  async function publish(key: string, slug: string) {
    const res = await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: crypto.randomUUID(), html: `<h1>${slug} content</h1>`, slug } });
    expect(res.status).toBe(201);
    return (await res.json()).site as { id: string; slug: string };
  }

  async function table(key: string, siteId: string) {
    const res = await h.fetch(`/api/v1/sites/${siteId}/tables`, {
      method: 'POST',
      key,
      json: { name: 'Notes', methods: ['GET', 'POST'], publicInsert: true, schema: SCHEMA },
    });
    expect(res.status).toBe(201);
    return (await res.json()).table as { slug: string; writeKey: string; pathUrl: string };
  }

  const hostOf = (slug: string) => `${slug}.localhost:${new URL(h.url).port}`;

  it('a suspended site answers 451 with a neutral notice on both addresses, its Table API too; its owner sees why; restore brings it back as it was', async () => {
    const { key } = await h.account();
    const site = await publish(key, 'takedown-one');
    const t = await table(key, site.id);
    const tablePath = new URL(t.pathUrl).pathname;
    expect((await h.fetch(tablePath, { method: 'POST', json: { record: { title: 'kept' } } })).status).toBe(201);
    // Served and cached on this node first, so the suspension must reach the cache.
    expect((await h.fetch(`/s/${site.slug}/`)).status).toBe(200);
    expect((await getWithHost(`${h.url}/`, hostOf(site.slug))).status).toBe(200);
    expect((await h.fetch(tablePath)).status).toBe(200);

    const suspended = await admin('site.suspend', { site: site.slug, reason: 'phishing page reported by example bank', actor: 'alice (on call)' });
    expect(suspended.status).toBe(200);
    expect(suspended.body.result.site.suspension).toMatchObject({ cause: 'site', reason: 'phishing page reported by example bank' });

    const pathForm = await h.fetch(`/s/${site.slug}/`);
    expect(pathForm.status).toBe(451);
    const notice = await pathForm.text();
    expect(notice).toContain('has been suspended by the operator');
    expect(notice).not.toContain('phishing'); // neutral: the reason is the owner's to read
    const hostForm = await getWithHost(`${h.url}/`, hostOf(site.slug));
    expect(hostForm.status).toBe(451);
    expect(hostForm.body).toContain('has been suspended by the operator');
    expect((await getWithHost(`${h.url}/index.html`, hostOf(site.slug))).status).toBe(451);

    // The Table API answers no one, with or without the write key, reads and writes.
    const read = await h.fetch(tablePath);
    expect(read.status).toBe(451);
    expect((await read.json()).error.code).toBe('site_suspended');
    expect((await h.fetch(tablePath, { headers: { 'x-svc-write-key': t.writeKey } })).status).toBe(451);
    expect((await h.fetch(tablePath, { method: 'POST', json: { record: { title: 'new' } } })).status).toBe(451);

    // The owner reads why, and cannot change or delete it meanwhile.
    const own = await h.fetch(`/api/v1/sites/${site.id}`, { key });
    expect((await own.json()).site.suspension).toMatchObject({ cause: 'site', reason: 'phishing page reported by example bank' });
    const listed = await (await h.fetch('/api/v1/sites', { key })).json();
    expect(listed.sites[0].suspension.reason).toBe('phishing page reported by example bank');
    const del = await h.fetch(`/api/v1/sites/${site.id}`, { method: 'DELETE', key });
    expect(del.status).toBe(451);
    expect((await del.json()).error.message).toContain('phishing page reported by example bank');
    expect((await h.fetch(`/api/v1/sites/${site.id}`, { method: 'PATCH', key, json: { visibility: 'private', password: 'secret-pass' } })).status).toBe(451);

    const restored = await admin('site.restore', { site: site.id, reason: 'owner removed the form', actor: 'bob' });
    expect(restored.status).toBe(200);
    const back = await h.fetch(`/s/${site.slug}/`);
    expect(back.status).toBe(200);
    expect(await back.text()).toContain('takedown-one content');
    const rows = await (await h.fetch(tablePath)).json();
    expect(rows.records.map((r: { fields: { title: string } }) => r.fields.title)).toEqual(['kept']);
    expect((await (await h.fetch(`/api/v1/sites/${site.id}`, { key })).json()).site.suspension).toBeNull();

    const audit = await admin('audit.list', { target: site.id });
    expect(audit.body.result.entries).toMatchObject([
      { action: 'site.restore', actor: 'bob', reason: 'owner removed the form', targetKind: 'site', target: site.id },
      { action: 'site.suspend', actor: 'alice (on call)', reason: 'phishing page reported by example bank', targetKind: 'site', target: site.id },
    ]);
    expect(Date.parse(audit.body.result.entries[0].at)).toBeGreaterThan(0);
  });

  it('bad input to the takedown operations is a clear 4xx and changes nothing', async () => {
    const { key } = await h.account();
    const site = await publish(key, 'takedown-bad-input');
    const before = (await admin('audit.list', { limit: 1000 })).body.result.entries.length;

    const noReason = await admin('site.suspend', { site: site.id });
    expect(noReason.status).toBe(400);
    expect(noReason.body.error.message).toMatch(/reason/);
    expect((await admin('site.suspend', { site: site.id, reason: 'x' })).status).toBe(400);
    const unknown = await admin('site.suspend', { site: 'no-such-site', reason: 'spam everywhere' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.message).toContain('no-such-site');
    expect((await admin('site.restore', { site: site.id, reason: 'was never suspended' })).status).toBe(409);
    expect((await admin('account.suspend', { email: 'nobody@example.com', reason: 'spam everywhere' })).status).toBe(404);
    const badWallet = await admin('wallet.block', { address: '0x1234', reason: 'spam everywhere' });
    expect(badWallet.status).toBe(400);
    expect(badWallet.body.error.message).toMatch(/address/);
    expect((await admin('wallet.unblock', { address: `0x${'ab'.repeat(20)}`, reason: 'not blocked at all' })).status).toBe(409);
    expect((await admin('site.nuke', {})).status).toBe(404);

    expect((await admin('site.suspend', { site: site.id, reason: 'first time' })).status).toBe(200);
    const twice = await admin('site.suspend', { site: site.id, reason: 'second time' });
    expect(twice.status).toBe(409);
    expect(twice.body.error.message).toContain('first time');

    const after = (await admin('audit.list', { limit: 1000 })).body.result.entries;
    expect(after.length).toBe(before + 1);
    expect((await h.fetch(`/api/v1/sites/${site.id}`, { key }).then((r) => r.json())).site.suspension.reason).toBe('first time');
  });

  it('an admin endpoint call without the token is a plain 404, and does nothing', async () => {
    const { key } = await h.account();
    const site = await publish(key, 'takedown-no-token');
    const res = await h.fetch('/_admin/site.suspend', { method: 'POST', json: { site: site.id, reason: 'no token given' } });
    expect(res.status).toBe(404);
    expect((await h.fetch(`/s/${site.slug}/`)).status).toBe(200);
  });

  it('a suspended account: keys, OAuth tokens and sessions refused with the reason, its sites suspended; restore brings all back', async () => {
    const email = `suspend-me-${Date.now()}@example.com`;
    const browser = new BrowserClient(h.url);
    expect((await signUp(browser, email, PASSWORD)).status).toBe(303);
    expect((await browser.get('/dashboard')).status).toBe(200);
    const key = (await admin('key.create', { email, scopes: ['svc.publish', 'svc.sites.read', 'svc.sites.write', 'svc.usage.read'] })).body.result
      .secret as string;
    const site = await publish(key, 'takedown-account');
    const other = await h.account();
    const bystander = await publish(other.key, 'takedown-bystander');

    // An OAuth access token of the account, as a connected app holds one.
    const accountId = (await (await h.fetch('/api/v1/usage', { key })).json()).accountId as string;
    const client = await registerClient(h.deps, { client_name: 'Test app', redirect_uris: ['http://127.0.0.1:9/cb'] });
    /** An authorization code the account approved for the app, with its PKCE verifier. */
    const authorize = async () => {
      const verifier = randomBytes(32).toString('base64url');
      const code = await issueAuthorizationCode(h.deps, {
        accountId,
        clientId: client.client_id,
        scopes: ['svc.sites.read'],
        redirectUri: 'http://127.0.0.1:9/cb',
        codeChallenge: createHash('sha256').update(verifier).digest('base64url'),
        resource: accountApiResource(h.deps),
      });
      return { code, verifier };
    };
    const first = await authorize();
    const { access_token, refresh_token } = await exchangeAuthorizationCode(h.deps, {
      clientId: client.client_id,
      code: first.code,
      redirectUri: 'http://127.0.0.1:9/cb',
      codeVerifier: first.verifier,
    });
    expect((await h.fetch('/api/v1/sites', { key: access_token })).status).toBe(200);
    // A second authorization, not yet exchanged when the account is suspended.
    const pending = await authorize();
    const tokenEndpoint = (form: Record<string, string>) =>
      h.fetch('/oauth/token', {
        method: 'POST',
        body: new URLSearchParams({ client_id: client.client_id, ...form }).toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });

    const suspended = await admin('account.suspend', { email, reason: 'terms of service, section 4', actor: 'carol' });
    expect(suspended.status).toBe(200);
    expect(suspended.body.result.sitesSuspended).toBe(1);

    for (const credential of [key, access_token]) {
      const refused = await h.fetch('/api/v1/sites', { key: credential });
      expect(refused.status).toBe(403);
      const body = await refused.json();
      expect(body.error.code).toBe('account_suspended');
      expect(body.error.message).toContain('terms of service, section 4');
    }
    // No new tokens either, from a code or a refresh token; both stay usable once restored.
    const forms: Record<string, string>[] = [
      { grant_type: 'authorization_code', code: pending.code, redirect_uri: 'http://127.0.0.1:9/cb', code_verifier: pending.verifier },
      { grant_type: 'refresh_token', refresh_token },
    ];
    for (const form of forms) {
      const refused = await tokenEndpoint(form);
      expect(refused.status).toBe(400);
      const body = await refused.json();
      expect([body.error, body.error_description]).toEqual(['invalid_grant', expect.stringContaining('terms of service, section 4')]);
    }
    // The session is refused: the dashboard sends to sign-in, which says why.
    const dash = await browser.get('/dashboard');
    expect(dash.status).toBe(303);
    const again = await signIn(new BrowserClient(h.url), email, PASSWORD);
    expect(again.status).toBe(403);
    expect(await again.text()).toContain('terms of service, section 4');

    expect((await h.fetch(`/s/${site.slug}/`)).status).toBe(451);
    expect((await h.fetch(`/s/${bystander.slug}/`)).status).toBe(200);

    // A site suspended on its own stays suspended when the account is restored.
    const second = await h.fetch('/_admin/site.suspend', {
      method: 'POST',
      json: { site: site.id, reason: 'its own takedown' },
      headers: { 'x-svc-admin-token': ADMIN_TOKEN },
    });
    expect(second.status).toBe(200);
    expect((await admin('account.restore', { email, reason: 'appeal granted' })).status).toBe(200);
    expect((await h.fetch('/api/v1/sites', { key })).status).toBe(200);
    expect((await h.fetch('/api/v1/sites', { key: access_token })).status).toBe(200);
    expect((await tokenEndpoint({ grant_type: 'refresh_token', refresh_token })).status).toBe(200);
    expect((await browser.get('/dashboard')).status).toBe(200);
    const view = (await (await h.fetch(`/api/v1/sites/${site.id}`, { key })).json()).site;
    expect(view.suspension).toMatchObject({ cause: 'site', reason: 'its own takedown' });
    const sitesPage = await (await browser.get('/dashboard/sites')).text();
    expect(sitesPage).toContain('its own takedown');
    expect((await admin('site.restore', { site: site.id, reason: 'cleared' })).status).toBe(200);
    expect((await h.fetch(`/s/${site.slug}/`)).status).toBe(200);

    const audit = (await admin('audit.list', { target: email })).body.result.entries;
    expect(audit.map((e: { action: string }) => e.action)).toEqual(['account.restore', 'account.suspend']);
    expect(audit[1]).toMatchObject({ actor: 'carol', reason: 'terms of service, section 4' });
  });
  // The first invocation starts a sandbox worker: slow on a loaded machine.
  it("a suspended account's Function answers other accounts 404 until the account is restored", { timeout: 120_000 }, async () => {
    const owner = await h.account();
    const caller = await h.account();
    const slug = `shared-fn-${Date.now() % 100000}`;
    const made = await h.fetch('/api/v1/functions', { method: 'POST', key: owner.key, json: { name: 'Shared', slug, code: 'export default () => "served"' } });
    const fn = (await made.json()).function as { id: string };
    expect((await h.fetch(`/api/v1/functions/${fn.id}/publish`, { method: 'POST', key: owner.key })).status).toBe(200);
    expect((await admin('function.access', { email: owner.email, function: fn.id, allowUserInvoke: true })).status).toBe(200);
    const invoke = () => h.fetch(`/api/v1/functions/invoke/${slug}`, { method: 'POST', key: caller.key, json: { method: 'GET', path: '/' } });
    expect((await invoke()).status).toBe(200);
    expect((await admin('account.suspend', { email: owner.email, reason: 'malware distribution' })).status).toBe(200);
    expect((await invoke()).status).toBe(404);
    expect((await admin('account.restore', { email: owner.email, reason: 'cleaned up' })).status).toBe(200);
    const again = await invoke();
    expect(again.status).toBe(200);
    expect((await again.json()).response.body).toBe('served');
  });
});
