import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../../service/auth/passwords.js';
import { accountOwner } from '../../service/db/owner.js';
import { createSite, updateSite, writeSiteFile } from '../../service/sites/sites.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { startS3Server, type S3Server } from '../helpers/s3rver.js';
import http from 'node:http';

/** A GET whose path goes on the wire exactly as written (fetch would normalise `%2e%2e`). */
function rawGet(base: string, rawPath: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    http
      .get({ hostname, port, path: rawPath }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

describe('private and unpublished sites', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('pglite');
  });
  afterAll(async () => h?.close());

  it('a password-protected site shows a password page, then serves after the right password', async () => {
    const { accountId } = await h.account();
    const site = await createSite(h.deps, accountOwner(accountId), {
      slug: 'secret-garden',
      html: '<h1>Secret</h1>',
      password: 'open sesame',
      status: 'created',
    });
    expect(site.visibility).toBe('private');
    await writeSiteFile(h.deps, site, { path: 'css/app.css', bytes: Buffer.from('body{}') });
    const base = `${h.url}/s/secret-garden`;

    const locked = await fetch(`${base}/`);
    expect(locked.status).toBe(401);
    const page = await locked.text();
    expect(page).toContain('This site is private');
    expect(page).not.toContain('Secret</h1>');
    expect((await fetch(`${base}/css/app.css`)).status).toBe(401);

    const wrong = await fetch(`${base}/__svc/unlock`, {
      method: 'POST',
      body: new URLSearchParams({ password: 'nope', next: '/s/secret-garden/' }),
      redirect: 'manual',
    });
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).toContain('Wrong password');

    const right = await fetch(`${base}/__svc/unlock`, {
      method: 'POST',
      body: new URLSearchParams({ password: 'open sesame', next: 'https://evil.example/' }),
      redirect: 'manual',
    });
    expect(right.status).toBe(303);
    expect(right.headers.get('location')).toBe('/s/secret-garden/'); // never an open redirect
    const cookie = right.headers.get('set-cookie')!;
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    const cookieHeader = cookie.split(';')[0]!;
    const open = await fetch(`${base}/`, { headers: { cookie: cookieHeader } });
    expect(open.status).toBe(200);
    expect(await open.text()).toContain('<h1>Secret</h1>');
    expect(open.headers.get('cache-control')).toBe('private, no-cache');

    // A new password signs everyone out.
    await updateSite(h.deps, site, { passwordHash: await hashPassword('new one') });
    expect((await fetch(`${base}/`, { headers: { cookie: cookieHeader } })).status).toBe(401);
  });

  it('private without a password, or unpublished, is not served to anyone', async () => {
    const { accountId } = await h.account();
    const hidden = await createSite(h.deps, accountOwner(accountId), { slug: 'hidden-one', html: '<p>hidden</p>', visibility: 'private', status: 'created' });
    expect((await fetch(`${h.url}/s/hidden-one/`)).status).toBe(404);
    const off = await createSite(h.deps, accountOwner(accountId), { slug: 'switched-off', html: '<p>off</p>', status: 'created' });
    expect((await fetch(`${h.url}/s/switched-off/`)).status).toBe(200);
    await updateSite(h.deps, off, { published: false });
    const res = await fetch(`${h.url}/s/switched-off/`);
    expect(res.status).toBe(404);
    expect(await res.text()).toContain('no published site named &quot;switched-off&quot;');
    expect(hidden.visibility).toBe('private');
  });

  it('path-fallback pages are sandboxed to an opaque origin; files resolve a/, a.html and content types', async () => {
    const { accountId } = await h.account();
    const site = await createSite(h.deps, accountOwner(accountId), { slug: 'paths', html: '<p>home</p>', status: 'created' });
    await writeSiteFile(h.deps, site, { path: 'about.html', bytes: Buffer.from('<p>about</p>') });
    await writeSiteFile(h.deps, site, { path: 'docs/index.html', bytes: Buffer.from('<p>docs</p>') });
    await writeSiteFile(h.deps, site, { path: 'img/dot.svg', bytes: Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>') });
    const home = await fetch(`${h.url}/s/paths/`);
    expect(home.headers.get('content-security-policy')).toMatch(/^sandbox /);
    expect(home.headers.get('content-security-policy')).not.toMatch(/allow-same-origin/);
    expect(await (await fetch(`${h.url}/s/paths/about`)).text()).toBe('<p>about</p>');
    expect(await (await fetch(`${h.url}/s/paths/docs/`)).text()).toBe('<p>docs</p>');
    expect((await fetch(`${h.url}/s/paths/img/dot.svg`)).headers.get('content-type')).toBe('image/svg+xml');
    for (const raw of ['/s/paths/%2e%2e/%2e%2e/package.json', '/s/paths/..%2f..%2fpackage.json', '/s/paths/%2e%2e%2f%2e%2e%2fpackage.json']) {
      const escaped = await rawGet(h.url, raw);
      expect(escaped.status, raw).toBe(404);
      expect(escaped.body, raw).not.toContain('dependencies'); // never a file outside the site
    }
    const redirect = await fetch(`${h.url}/s/paths`, { redirect: 'manual' });
    expect(redirect.status).toBe(301);
    expect(redirect.headers.get('location')).toBe('/s/paths/');
  });
});

describe('sites with blobs on S3', () => {
  let h: Harness;
  let s3: S3Server;
  beforeAll(async () => {
    s3 = await startS3Server();
    h = await startHarness('pglite', { ...s3.env, SVC_SITE_CACHE_TTL_MS: '1000' });
  });
  afterAll(async () => {
    await h?.close();
    await s3?.close();
  });

  it('publishes and serves small (cached) and large (streamed) files from the bucket', async () => {
    const { key, accountId } = await h.account();
    const res = await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: 's3', html: '<h1>On S3</h1>', slug: 'on-s3' } });
    expect(res.status).toBe(201);
    expect(await (await fetch(`${h.url}/s/on-s3/`)).text()).toBe('<h1>On S3</h1>');
    const site = (await h.deps.db.query.sites.findFirst({ where: (s, { eq }) => eq(s.ownerAccountId, accountId) }))!;
    const big = Buffer.alloc(600 * 1024, 'z');
    await writeSiteFile(h.deps, site, { path: 'big.txt', bytes: big });
    const got = await fetch(`${h.url}/s/on-s3/big.txt`);
    expect(got.status).toBe(200);
    expect(got.headers.get('content-length')).toBe(String(big.length));
    expect(Buffer.from(await got.arrayBuffer()).equals(big)).toBe(true);
    // A replaced file is visible at once on this node (its cache is invalidated by the write).
    await writeSiteFile(h.deps, site, { path: 'index.html', bytes: Buffer.from('<h1>v2</h1>') });
    expect(await (await fetch(`${h.url}/s/on-s3/`)).text()).toBe('<h1>v2</h1>');
  });
});
