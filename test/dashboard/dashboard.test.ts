import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { BrowserClient, formFields, inputValue, signIn, signUp } from '../oauth/browser-client.js';

const PASSWORD = 'a long enough password';

describe.each(dbKinds())('Dashboard over HTTP (%s)', (kind) => {
  let h: Harness;
  let n = 0;
  beforeAll(async () => {
    // A fixed clock keeps every rate-limit window still, so the throttling tests cannot straddle a boundary.
    h = await startHarness(kind, { SVC_TRUST_PROXY: '1' }, { clock: { now: () => new Date('2026-03-01T12:00:30Z') } });
  });
  afterAll(async () => h?.close());

  async function user() {
    const email = `dash${++n}@example.com`;
    const browser = new BrowserClient(h.url);
    const res = await signUp(browser, email, PASSWORD);
    expect(res.status).toBe(303);
    return { email, browser };
  }

  it('sign-up starts a session in a signed, HttpOnly, SameSite cookie; sign-out ends it for good', async () => {
    const browser = new BrowserClient(h.url);
    const page = await (await browser.get('/dashboard/signup')).text();
    const res = await browser.post('/dashboard/signup', {
      csrf: inputValue(page, 'csrf'),
      next: '/dashboard',
      email: 'Cookie@Example.com',
      password: PASSWORD,
    });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/dashboard');
    const setCookie = res.headers.getSetCookie().find((c) => c.startsWith('svc_session='))!;
    expect(setCookie).toMatch(/HttpOnly/i);
    expect(setCookie).toMatch(/SameSite=Lax/i);
    expect(setCookie).toMatch(/Path=\//);
    const overview = await browser.get('/dashboard');
    expect(overview.status).toBe(200);
    expect(await overview.text()).toContain('cookie@example.com');

    // A tampered cookie (signature broken) is no session.
    const forged = new BrowserClient(h.url);
    const value = browser.cookies.get('svc_session')!;
    forged.cookies.set(
      'svc_session',
      value.replace(/^./, (ch) => (ch === 'a' ? 'b' : 'a')),
    );
    expect((await forged.get('/dashboard')).status).toBe(303);

    const stolen = new Map(browser.cookies);
    const home = await (await browser.get('/dashboard')).text();
    const out = await browser.post('/dashboard/signout', { csrf: inputValue(home, 'csrf') });
    expect(out.status).toBe(303);
    expect((await browser.get('/dashboard')).status).toBe(303);
    // Replaying the old cookie does not bring the session back: it was deleted on the server.
    const replay = new BrowserClient(h.url);
    for (const [k, v] of stolen) replay.cookies.set(k, v);
    const again = await replay.get('/dashboard');
    expect(again.status).toBe(303);
    expect(again.headers.get('location')).toContain('/dashboard/signin');
  });

  it('sign-in checks the password, does not tell which part was wrong, and refuses duplicate sign-ups', async () => {
    const { email } = await user();
    const wrong = await signIn(new BrowserClient(h.url), email, 'not the password');
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).toContain('Wrong email or password');
    const unknown = await signIn(new BrowserClient(h.url), 'nobody@example.com', PASSWORD);
    expect(unknown.status).toBe(401);
    expect(await unknown.text()).toContain('Wrong email or password');
    expect((await signIn(new BrowserClient(h.url), email.toUpperCase(), PASSWORD)).status).toBe(303);
    const dup = await signUp(new BrowserClient(h.url), email, PASSWORD);
    expect(dup.status).toBe(409);
    const short = await signUp(new BrowserClient(h.url), `short${n}@example.com`, 'short');
    expect(short.status).toBe(400);
    expect(await short.text()).toContain('at least 10 characters');
  });

  it('repeated wrong passwords for one email are throttled', async () => {
    const { email } = await user();
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) statuses.push((await signIn(new BrowserClient(h.url), email, `wrong-${i}`)).status);
    expect(statuses.slice(0, 10).every((s) => s === 401)).toBe(true);
    expect(statuses[10]).toBe(429);
    // Even the right password waits out the window.
    expect((await signIn(new BrowserClient(h.url), email, PASSWORD)).status).toBe(429);
  });

  it('one address trying many accounts is throttled too', async () => {
    const attacker = new BrowserClient(h.url);
    const statuses: number[] = [];
    for (let i = 0; i < 21; i++) statuses.push((await signIn(attacker, `victim${i}-${kind}@example.com`, 'guess')).status);
    expect(statuses.slice(0, 20).every((s) => s === 401)).toBe(true);
    expect(statuses[20]).toBe(429);
    // Another address is unaffected.
    const { email } = await user();
    expect((await signIn(new BrowserClient(h.url), email, PASSWORD)).status).toBe(303);
  });

  it('every form needs the CSRF token of its own session, and a foreign Origin is refused', async () => {
    const alice = await user();
    const bob = await user();
    const alicePage = await (await alice.browser.get('/dashboard/keys')).text();
    const bobCsrf = formFields(await (await bob.browser.get('/dashboard/keys')).text(), '/dashboard/keys').csrf;
    const form = { name: 'csrf-test', scopes: 'svc.sites.read' };
    expect((await alice.browser.post('/dashboard/keys', form)).status).toBe(403);
    expect((await alice.browser.post('/dashboard/keys', { ...form, csrf: bobCsrf })).status).toBe(403);
    const aliceCsrf = formFields(alicePage, '/dashboard/keys').csrf;
    expect((await alice.browser.post('/dashboard/keys', { ...form, csrf: aliceCsrf }, { origin: 'https://evil.example' })).status).toBe(403);
    expect(await (await alice.browser.get('/dashboard/keys')).text()).not.toContain('csrf-test');
    // Signed-out forms are protected too (login CSRF).
    const anon = new BrowserClient(h.url);
    expect((await anon.post('/dashboard/signin', { email: alice.email, password: PASSWORD, next: '/dashboard' })).status).toBe(403);
    expect((await alice.browser.post('/dashboard/keys', { ...form, csrf: aliceCsrf })).status).toBe(201);
  });

  it('creates a key shown once, which then works on the Account API with its scopes only, and revokes it', async () => {
    const { browser } = await user();
    const page = await (await browser.get('/dashboard/keys')).text();
    const created = await browser.post('/dashboard/keys', {
      csrf: formFields(page, '/dashboard/keys').csrf,
      name: 'ci script',
      scopes: ['svc.sites.read', 'svc.usage.read'],
    });
    expect(created.status).toBe(201);
    expect(created.headers.get('cache-control')).toBe('no-store');
    const html = await created.text();
    const secret = /id="new-key-secret">(svc_pat_[\w-]+)</.exec(html)![1];
    const use = (path: string) => fetch(`${h.url}${path}`, { headers: { authorization: `Bearer ${secret}` } });
    expect((await use('/api/v1/sites')).status).toBe(200);
    expect((await use('/api/v1/usage')).status).toBe(200);
    expect((await use('/api/v1/functions')).status).not.toBe(200);

    const list = await (await browser.get('/dashboard/keys')).text();
    expect(list).toContain('ci script');
    expect(list).not.toContain(secret);
    expect(list).toContain(secret!.slice(0, 12));
    const keyId = /data-key="(key_[0-9a-z]+)"/.exec(list)![1];
    const revoked = await browser.post(`/dashboard/keys/${keyId}/revoke`, formFields(list, `/dashboard/keys/${keyId}/revoke`));
    expect(revoked.status).toBe(303);
    const after = await use('/api/v1/sites');
    expect(after.status).toBe(401);
    expect((await after.json()).error.message).toContain('revoked');
  });

  it('keys of another account cannot be revoked by id', async () => {
    const alice = await user();
    const bob = await user();
    const alicePage = await (await alice.browser.get('/dashboard/keys')).text();
    const made = await (
      await alice.browser.post('/dashboard/keys', { csrf: formFields(alicePage, '/dashboard/keys').csrf, name: 'mine', scopes: 'svc.usage.read' })
    ).text();
    const secret = /id="new-key-secret">(svc_pat_[\w-]+)</.exec(made)![1];
    const keyId = /data-key="(key_[0-9a-z]+)"/.exec(made)![1];
    const bobPage = await (await bob.browser.get('/dashboard/keys')).text();
    const res = await bob.browser.post(`/dashboard/keys/${keyId}/revoke`, { csrf: formFields(bobPage, '/dashboard/keys').csrf });
    expect(res.status).toBe(404);
    expect((await fetch(`${h.url}/api/v1/usage`, { headers: { authorization: `Bearer ${secret}` } })).status).toBe(200);
  });

  it('lists the sites of the account (and only them), and shows usage', async () => {
    const { browser, email } = await user();
    const page = await (await browser.get('/dashboard/keys')).text();
    const made = await (await browser.post('/dashboard/keys', { csrf: formFields(page, '/dashboard/keys').csrf, name: 'pub', scopes: 'svc.publish' })).text();
    const secret = /id="new-key-secret">(svc_pat_[\w-]+)</.exec(made)![1];
    const pub = await fetch(`${h.url}/api/v1/sites`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ requestId: 'dash-1', html: '<h1>hi</h1>', slug: `dash-site-${n}` }),
    });
    expect(pub.status).toBe(201);
    const sites = await (await browser.get('/dashboard/sites')).text();
    expect(sites).toContain(`dash-site-${n}`);
    const other = await user();
    expect(await (await other.browser.get('/dashboard/sites')).text()).not.toContain(`dash-site-${n - 1}`);
    const usage = await (await browser.get('/dashboard/usage')).text();
    expect(usage).toContain('data-usage="sites"');
    expect(email).toBeTruthy();
  });

  it('pages carry no-store, CSP without inline scripts, and anti-framing headers; next= cannot leave the site', async () => {
    const { browser } = await user();
    const res = await browser.get('/dashboard');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect((await browser.get('/dashboard/assets/style.css')).headers.get('content-type')).toContain('text/css');

    const anon = new BrowserClient(h.url);
    const { email } = await user();
    // Browsers drop tabs and newlines inside a URL: "/<TAB>/evil.example" would be "//evil.example".
    for (const next of ['//evil.example/x', 'https://evil.example/', '/\\evil.example', '/\t/evil.example', '/\n/evil.example', '/\r\n/evil.example']) {
      const r = await signIn(anon, email, PASSWORD, next);
      expect(r.status).toBe(303);
      expect(r.headers.get('location')).toBe('/dashboard');
      anon.cookies.clear();
    }
    // Signed in, the sign-in page sends the visitor on at once: the same rule holds there.
    const { browser: signedIn } = await user();
    for (const next of ['%2F%09%2Fevil.example', '%2F%0A%2Fevil.example', '%2F%0D%2Fevil.example']) {
      const r = await signedIn.get(`/dashboard/signin?next=${next}`);
      expect(r.status).toBe(303);
      expect(r.headers.get('location')).toBe('/dashboard');
    }
    expect((await signedIn.get('/dashboard/signin?next=%2Fdashboard%2Fkeys%3Fx%3D1')).headers.get('location')).toBe('/dashboard/keys?x=1');
    // Pages of a signed-out visitor send them to sign in, then back.
    const gate = await new BrowserClient(h.url).get('/dashboard/keys');
    expect(gate.status).toBe(303);
    expect(gate.headers.get('location')).toBe('/dashboard/signin?next=%2Fdashboard%2Fkeys');
    const slash = await new BrowserClient(h.url).get('/dashboard/');
    expect(slash.status).toBe(301);
    expect(slash.headers.get('location')).toBe('/dashboard');
  });

  it('HTML from users is escaped, never executed', async () => {
    const { browser } = await user();
    const page = await (await browser.get('/dashboard/keys')).text();
    const res = await browser.post('/dashboard/keys', {
      csrf: formFields(page, '/dashboard/keys').csrf,
      name: '<script>alert(1)</script>',
      scopes: 'svc.usage.read',
    });
    const html = await res.text();
    expect(html).not.toContain('<script>alert(1)</script>');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
  });

  it('changes the password (current one required) and signs other browsers out; ends other sessions on demand', async () => {
    const { email, browser: a } = await user();
    const b = new BrowserClient(h.url);
    expect((await signIn(b, email, PASSWORD)).status).toBe(303);
    const page = await (await a.get('/dashboard/account')).text();
    expect(page).toContain('2 signed-in sessions');
    const csrf = formFields(page, '/dashboard/account/password').csrf;
    const wrong = await a.post('/dashboard/account/password', { csrf, current: 'not it at all', password: 'brand new password' });
    expect(wrong.status).toBe(401);
    expect((await b.get('/dashboard')).status).toBe(200);
    const short = await a.post('/dashboard/account/password', { csrf, current: PASSWORD, password: 'short' });
    expect(short.status).toBe(400);
    const ok = await a.post('/dashboard/account/password', { csrf, current: PASSWORD, password: 'brand new password' });
    expect(ok.status).toBe(303);
    expect((await a.get('/dashboard')).status).toBe(200);
    expect((await b.get('/dashboard')).status).toBe(303);
    expect((await signIn(new BrowserClient(h.url), email, PASSWORD)).status).toBe(401);
    const c = new BrowserClient(h.url);
    expect((await signIn(c, email, 'brand new password')).status).toBe(303);

    const account = await (await a.get('/dashboard/account')).text();
    const end = await a.post('/dashboard/account/sessions/end-others', formFields(account, '/dashboard/account/sessions/end-others'));
    expect(end.status).toBe(303);
    expect((await c.get('/dashboard')).status).toBe(303);
    expect(await (await a.get('/dashboard/account')).text()).toContain('only signed-in session');
  });
});

// After the suite above has closed its service (one database open at a time).
describe.each(dbKinds())('Dashboard with sign-up closed (%s)', (kind) => {
  it('sign-up can be closed by the operator', async () => {
    const closed = await startHarness(kind, { SVC_SIGNUP_DISABLED: '1' });
    try {
      const b = new BrowserClient(closed.url);
      expect((await b.get('/dashboard/signup')).status).toBe(403);
      expect((await b.post('/dashboard/signup', { email: 'x@example.com', password: PASSWORD, csrf: 'x' })).status).toBe(403);
      expect(await (await b.get('/dashboard/signin')).text()).not.toContain('Create an account');
    } finally {
      await closed.close();
    }
  });
});
