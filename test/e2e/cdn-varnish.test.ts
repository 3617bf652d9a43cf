import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from '../helpers/cluster.js';
import type { ServiceNode } from '../helpers/nodes.js';
import { freePort } from '../helpers/ports.js';
import { startVarnish, varnishMissing, type Varnish } from '../helpers/varnish.js';

// A real Varnish (Debian's, with the xkey vmod) running deploy/varnish/svc.vcl in front of two svc
// nodes on one PostgreSQL and one bucket (s3rver): what the public sees through the cache after changes made on either node.
const missing = !process.env.TEST_DATABASE_URL ? 'TEST_DATABASE_URL is not set (two nodes need one PostgreSQL)' : varnishMissing();
if (missing) console.warn(`test/e2e/cdn-varnish: skipped: ${missing}`);

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
});

interface Seen {
  status: number;
  cache: string | null;
  body: string;
  headers: http.IncomingHttpHeaders;
}

describe.skipIf(missing !== null)(`Varnish in front of two nodes${missing ? ` (skipped: ${missing})` : ''}`, { timeout: 180_000 }, () => {
  let cluster: Cluster;
  let nodes: ServiceNode[];
  let varnish: Varnish;
  let key: string;

  beforeAll(async () => {
    const varnishPort = await freePort();
    cluster = await startCluster(2, { SVC_CDN_PURGE: 'varnish', SVC_CDN_PURGE_URL: `http://127.0.0.1:${varnishPort}`, SVC_SITES_DOMAIN: 'sites.test' });
    cleanups.push(cluster.close);
    nodes = cluster.nodes;
    varnish = await startVarnish(
      nodes.map((n) => n.url),
      varnishPort,
    );
    cleanups.push(varnish.stop);
    key = await cluster.accountKey();
  });

  /** A GET through Varnish (`host`: the site's own host name, else the path form on the service host). */
  function viaCache(urlPath: string, headers: Record<string, string> = {}): Promise<Seen> {
    return new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: varnish.port, path: urlPath, headers }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, cache: (res.headers['x-cache'] as string) ?? null, body, headers: res.headers }));
      });
      req.on('error', reject);
      req.end();
    });
  }

  async function api(node: ServiceNode, method: string, urlPath: string, json?: unknown) {
    const res = await fetch(`${node.url}/api/v1${urlPath}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    return { status: res.status, body: await res.json() };
  }

  const admin = (node: ServiceNode, operation: string, input: unknown) => cluster.admin(node, operation, input);

  async function publish(node: ServiceNode, html: string) {
    const res = await api(node, 'POST', '/sites', { requestId: crypto.randomUUID(), html, files: [{ path: 'app.css', content: 'body{}' }] });
    expect(res.status).toBe(201);
    return res.body.site as { id: string; slug: string };
  }

  /**
   * Asks each node directly (not through the cache) until it answers `status` (and `body`, when
   * given) at `urlPath`: within 5 s. Each node drops its copy of a site when it hears the change
   * (LISTEN/NOTIFY, its delay tested in nodes.test.ts); a node that has not heard yet when the cache
   * asks it refills the cache with the old answer, a window the outbox's second purge closes
   * (docs/operator.md, "What it guarantees"). On a loaded machine a test's first read after a change
   * went to such a node (CI, 2026-12-06, twice). What these tests look at is the cache: its purges,
   * once every node serves the change.
   */
  async function heardByEvery(urlPath: string, status: number, body?: string) {
    for (const node of nodes) {
      const since = performance.now();
      let seen = { status: 0, body: '' };
      while (performance.now() - since < 5000) {
        const res = await fetch(`${node.url}${urlPath}`);
        seen = { status: res.status, body: await res.text() };
        if (seen.status === status && (body === undefined || seen.body === body)) break;
      }
      expect(seen.status).toBe(status);
      if (body !== undefined) expect(seen.body).toBe(body);
    }
  }

  /** Asks through the cache until `ok` holds; returns what was seen and how long after `since` (ms). */
  async function firstSeen(urlPath: string, headers: Record<string, string>, ok: (s: Seen) => boolean, since: number) {
    for (;;) {
      const seen = await viaCache(urlPath, headers);
      const ms = performance.now() - since;
      if (ok(seen) || ms > 5000) return { seen, ms };
    }
  }

  it('serves public files from the cache, both URL forms; a change made on either node is served within a second', async () => {
    const [a, b] = nodes as [ServiceNode, ServiceNode];
    const site = await publish(a, '<h1>first</h1>');
    const forms: { path: string; headers: Record<string, string> }[] = [
      { path: `/s/${site.slug}/`, headers: {} },
      { path: '/', headers: { host: `${site.slug}.sites.test` } },
    ];
    for (const f of forms) {
      const miss = await viaCache(f.path, f.headers);
      expect([miss.status, miss.cache, miss.body]).toEqual([200, 'MISS', '<h1>first</h1>']);
      const hit = await viaCache(f.path, f.headers);
      expect([hit.status, hit.cache, hit.body]).toEqual([200, 'HIT', '<h1>first</h1>']);
      // Browsers still revalidate; the keys stay between svc and the cache.
      expect(hit.headers['cache-control']).toMatch(/max-age=0, must-revalidate/);
      expect(hit.headers['surrogate-key']).toBeUndefined();
    }
    const css = await viaCache(`/s/${site.slug}/app.css`);
    expect((await viaCache(`/s/${site.slug}/app.css`)).cache).toBe('HIT');
    expect(css.body).toBe('body{}');

    for (const [node, html] of [
      [b, '<h1>second</h1>'],
      [a, '<h1>third</h1>'],
    ] as const) {
      const changed = await api(node, 'POST', `/sites/${site.id}/files`, { files: [{ path: 'index.html', content: html }] });
      expect(changed.status).toBe(200);
      const since = performance.now();
      await heardByEvery(`/s/${site.slug}/`, 200, html);
      for (const f of forms) {
        const { seen, ms } = await firstSeen(f.path, f.headers, (s) => s.body === html, since);
        expect(seen.body).toBe(html);
        expect(ms).toBeLessThan(1000);
      }
      expect((await viaCache(forms[0]!.path)).cache).toBe('HIT');
    }
    // What the change did not touch stayed in the cache.
    expect((await viaCache(`/s/${site.slug}/app.css`)).cache).toBe('HIT');
  });

  it('a suspended site answers 451 through the cache at once, and its files again after the restore', async () => {
    const [a, b] = nodes as [ServiceNode, ServiceNode];
    const site = await publish(b, '<h1>shop</h1>');
    await viaCache(`/s/${site.slug}/`);
    expect((await viaCache(`/s/${site.slug}/`)).cache).toBe('HIT');

    expect((await admin(a, 'site.suspend', { site: site.id, reason: 'phishing reported' })).status).toBe(200);
    await heardByEvery(`/s/${site.slug}/`, 451);
    for (const path of [`/s/${site.slug}/`, `/s/${site.slug}/app.css`, `/s/${site.slug}/`]) {
      const seen = await viaCache(path);
      expect(seen.status).toBe(451);
      expect(seen.body).not.toContain('shop');
    }
    expect((await admin(b, 'site.restore', { site: site.id, reason: 'resolved' })).status).toBe(200);
    await heardByEvery(`/s/${site.slug}/`, 200);
    const back = await viaCache(`/s/${site.slug}/`);
    expect([back.status, back.body]).toEqual([200, '<h1>shop</h1>']);
  });

  it('a private page is never served from the cache: not to its unlocked visitor, not to anyone else', async () => {
    const [a, b] = nodes as [ServiceNode, ServiceNode];
    const site = await publish(a, '<h1>members only</h1>');
    await viaCache(`/s/${site.slug}/`);
    expect((await viaCache(`/s/${site.slug}/`)).cache).toBe('HIT');

    expect((await api(b, 'PATCH', `/sites/${site.id}`, { password: 'sesame' })).status).toBe(200);
    await heardByEvery(`/s/${site.slug}/`, 401);
    const prompt = await viaCache(`/s/${site.slug}/`);
    expect(prompt.status).toBe(401);
    expect(prompt.body).not.toContain('members only');

    const unlock = await fetch(`${varnish.url}/s/${site.slug}/__svc/unlock`, {
      method: 'POST',
      body: new URLSearchParams({ password: 'sesame', next: `/s/${site.slug}/` }),
      redirect: 'manual',
    });
    expect(unlock.status).toBe(303);
    const cookie = unlock.headers.get('set-cookie')!.split(';')[0]!;
    for (let i = 0; i < 3; i++) {
      const page = await viaCache(`/s/${site.slug}/`, { cookie });
      expect([page.status, page.cache, page.body]).toEqual([200, 'MISS', '<h1>members only</h1>']);
      const stranger = await viaCache(`/s/${site.slug}/`);
      expect(stranger.status).toBe(401);
      expect(stranger.body).not.toContain('members only');
    }
  });
});
