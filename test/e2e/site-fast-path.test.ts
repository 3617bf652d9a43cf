import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountOwner } from '../../service/db/owner.js';
import { withSiteFastPath } from '../../service/sites/fast-path.js';
import { createSite, updateSite, writeSiteFile } from '../../service/sites/sites.js';
import { fastPathServer, type FastPathServer } from '../helpers/fast-path.js';
import { startHarness, type Harness } from '../helpers/harness.js';

// A public site's cached small files are answered before the app (service/sites/fast-path.ts). Each
// request goes twice: the first fills the cache through the app, the second is the fast path's when
// it can be. Both answers must be the same, header for header and byte for byte.
describe('the hosted-site fast path', () => {
  let h: Harness;
  let server: FastPathServer;
  const send: FastPathServer['send'] = (path, init) => server.send(path, init);

  beforeAll(async () => {
    h = await startHarness('pglite', { SVC_SITE_CACHE_TTL_MS: '60000' });
    server = await fastPathServer(h, (app) => withSiteFastPath(h.deps, app));
    const { accountId } = await h.account();
    const site = await createSite(h.deps, accountOwner(accountId), { slug: 'fast', html: '<h1>Fast</h1>', status: 'created' });
    await writeSiteFile(h.deps, site, { path: 'about.html', bytes: Buffer.from('<h1>About</h1>') });
    await writeSiteFile(h.deps, site, { path: 'docs/index.html', bytes: Buffer.from('<h1>Docs</h1>') });
    await writeSiteFile(h.deps, site, { path: 'big.bin', bytes: Buffer.alloc(300 * 1024, 'b') }); // over the cache's 256 KB: streamed
    await createSite(h.deps, accountOwner(accountId), { slug: 'locked', html: '<h1>Locked</h1>', password: 'open sesame', status: 'created' });
  });
  afterAll(async () => {
    await server?.close();
    await h?.close();
  });

  async function twice(path: string, init: { method?: string; headers?: Record<string, string> } = {}) {
    const first = await send(path, init);
    const second = await send(path, init);
    expect({ status: second.status, headers: second.headers, body: second.body.toString('latin1') }).toEqual({
      status: first.status,
      headers: first.headers,
      body: first.body.toString('latin1'),
    });
    return { first, second };
  }

  // The first three fill the cache (the app answers first); the rest reuse what is cached.
  it.each([
    ['the entry point', '/s/fast/', {}, '<h1>Fast</h1>', true],
    ['a page without its .html', '/s/fast/about', {}, '<h1>About</h1>', true],
    ["a folder's index", '/s/fast/docs/', {}, '<h1>Docs</h1>', true],
    ['a query string', '/s/fast/?utm=1', {}, '<h1>Fast</h1>', false],
    ["the site's own host", '/', { host: 'fast.localhost' }, '<h1>Fast</h1>', false],
    ['HEAD', '/s/fast/', { method: 'HEAD' }, '', false],
  ] as const)('%s: answered by the fast path once cached, the same answer as the app', async (_, path, extra, body, firstByApp) => {
    const { method, ...headers } = extra as { method?: string; host?: string };
    const { first, second } = await twice(path, { method, headers: headers as Record<string, string> });
    expect([first.byApp, second.byApp]).toEqual([firstByApp, false]);
    expect(second.status).toBe(200);
    expect(second.body.toString()).toBe(body);
    expect(second.headers['x-request-id']).toBe('same-id');
    expect(second.headers['x-content-type-options']).toBe('nosniff');
    // Path URLs share the service's origin: a CSP sandbox keeps them away from its cookies and API.
    expect(second.headers['content-security-policy'] !== undefined).toBe(path.startsWith('/s/'));
  });

  it('If-None-Match with the etag: 304 without a body, as from the app', async () => {
    const etag = (await send('/s/fast/')).headers.etag!;
    h.deps.siteCache.clear(); // the first answer is the app's again
    const { first, second } = await twice('/s/fast/', { headers: { 'if-none-match': `W/${etag}` } });
    expect([first.byApp, second.byApp]).toEqual([true, false]);
    expect([second.status, second.body.length]).toEqual([304, 0]);
  });

  it.each([
    ['a file streamed from the blob store (too big to cache)', '/s/fast/big.bin', {}, 200],
    ['a missing file (the 404 page)', '/s/fast/nope.css', {}, 404],
    ['a private site (password page)', '/s/locked/', {}, 401],
    ['a percent-encoded path', '/s/fast/%61bout', {}, 200],
    ['a POST', '/s/fast/', { method: 'POST' }, 405],
    ['the Table API on a site host', '/api/data/things', { host: 'fast.localhost' }, 404],
  ] as const)('%s: always the app', async (_, path, extra, status) => {
    const { method, ...headers } = extra as { method?: string; host?: string };
    const { first, second } = await twice(path, { method, headers: headers as Record<string, string> });
    expect([first.byApp, second.byApp, second.status]).toEqual([true, true, status]);
  });

  it('while the service stops, the app answers every request (so the drain tracks it and closes its connection)', async () => {
    const stopping = await fastPathServer(h, (app) => withSiteFastPath(h.deps, app, () => true));
    try {
      await send('/s/fast/'); // cached
      const answers = [await stopping.send('/s/fast/'), await stopping.send('/s/fast/')];
      expect(answers.map((a) => [a.byApp, a.status])).toEqual([
        [true, 200],
        [true, 200],
      ]);
    } finally {
      await stopping.close();
    }
  });

  it('a change is served at once: the new file, and a site made private leaves the fast path', async () => {
    const site = (await h.deps.db.query.sites.findFirst({ where: (s, { eq }) => eq(s.slug, 'fast') }))!;
    await writeSiteFile(h.deps, site, { path: 'about.html', bytes: Buffer.from('<h1>About v2</h1>') });
    expect((await send('/s/fast/about')).body.toString()).toBe('<h1>About v2</h1>');
    const cached = await send('/s/fast/about');
    expect([cached.byApp, cached.body.toString()]).toEqual([false, '<h1>About v2</h1>']);
    await updateSite(h.deps, site, { visibility: 'private' });
    const hidden = await send('/s/fast/about');
    expect([hidden.byApp, hidden.status]).toEqual([true, 404]);
  });

  it('counts the fast answers in /metrics under the same route as the app', async () => {
    const metrics = await (await fetch(`${server.base}/metrics`)).text();
    expect(metrics).toMatch(/svc_http_requests_total\{method="GET",route="\/s\/:slug\/\*",status="200"\} \d+/);
    expect(metrics).toMatch(/svc_http_requests_total\{method="GET",route="\*",status="200"\} \d+/);
  });
});
