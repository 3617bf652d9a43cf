import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { getWithHost } from '../helpers/host-request.js';

const html = (title: string) => `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1></body></html>`;

describe.each(dbKinds())('Sites on the Account API (%s)', (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(kind);
  });
  afterAll(async () => h?.close());

  it('publishes a site that is then served at its path URL with ETag/304', async () => {
    const { key } = await h.account();
    const res = await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: 'r1', html: html('Hello'), slug: 'hello-site' } });
    expect(res.status).toBe(201);
    const body = await res.json();
    expect(body.site).toMatchObject({ slug: 'hello-site', visibility: 'public', published: true, status: 'published', fileCount: 1 });
    expect(body.site.url).toBe(`http://hello-site.localhost:${new URL(h.url).port}/`);

    const page = await fetch(body.site.pathUrl);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await page.text()).toContain('<h1>Hello</h1>');
    const etag = page.headers.get('etag')!;
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
    const again = await fetch(body.site.pathUrl, { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
  });

  it('a name visited before its site exists is served as soon as the site is published (no cached "no such site")', async () => {
    const { key } = await h.account();
    const before = await fetch(`${h.url}/s/early-bird/`);
    expect(before.status).toBe(404);
    expect(await before.text()).toContain('no published site named &quot;early-bird&quot;');
    expect((await getWithHost(`${h.url}/`, 'early-bird.localhost')).status).toBe(404);
    const res = await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: 'r1', html: html('Early'), slug: 'early-bird' } });
    expect(res.status).toBe(201);
    const page = await fetch(`${h.url}/s/early-bird/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<h1>Early</h1>');
    expect((await getWithHost(`${h.url}/`, 'early-bird.localhost')).status).toBe(200);
  });

  it('serves by Host header too, and keeps /api/data on site hosts for the Table API', async () => {
    const { key } = await h.account();
    await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: 'r1', html: html('Host'), slug: 'by-host' } });
    const res = await getWithHost(`${h.url}/`, `by-host.localhost:${new URL(h.url).port}`);
    expect(res.status).toBe(200);
    expect(res.body).toContain('<h1>Host</h1>');
    expect(res.headers['content-security-policy']).toBeUndefined();
    const missing = await getWithHost(`${h.url}/nope.css`, 'by-host.localhost');
    expect(missing.status).toBe(404);
    expect(missing.body).toContain('has no file at /nope.css');
    const api = await getWithHost(`${h.url}/api/data/by-host/things`, 'by-host.localhost');
    expect(api.headers['content-type']).toContain('application/json');
  });

  it('the same requestId again returns the first site and creates nothing', async () => {
    const { key } = await h.account();
    const first = await (await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: 'same', html: html('A') } })).json();
    const results = await Promise.all([1, 2, 3].map(() => h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: 'same', html: html('B') } })));
    for (const r of results) {
      expect(r.status).toBe(200);
      const b = await r.json();
      expect(b.replayed).toBe(true);
      expect(b.site.id).toBe(first.site.id);
    }
    const list = await (await h.fetch('/api/v1/sites', { key })).json();
    expect(list.total).toBe(1);
  });

  it('concurrent first publishes with one requestId make exactly one site', async () => {
    const { key } = await h.account();
    const results = await Promise.all([1, 2, 3, 4].map(() => h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: 'race', html: html('R') } })));
    const bodies = await Promise.all(results.map((r) => r.json()));
    expect(new Set(bodies.map((b) => b.site.id)).size).toBe(1);
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 201]);
    expect((await (await h.fetch('/api/v1/sites', { key })).json()).total).toBe(1);
  });

  it("another account's site is a 404, never a leak; delete removes it from serving", async () => {
    const alice = await h.account();
    const bob = await h.account();
    const { site } = await (await h.fetch('/api/v1/sites', { method: 'POST', key: alice.key, json: { requestId: 'x', html: html('Alice') } })).json();
    // The owner names a site by its id or its name (slug) alike; to another account both are a 404.
    const byName = await h.fetch(`/api/v1/sites/${site.slug}`, { key: alice.key });
    expect(byName.status).toBe(200);
    expect((await byName.json()).site).toMatchObject({ id: site.id, slug: site.slug });
    // As a host name is: in any case.
    expect((await h.fetch(`/api/v1/sites/${site.slug.toUpperCase()}`, { key: alice.key })).status).toBe(200);
    for (const [method, p] of [
      ['GET', `/api/v1/sites/${site.id}`],
      ['GET', `/api/v1/sites/${site.slug}`],
      ['GET', `/api/v1/sites/${site.id}/content`],
      ['GET', `/api/v1/sites/${site.slug}/tables`],
      ['DELETE', `/api/v1/sites/${site.id}`],
      ['DELETE', `/api/v1/sites/${site.slug}`],
    ] as const) {
      const r = await h.fetch(p, { method, key: bob.key });
      expect(r.status).toBe(404);
      expect((await r.json()).error.code).toBe('not_found');
    }
    expect((await fetch(site.pathUrl)).status).toBe(200);
    const del = await h.fetch(`/api/v1/sites/${site.id}`, { method: 'DELETE', key: alice.key });
    expect(del.status).toBe(200);
    expect((await fetch(site.pathUrl)).status).toBe(404);
    expect((await h.fetch(`/api/v1/sites/${site.id}`, { key: alice.key })).status).toBe(404);
  });

  it('returns text content, all or by repeated path', async () => {
    const { key } = await h.account();
    const { site } = await (await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: 'c', html: html('Content') } })).json();
    const all = await (await h.fetch(`/api/v1/sites/${site.id}/content`, { key })).json();
    expect(all.files).toEqual([{ path: 'index.html', contentType: 'text/html; charset=utf-8', size: html('Content').length, content: html('Content') }]);
    const missing = await h.fetch(`/api/v1/sites/${site.id}/content?path=index.html&path=app.js`, { key });
    expect(missing.status).toBe(404);
    expect((await missing.json()).error.details.missing).toEqual(['app.js']);
  });

  it('a taken slug is a 409 with a free suggestion', async () => {
    const a = await h.account();
    const b = await h.account();
    await h.fetch('/api/v1/sites', { method: 'POST', key: a.key, json: { requestId: '1', html: html('x'), slug: 'taken-name' } });
    const r = await h.fetch('/api/v1/sites', { method: 'POST', key: b.key, json: { requestId: '1', html: html('y'), slug: 'taken-name' } });
    expect(r.status).toBe(409);
    const body = await r.json();
    expect(body.error.code).toBe('slug_taken');
    expect(body.error.details.suggestion).toMatch(/^taken-name-\d{4}$/);
  });
});
