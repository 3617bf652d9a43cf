import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { fileKey, siteKey, versionKey } from '../../service/cdn/surrogate-keys.js';
import { rowsOf } from '../../service/db/client.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { ADMIN_TOKEN, callAdmin } from '../operator/admin.js';
import { startFakeCdn, type FakeCdn } from './fake-cdn.js';

/** A clock the test moves: the outbox's backoff and second round are timed by it. */
function movableClock() {
  let t = Date.parse('2026-12-05T10:00:00Z');
  return { now: () => new Date(t), advance: (ms: number) => (t += ms) };
}

describe.each(dbKinds())('CDN in front of hosted sites: headers and purges (%s)', (kind) => {
  let h: Harness;
  let cdn: FakeCdn;
  const clock = movableClock();
  beforeAll(async () => {
    cdn = await startFakeCdn();
    h = await startHarness(
      kind,
      { SVC_CDN_PURGE: 'webhook', SVC_CDN_PURGE_URL: `${cdn.url}/purge`, SVC_CDN_MAX_AGE: '600', SVC_SITE_CACHE_TTL_MS: '10000' },
      { adminToken: ADMIN_TOKEN, clock },
    );
  });
  afterAll(async () => {
    await h?.close();
    await cdn?.close();
  });

  /** The outbox's backlog as GET /metrics shows it. */
  async function backlog() {
    const res = await h.fetch('/metrics');
    expect(res.status).toBe(200);
    const text = await res.text();
    const value = (line: string) => Number(new RegExp(`^${line.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1]);
    return {
      round1: value('svc_cdn_purges_pending{round="1"}'),
      round2: value('svc_cdn_purges_pending{round="2"}'),
      oldestSeconds: value('svc_cdn_purge_oldest_pending_seconds'),
    };
  }

  /** The keys each purge call carried since `from`, one list per call. */
  const purgedSince = (from: number) => cdn.calls.slice(from).map((c) => (JSON.parse(c.body) as { keys: string[] }).keys);

  async function publish(key: string, extra: Record<string, unknown> = {}) {
    const res = await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: crypto.randomUUID(), html: '<h1>one</h1>', ...extra } });
    expect(res.status).toBe(201);
    return (await res.json()).site as { id: string; slug: string };
  }

  it('a public file carries the shared-cache lifetime and its keys, browsers still revalidate; private pages are never for a shared cache', async () => {
    const { key } = await h.account();
    const site = await publish(key, { files: [{ path: 'a.css', content: 'b{}' }] });
    for (const path of [`/s/${site.slug}/`, `/s/${site.slug}/a.css`]) {
      const res = await h.fetch(path);
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('public, max-age=0, must-revalidate, s-maxage=600');
      expect(res.headers.get('cdn-cache-control')).toBe('public, max-age=600');
      expect(res.headers.get('etag')).toMatch(/^"[0-9a-f]{32}"$/);
      const file = path.endsWith('a.css') ? 'a.css' : 'index.html';
      const keys = [siteKey(site.id), versionKey(site.id, 1), fileKey(site.id, file)];
      expect(res.headers.get('surrogate-key')).toBe(keys.join(' '));
      expect(res.headers.get('cache-tag')).toBe(keys.join(','));
    }
    // A preview is not for a shared cache (looked at, not served at scale).
    const preview = await h.fetch(`/s/${site.slug}/__svc/v/1/`);
    expect(preview.status).toBe(200);
    expect(preview.headers.get('cache-control')).toBe('public, max-age=0, must-revalidate');
    expect(preview.headers.get('surrogate-key')).toBeNull();

    const locked = await publish(key);
    expect((await h.fetch(`/api/v1/sites/${locked.id}`, { method: 'PATCH', key, json: { password: 'sesame' } })).status).toBe(200);
    const prompt = await h.fetch(`/s/${locked.slug}/`);
    expect(prompt.status).toBe(401);
    expect(prompt.headers.get('cache-control')).toBe('no-store');
    expect(prompt.headers.get('surrogate-key')).toBeNull();
    const unlock = await h.fetch(`/s/${locked.slug}/__svc/unlock`, {
      method: 'POST',
      body: new URLSearchParams({ password: 'sesame', next: `/s/${locked.slug}/` }),
      redirect: 'manual',
    });
    const cookie = unlock.headers.get('set-cookie')!.split(';')[0]!;
    const page = await h.fetch(`/s/${locked.slug}/`, { headers: { cookie } });
    expect(page.status).toBe(200);
    expect(page.headers.get('cache-control')).toBe('private, no-cache');
    expect(page.headers.get('surrogate-key')).toBeNull();
  });

  it("each request (a CDN miss) is answered from the committed site row, never from this node's cached one", async () => {
    const { key } = await h.account();
    const site = await publish(key);
    // Served twice: this node now holds the site's row and its page (what its fast path answers from without a CDN).
    for (let i = 0; i < 2; i++) expect((await h.fetch(`/s/${site.slug}/`)).status).toBe(200);
    // Suspended behind this node's back (no notification reaches it): the next miss must not refill the CDN with the page.
    await h.deps.db.execute(sql`update sites set suspended_at = now() where id = ${site.id}`);
    const res = await h.fetch(`/s/${site.slug}/`);
    expect(res.status).toBe(451);
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it('each change purges exactly the keys it made stale, and answers after the purge', async () => {
    const { key } = await h.account();
    const site = await publish(key, {
      files: [
        { path: 'about/index.html', content: 'old about' },
        { path: 'x.css', content: 'x' },
      ],
    });
    const at = cdn.calls.length;
    const files = (json: unknown) => h.fetch(`/api/v1/sites/${site.id}/files`, { method: 'POST', key, json });

    // Adding about.html takes /about over from about/index.html: both keys; x.css rewritten as it was: none.
    expect(
      (
        await files({
          files: [
            { path: 'about.html', content: 'new about' },
            { path: 'x.css', content: 'x' },
          ],
        })
      ).status,
    ).toBe(200);
    expect(purgedSince(at)).toEqual([[fileKey(site.id, 'about.html'), fileKey(site.id, 'about/index.html')]]);

    const at2 = cdn.calls.length;
    expect((await files({ delete: ['x.css'] })).status).toBe(200);
    expect(purgedSince(at2)).toEqual([[fileKey(site.id, 'x.css')]]);

    // Rollback to version 1: about.html goes, x.css comes back; index.html is unchanged.
    const at3 = cdn.calls.length;
    expect((await h.fetch(`/api/v1/sites/${site.id}/rollback`, { method: 'POST', key, json: { version: 1 } })).status).toBe(201);
    expect(purgedSince(at3).flat().sort()).toEqual([fileKey(site.id, 'x.css'), fileKey(site.id, 'about.html'), fileKey(site.id, 'about/index.html')].sort());

    // Access, suspension, restore and delete change every answer of the site: its key.
    const at4 = cdn.calls.length;
    expect((await h.fetch(`/api/v1/sites/${site.id}`, { method: 'PATCH', key, json: { password: 'pw' } })).status).toBe(200);
    expect((await callAdmin(h, 'site.suspend', { site: site.id, reason: 'reported phishing' })).status).toBe(200);
    expect((await callAdmin(h, 'site.restore', { site: site.id, reason: 'owner fixed it' })).status).toBe(200);
    expect((await h.fetch(`/api/v1/sites/${site.id}`, { method: 'DELETE', key })).status).toBe(200);
    expect(purgedSince(at4)).toEqual([[siteKey(site.id)], [siteKey(site.id)], [siteKey(site.id)], [siteKey(site.id)]]);

    // A request that changes nothing purges nothing.
    const at5 = cdn.calls.length;
    expect((await h.fetch('/api/v1/sites', { key })).status).toBe(200);
    expect(cdn.calls.length).toBe(at5);
  });

  it('a purge the CDN refuses is kept, retried with backoff until it succeeds, and repeated once after the settle time', async () => {
    const { key } = await h.account();
    const site = await publish(key);
    clock.advance(20_000); // the earlier tests' second rounds, out of the way
    await h.deps.purges.drainNow();
    const outbox = async () =>
      rowsOf<{ round: number; attempts: number }>(await h.deps.db.execute(sql`select round, attempts from cdn_purges where ${siteKey(site.id)} = any(keys)`));
    cdn.fail(2);
    const at = cdn.calls.length;
    const res = await h.fetch(`/api/v1/sites/${site.id}`, { method: 'PATCH', key, json: { visibility: 'private', password: 'pw' } });
    expect(res.status).toBe(200); // the change stands; its purge waits in the outbox
    expect(cdn.calls.length).toBe(at + 1);
    expect(await outbox()).toEqual([{ round: 1, attempts: 1 }]);
    expect(await backlog()).toEqual({ round1: 1, round2: 0, oldestSeconds: 0 });

    await h.deps.purges.drainNow(); // not due yet (1 s backoff)
    expect(cdn.calls.length).toBe(at + 1);
    clock.advance(1000);
    await h.deps.purges.drainNow(); // fails again: 2 s
    expect(cdn.calls.length).toBe(at + 2);
    clock.advance(2000);
    // The operator's view while the CDN refuses: one change 3 s old, not purged yet.
    expect(await backlog()).toEqual({ round1: 1, round2: 0, oldestSeconds: 3 });
    await h.deps.purges.drainNow();
    expect(purgedSince(at + 2)).toEqual([[siteKey(site.id)]]);
    expect(await outbox()).toEqual([{ round: 2, attempts: 0 }]);
    expect(await backlog()).toEqual({ round1: 0, round2: 1, oldestSeconds: 0 });

    // Settle: the site cache's TTL (10 s here) and 5 s more.
    clock.advance(14_000);
    await h.deps.purges.drainNow();
    expect(cdn.calls.length).toBe(at + 3);
    clock.advance(1000);
    await h.deps.purges.drainNow();
    expect(purgedSince(at + 3)).toEqual([[siteKey(site.id)]]);
    expect(await outbox()).toEqual([]);
    expect(await backlog()).toEqual({ round1: 0, round2: 0, oldestSeconds: 0 });
  });
});
