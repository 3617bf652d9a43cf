import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listPersonalKeys } from '../../service/accounts/personal-keys.js';
import { oauthGrants } from '../../service/db/schema/index.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { BrowserClient, inputValue, signUp } from '../oauth/browser-client.js';

const CHROMIUM = '/usr/bin/chromium';
const hasChromium = fs.existsSync(CHROMIUM);
const PASSWORD = 'a long enough password';

/** A loopback port forwarding to the service, so the browser can reach it as `svc.test:<port>` (mapped to 127.0.0.1). */
async function forwarder(): Promise<{ port: number; target(port: number): void; close(): Promise<void> }> {
  let targetPort = 0;
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, '127.0.0.1');
    for (const s of [client, upstream]) {
      open.add(s);
      s.on('close', () => open.delete(s));
      s.on('error', () => s.destroy());
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    target: (port) => {
      targetPort = port;
    },
    close: () => {
      for (const s of open) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * A hosted page tries what issue 43 measured: it plants its owner's dashboard session (and pre-session,
 * for a login CSRF) as cookies of the parent domain, and posts the dashboard's and consent screen's
 * forms with its owner's valid tokens. On the same-site layout (sites at `<slug>.svc.test`, the
 * dashboard at `svc.test`) the browser takes the cookies; on the separate one (`<slug>.sites.test`)
 * it refuses them. Either way the visitor's dashboard stays the visitor's and nothing counts.
 */
