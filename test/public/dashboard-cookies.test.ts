import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listPersonalKeys } from '../../service/accounts/personal-keys.js';
import { sitesDomainWarning, registrableDomain } from '../../service/sites/sites-domain-check.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { getWithHost } from '../helpers/host-request.js';
import { BrowserClient, formFields, inputValue, signUp } from '../oauth/browser-client.js';

const PASSWORD = 'a long enough password';

describe("the start-up warning about a sites domain on the dashboard's site", () => {
  it('names the shared registrable domain, and stays quiet for separate ones and for localhost', () => {
    expect(sitesDomainWarning({ baseUrl: 'https://svc.example.com', sitesDomain: 'svc.example.com' })).toContain('shares the registrable domain example.com');
    expect(sitesDomainWarning({ baseUrl: 'https://svc.example.com', sitesDomain: 'pages.example.com' })).toContain('example.com');
    expect(sitesDomainWarning({ baseUrl: 'https://svc.example.co.uk', sitesDomain: 'sites.example.co.uk' })).toContain('example.co.uk');
    expect(sitesDomainWarning({ baseUrl: 'https://svc.example.com', sitesDomain: 'svc-sites.example' })).toBeNull();
    expect(sitesDomainWarning({ baseUrl: 'https://a.example.co.uk', sitesDomain: 'b.other.co.uk' })).toBeNull();
    expect(sitesDomainWarning({ baseUrl: 'http://localhost:8787', sitesDomain: 'localhost' })).toBeNull();
    expect(registrableDomain('x.y.example.com.au')).toBe('example.com.au');
  });
});

describe('dashboard cookies over https: __Host- names', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('pglite', { SVC_BASE_URL: 'https://svc.example.com', SVC_SITES_DOMAIN: 'svc-sites.example' });
  });
  afterAll(async () => h?.close());

  it('sets the session, browser and pre-session cookies under __Host- names: Secure, Path=/, no Domain', async () => {
    const browser = new BrowserClient(h.url);
    const page = await browser.get('/dashboard/signup');
    const pre = page.headers.getSetCookie().find((c) => c.startsWith('__Host-svc_presession='))!;
    expect(pre).toMatch(/; Secure/);
    const res = await browser.post('/dashboard/signup', {
      csrf: inputValue(await page.text(), 'csrf'),
      next: '/dashboard',
      email: 'https@example.com',
      password: PASSWORD,
    });
    expect(res.status).toBe(303);
    const cookies = res.headers.getSetCookie();
    for (const name of ['__Host-svc_session=', '__Host-svc_browser=']) {
      const line = cookies.find((c) => c.startsWith(name))!;
      expect(line, name).toMatch(/; Path=\/(;|$)/);
      expect(line).toMatch(/; Secure/);
      expect(line).toMatch(/; HttpOnly/);
      expect(line).not.toMatch(/Domain=/i);
    }
    expect((await browser.get('/dashboard')).status).toBe(200);
    // The names a sibling host could plant are not read at all.
    const planted = new BrowserClient(h.url);
    planted.cookies.set('svc_session', browser.cookies.get('__Host-svc_session')!);
    planted.cookies.set('svc_browser', browser.cookies.get('__Host-svc_browser')!);
    expect((await planted.get('/dashboard')).status).toBe(303);
  });
});

