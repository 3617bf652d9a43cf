import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';

const CHROMIUM = '/usr/bin/chromium';
const OUT = path.resolve('test-output');
const hasChromium = fs.existsSync(CHROMIUM);
if (!hasChromium) console.warn(`browser tests skipped: ${CHROMIUM} is not installed (apt-get install -y chromium; .ci/run does this)`);

describe.skipIf(!hasChromium).each(dbKinds())('Dashboard and consent screen in headless Chromium (%s)', (kind) => {
  let h: Harness;
  let browser: Browser;
  let callback: http.Server;
  let callbackUrl: string;

  beforeAll(async () => {
    fs.mkdirSync(OUT, { recursive: true });
    h = await startHarness(kind);
    // The third-party application's redirect target: a plain page on another loopback port.
    callback = http.createServer((_req, res) => res.end('<!doctype html><title>Test App</title><h1>Back at the app</h1>'));
    await new Promise<void>((resolve) => callback.listen(0, '127.0.0.1', resolve));
    callbackUrl = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;
    // playwright-core gives every launch a fresh temporary profile (user-data-dir) and removes it on close.
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
        '--disable-quic',
      ],
    });
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => (callback ? callback.close(() => resolve()) : resolve()));
    await h?.close();
  });

  async function listedSite(key: string): Promise<{ id: string }> {
    return (await (await fetch(`${h.url}/api/v1/sites`, { headers: { authorization: `Bearer ${key}` } })).json()).sites[0];
  }

  it('signs up, creates a key that works with fetch, and approves an OAuth client on the consent screen', async () => {
    const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
    const page = await context.newPage();
    const shot = (name: string) => page.screenshot({ path: path.join(OUT, `${kind}-${name}.png`), fullPage: true });

    // Sign up from the sign-in page the dashboard sends a stranger to.
    await page.goto(`${h.url}/dashboard`);
    expect(new URL(page.url()).pathname).toBe('/dashboard/signin');
    await shot('1-signin');
    await page.click('text=Create an account');
    await page.fill('#email', 'browser@example.com');
    await page.fill('#password', 'a long enough password');
    await Promise.all([page.waitForURL(`${h.url}/dashboard`), page.click('button[type=submit]')]);
    expect(await page.textContent('main')).toContain('Signed in as browser@example.com');
    await shot('2-overview');

    // Create a key with two scopes; the secret is shown once.
    await page.click('nav >> text=API keys');
    await page.fill('#key-name', 'from the browser');
    await page.check('input[value="svc.publish"]');
    await page.check('input[value="svc.data.write"]');
    await page.check('input[value="svc.functions.write"]');
    await page.click('form[action="/dashboard/keys"] button[type=submit]');
    const secret = (await page.textContent('#new-key-secret'))!.trim();
    expect(secret).toMatch(/^svc_pat_/);
    await shot('3-key-created');
    const publish = await fetch(`${h.url}/api/v1/sites`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ requestId: 'browser-1', html: '<h1>From a key made in Chromium</h1>', slug: `browser-${kind}` }),
    });
    expect(publish.status).toBe(201);
    const listed = await fetch(`${h.url}/api/v1/sites`, { headers: { authorization: `Bearer ${secret}` } });
    expect((await listed.json()).sites[0].slug).toBe(`browser-${kind}`);
    await page.reload();
    expect(await page.content()).not.toContain(secret);

    // A third-party app registers and sends the user to the consent screen.
    const reg = await fetch(`${h.url}/api/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Acme Site Builder', redirect_uris: [callbackUrl], client_uri: 'https://acme.example' }),
    });
    const { client_id } = await reg.json();
    const verifier = randomBytes(32).toString('base64url');
    const authorize = new URL(`${h.url}/oauth/authorize`);
    for (const [k, v] of Object.entries({
      response_type: 'code',
      client_id,
      redirect_uri: callbackUrl,
      scope: 'svc.sites.read svc.usage.read',
      resource: `${h.url}/api/v1`,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      state: 'xyz',
    }))
      authorize.searchParams.set(k, v);
    await page.goto(authorize.toString());
    expect(await page.textContent('h1')).toContain('Acme Site Builder');
    expect(await page.locator('li[data-scope]').count()).toBe(2);
    await shot('4-consent');
    await Promise.all([page.waitForURL((u) => u.toString().startsWith(callbackUrl)), page.click('#approve')]);
    const back = new URL(page.url());
    expect(back.searchParams.get('state')).toBe('xyz');
    const token = await fetch(`${h.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        client_id,
        code: back.searchParams.get('code')!,
        redirect_uri: callbackUrl,
        code_verifier: verifier,
      }),
    });
    expect(token.status).toBe(200);
    const { access_token } = await token.json();
    expect((await fetch(`${h.url}/api/v1/sites`, { headers: { authorization: `Bearer ${access_token}` } })).status).toBe(200);

    await page.goto(`${h.url}/dashboard/apps`);
    expect(await page.textContent('main')).toContain('Acme Site Builder');
    await shot('5-connected-apps');
    // A table and a function made with the key, then managed in the dashboard.
    const siteId = (await listedSite(secret)).id;
    const table = await fetch(`${h.url}/api/v1/sites/${siteId}/tables`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Guestbook', schema: { fields: [{ name: 'msg', label: 'Message', type: 'string' }] } }),
    });
    expect(table.status).toBe(201);
    await page.goto(`${h.url}/dashboard/sites`);
    expect(await page.textContent('main')).toContain(`browser-${kind}`);
    await page.click('text=Regenerate write key');
    expect((await page.textContent('#new-write-key code'))!.trim()).toMatch(/^svc_tk_/);
    await shot('6-sites-write-key');

    const fn = await fetch(`${h.url}/api/v1/functions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Hello', slug: `hello-${kind}`, code: 'export default () => "hi"' }),
    });
    expect(fn.status).toBe(201);
    await page.goto(`${h.url}/dashboard/functions`);
    await page.fill('input[name="name"]', 'API_TOKEN');
    await page.fill('input[name="value"]', 'do-not-show-me');
    await page.click('text=Set secret');
    await page.click('text=Turn on');
    const functionsText = (await page.textContent('main'))!;
    expect(functionsText).toContain('API_TOKEN');
    expect(functionsText).toContain('svc-user access: on');
    expect(await page.content()).not.toContain('do-not-show-me');
    await shot('7-functions');
    await context.close();
  });
});