describe.skipIf(!hasChromium).each([
  ['same-site', 'svc.test'],
  ['separate-domain', 'sites.test'],
])('a hosted page against a signed-in visitor in Chromium (%s layout)', (_layout, sitesDomain) => {
  let h: Harness;
  let fwd: Awaited<ReturnType<typeof forwarder>>;
  let browser: Browser;
  let base: string;
  let attacker: { email: string; accountId: string; session: string; presession: string; signinCsrf: string; sessionCsrf: string };
  let consentFields: Record<string, string>;
  let siteBase: string;

  beforeAll(async () => {
    fwd = await forwarder();
    base = `http://svc.test:${fwd.port}`;
    h = await startHarness('pglite', { SVC_BASE_URL: base, SVC_SITES_DOMAIN: sitesDomain });
    fwd.target(Number(new URL(h.url).port));
    siteBase = `http://evil.${sitesDomain}:${fwd.port}`;

    // The attacker: an account with a live session, and a fresh sign-in form (pre-session + token).
    const email = `attacker-${sitesDomain}@example.com`;
    const own = new BrowserClient(h.url);
    expect((await signUp(own, email, PASSWORD)).status).toBe(303);
    const home = await (await own.get('/dashboard/keys')).text();
    const anon = new BrowserClient(h.url);
    const signinPage = await (await anon.get('/dashboard/signin')).text();
    const [row] = await h.deps.db.query.accounts.findMany({ where: (a, { eq }) => eq(a.email, email) });
    attacker = {
      email,
      accountId: row!.id,
      session: own.cookies.get('svc_session')!,
      presession: anon.cookies.get('svc_presession')!,
      signinCsrf: inputValue(signinPage, 'csrf'),
      sessionCsrf: inputValue(home, 'csrf'),
    };

    // A client that may ask for approval: the consent form's fields, with the attacker's token.
    const callback = 'http://127.0.0.1:9/callback';
    const reg = await h.fetch('/api/oauth/register', { method: 'POST', json: { client_name: 'Evil App', redirect_uris: [callback] } });
    const { client_id } = await reg.json();
    consentFields = {
      response_type: 'code',
      client_id,
      redirect_uri: callback,
      scope: 'svc.sites.read',
      resource: `${base}/api/v1`,
      code_challenge: createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url'),
      code_challenge_method: 'S256',
      state: 's',
      decision: 'approve',
      csrf: attacker.sessionCsrf,
    };

    const field = (name: string, value: string) => `<input type="hidden" name="${name}" value="${value}">`;
    const autoPost = (action: string, fields: Record<string, string>, before = '') =>
      `<!doctype html><title>post</title><script>${before}</script><form method="post" action="${base}${action}">${Object.entries(fields)
        .map(([k, v]) => field(k, v))
        .join('')}</form><script>document.forms[0].submit()</script>`;
    const toss = (name: string, value: string) =>
      ['/', '/dashboard', '/oauth'].map((p) => `document.cookie = "${name}=${value}; domain=svc.test; path=${p}; max-age=3600";`).join('');
    const { key } = await h.account();
    const files: Record<string, string> = {
      'keys.html': autoPost('/dashboard/keys', { name: 'planted', scopes: 'svc.publish', csrf: attacker.sessionCsrf }),
      'signin.html': autoPost(
        '/dashboard/signin',
        { email: attacker.email, password: PASSWORD, next: '/dashboard', csrf: attacker.signinCsrf },
        toss('svc_presession', attacker.presession),
      ),
      'consent.html': autoPost('/oauth/authorize', consentFields, toss('svc_session', attacker.session)),
    };
    const published = await h.fetch('/api/v1/sites', {
      method: 'POST',
      key,
      json: {
        requestId: `evil-${sitesDomain}`,
        slug: 'evil',
        html: `<!doctype html><title>evil</title><script>${toss('svc_session', attacker.session)}</script><p>hello</p>`,
        files: Object.entries(files).map(([path, content]) => ({ path, content, contentType: 'text/html' })),
      },
    });
    expect(published.status).toBe(201);

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--no-first-run',
        '--host-resolver-rules=MAP svc.test 127.0.0.1, MAP *.svc.test 127.0.0.1, MAP *.sites.test 127.0.0.1',
      ],
    });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await h?.close();
    await fwd?.close();
  });

  async function signedInAs(page: Page): Promise<string | null> {
    await page.goto(`${base}/dashboard`);
    const text = (await page.textContent('main')) ?? '';
    return /Signed in as (\S+?)\.?(\s|$)/.exec(text)?.[1] ?? null;
  }

  async function signInThroughTheForm(page: Page, email: string): Promise<void> {
    await page.goto(`${base}/dashboard/signin`);
    await page.fill('#email', email);
    await page.fill('#password', PASSWORD);
    await Promise.all([page.waitForURL(`${base}/dashboard`), page.click('button[type=submit]')]);
  }

  /** Opens a page of the hosted site that posts a form to the service; the status the service answered it with. */
  async function postFromHostedPage(page: Page, file: string, action: string): Promise<{ status: number; location: string | null }> {
    const answered = page.waitForResponse((r) => r.request().method() === 'POST' && r.url().startsWith(`${base}${action}`));
    await page.goto(`${siteBase}/${file}`);
    const res = await answered;
    return { status: res.status(), location: res.headers().location ?? null };
  }

  it('the visitor never runs as the page owner, and no form the page posts counts', { timeout: 120_000 }, async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const victim = `victim-${sitesDomain}@example.com`;
    await page.goto(`${base}/dashboard/signup`);
    await page.fill('#email', victim);
    await page.fill('#password', PASSWORD);
    await Promise.all([page.waitForURL(`${base}/dashboard`), page.click('button[type=submit]')]);
    expect(await signedInAs(page)).toBe(victim);

    // 1. Cookie tossing: the hosted page plants the owner's session for the parent domain.
    await page.goto(`${siteBase}/`);
    expect(await page.textContent('p')).toBe('hello');
    // The browser took the planted cookie on the same-site layout only (before the dashboard cleared it).
    const planted = (await context.cookies(base)).filter((c) => c.name === 'svc_session' && c.domain === '.svc.test');
    expect(planted.length > 0).toBe(sitesDomain === 'svc.test');
    const after = await signedInAs(page);
    expect(after).not.toBe(attacker.email);
    if (after === null) {
      // Same-site layout: the dashboard saw two sessions, trusted neither, said why and cleared them.
      expect(await page.textContent('main')).toContain('a page of another host set a cookie');
      await signInThroughTheForm(page, victim);
    }
    expect(await signedInAs(page)).toBe(victim);

    // 2. The dashboard's forms, posted by the hosted page with the owner's valid token.
    const keys = await postFromHostedPage(page, 'keys.html', '/dashboard/keys');
    expect([401, 403, 303]).toContain(keys.status);
    expect(await listPersonalKeys(h.deps.db, attacker.accountId)).toEqual([]);
    const [victimRow] = await h.deps.db.query.accounts.findMany({ where: (a, { eq }) => eq(a.email, victim) });
    expect(await listPersonalKeys(h.deps.db, victimRow!.id)).toEqual([]);

    // 3. Login CSRF: the page plants the owner's pre-session and posts the sign-in form with its credentials.
    const signin = await postFromHostedPage(page, 'signin.html', '/dashboard/signin');
    expect(signin.status).toBe(403);
    expect(await signedInAs(page)).not.toBe(attacker.email);

    // 4. The consent screen: an approval posted from the page issues no code to anyone.
    const consent = await postFromHostedPage(page, 'consent.html', '/oauth/authorize');
    expect(consent.location ?? '').not.toContain('code=');
    expect(await h.deps.db.select().from(oauthGrants)).toEqual([]);

    // Whatever the page did, the visitor can sign in and the dashboard is theirs.
    if ((await signedInAs(page)) === null) await signInThroughTheForm(page, victim);
    expect(await signedInAs(page)).toBe(victim);
    await context.close();
  });
});