describe('dashboard cookies over plain http: planted cookies and same-site forms count for nothing', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('pglite', { SVC_TRUST_PROXY: '1' });
  });
  afterAll(async () => h?.close());

  /** The raw Cookie header a browser sends when a sibling host planted `planted` beside the client's own cookies (longer path first). */
  const withPlanted = (client: BrowserClient, planted: Record<string, string>) =>
    [...Object.entries(planted), ...client.cookies].map(([k, v]) => `${k}=${v}`).join('; ');

  it('a second session cookie (one planted for the parent domain) makes the dashboard trust neither, and clear the planted ones', async () => {
    const victim = new BrowserClient(h.url);
    expect((await signUp(victim, 'victim@example.com', PASSWORD)).status).toBe(303);
    const attacker = new BrowserClient(h.url);
    expect((await signUp(attacker, 'attacker@example.com', PASSWORD)).status).toBe(303);

    const res = await fetch(`${h.url}/dashboard`, {
      redirect: 'manual',
      headers: { cookie: withPlanted(victim, { svc_session: attacker.cookies.get('svc_session')!, svc_browser: attacker.cookies.get('svc_browser')! }) },
    });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toContain('done=cookie_conflict');
    // Over an IP address there is no parent domain to clear; the victim's own cookies are never cleared.
    expect(res.headers.getSetCookie().filter((c) => /^svc_session=;/.test(c) && !/Domain=/.test(c))).toEqual([]);
    const signin = await fetch(`${h.url}${res.headers.get('location')}`, { headers: { cookie: withPlanted(victim, {}) }, redirect: 'manual' });
    expect(signin.status).toBe(303); // still signed in: the victim's own cookies were left alone

    // The attacker's session alone, without the browser id it was bound to, is no session.
    const alone = await fetch(`${h.url}/dashboard`, {
      redirect: 'manual',
      headers: { cookie: `svc_session=${attacker.cookies.get('svc_session')}; svc_browser=${victim.cookies.get('svc_browser')}` },
    });
    expect(alone.status).toBe(303);
    expect(alone.headers.get('location')).toContain('/dashboard/signin');
  });

  it('clears planted copies for each parent domain of a named host', async () => {
    const attacker = new BrowserClient(h.url);
    expect((await signUp(attacker, 'attacker2@example.com', PASSWORD)).status).toBe(303);
    const cookie = `svc_session=${attacker.cookies.get('svc_session')}; svc_session=x`;
    const res = await getWithHost(`${h.url}/dashboard/keys`, 'svc.test', { cookie });
    expect(res.status).toBe(303);
    const cleared = res.headers['set-cookie'] ?? [];
    expect(cleared).toContain('svc_session=; Max-Age=0; Path=/dashboard/keys; Domain=svc.test');
    expect(cleared).toContain('svc_browser=; Max-Age=0; Path=/; Domain=svc.test');
    expect(cleared.every((c) => /Domain=/.test(c))).toBe(true);
  });

  it('a form with a valid token is refused when the browser says a sibling host sent it (Sec-Fetch-Site, Origin)', async () => {
    const victim = new BrowserClient(h.url);
    expect((await signUp(victim, 'forms@example.com', PASSWORD)).status).toBe(303);
    const { csrf } = formFields(await (await victim.get('/dashboard/keys')).text(), '/dashboard/keys');
    const form = { csrf, name: 'planted', scopes: 'svc.publish' };
    expect((await victim.post('/dashboard/keys', form, { 'sec-fetch-site': 'same-site' })).status).toBe(403);
    expect((await victim.post('/dashboard/keys', form, { 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await victim.post('/dashboard/keys', form, { origin: 'http://evil.localhost:1' })).status).toBe(403);
    const [account] = await h.deps.db.query.accounts.findMany({ where: (a, { eq }) => eq(a.email, 'forms@example.com') });
    expect(await listPersonalKeys(h.deps.db, account!.id)).toEqual([]);
    // The dashboard's own page posting it: counted.
    expect((await victim.post('/dashboard/keys', form, { 'sec-fetch-site': 'same-origin' })).status).toBe(201);
    expect(await listPersonalKeys(h.deps.db, account!.id)).toHaveLength(1);
  });

  it("login CSRF: a sign-in posted from a sibling host with the attacker's planted pre-session is refused", async () => {
    const attacker = new BrowserClient(h.url);
    expect((await signUp(attacker, 'login-csrf@example.com', PASSWORD)).status).toBe(303);
    const anon = new BrowserClient(h.url);
    const csrf = inputValue(await (await anon.get('/dashboard/signin')).text(), 'csrf');
    const victim = new BrowserClient(h.url);
    victim.cookies.set('svc_presession', anon.cookies.get('svc_presession')!);
    const res = await victim.post(
      '/dashboard/signin',
      { csrf, next: '/dashboard', email: 'login-csrf@example.com', password: PASSWORD },
      { 'sec-fetch-site': 'same-site', origin: 'http://evil.localhost:1' },
    );
    expect(res.status).toBe(403);
    expect(victim.cookies.has('svc_session')).toBe(false);
  });
});
