import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runHousekeeping } from '../../service/housekeeping/housekeeping.js';
import { deleteOrphanBlobs } from '../../service/housekeeping/orphan-blobs.js';
import { runAdminOperation } from '../../service/admin/operations.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { getWithHost } from '../helpers/host-request.js';

const html = (title: string) => `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1></body></html>`;

describe.each(dbKinds())('Site versions, previews and rollback (%s)', (kind) => {
  let h: Harness;
  beforeAll(async () => {
    // Keep the last 2 versions, and none for being recent: the retention test prunes at once.
    h = await startHarness(kind, { SVC_VERSIONS_KEEP_LAST: '2', SVC_VERSIONS_KEEP_DAYS: '0' });
  });
  afterAll(async () => h?.close());

  async function publish(key: string, slug: string, files: { path: string; content: string }[] = []) {
    const res = await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: `p-${slug}`, html: html('One'), slug, files } });
    expect(res.status).toBe(201);
    return (await res.json()).site as { id: string; slug: string; pathUrl: string };
  }
  const write = (key: string, siteId: string, body: unknown) => h.fetch(`/api/v1/sites/${siteId}/files`, { method: 'POST', key, json: body });
  const versions = async (key: string, siteId: string, query = '') => (await h.fetch(`/api/v1/sites/${siteId}/versions${query}`, { key })).json();

  it('every change of the files is a version: newest first, the live one marked, with who, counts and what changed', async () => {
    const { key, accountId } = await h.account();
    const site = await publish(key, 'history', [{ path: 'a.css', content: 'a{}' }]);
    expect(
      (
        await write(key, site.id, {
          files: [
            { path: 'index.html', content: html('Two') },
            { path: 'b.js', content: 'let b' },
          ],
        })
      ).status,
    ).toBe(200);
    expect((await write(key, site.id, { files: [], delete: ['a.css'] })).status).toBe(200);

    const list = await versions(key, site.id);
    expect(list).toMatchObject({ ok: true, siteId: site.id, current: 3, total: 3 });
    expect(list.versions.map((v: { version: number; current: boolean }) => [v.version, v.current])).toEqual([
      [3, true],
      [2, false],
      [1, false],
    ]);
    const [v3, v2, v1] = list.versions;
    expect(v1).toMatchObject({ action: 'create', summary: 'published 2 files (a.css, index.html)', fileCount: 2, entryPoint: 'index.html', rollbackOf: null });
    expect(v2).toMatchObject({ action: 'change', summary: 'added b.js; changed index.html', fileCount: 3 });
    expect(v3).toMatchObject({ action: 'change', summary: 'removed a.css', fileCount: 2 });
    expect(v1.bytes).toBe(Buffer.byteLength(html('One')) + 3);
    expect(v1.by).toMatchObject({ kind: 'account', accountId, credential: { kind: 'personal_key' } });
    expect(v1.previewUrl).toBe(`${site.pathUrl}__svc/v/1/`);

    // Paged: the second page still knows which version is live.
    const page = await versions(key, site.id, '?limit=1&offset=1');
    expect(page).toMatchObject({ current: 3, total: 3, limit: 1, offset: 1 });
    expect(page.versions.map((v: { version: number }) => v.version)).toEqual([2]);

    const one = await (await h.fetch(`/api/v1/sites/${site.slug}/versions/1`, { key })).json();
    expect(one.version.files.map((f: { path: string }) => f.path)).toEqual(['a.css', 'index.html']);
    expect(one.version.files[0]).toMatchObject({ size: 3, contentType: expect.stringContaining('text/css') });

    const missing = await h.fetch(`/api/v1/sites/${site.id}/versions/9`, { key });
    expect(missing.status).toBe(404);
    expect((await missing.json()).error.message).toBe('site history has no version 9: its newest is 3');

    // Another account sees none of it.
    const other = await h.account();
    expect((await h.fetch(`/api/v1/sites/${site.id}/versions`, { key: other.key })).status).toBe(404);
  });

  it("a preview serves exactly that version's files, sandboxed, while the site keeps serving the live one", async () => {
    const { key } = await h.account();
    const site = await publish(key, 'previewed', [{ path: 'style.css', content: 'old{}' }]);
    await write(key, site.id, {
      files: [
        { path: 'index.html', content: html('Live') },
        { path: 'style.css', content: 'new{}' },
      ],
    });

    const live = await fetch(site.pathUrl);
    expect(await live.text()).toContain('<h1>Live</h1>');
    const preview = await fetch(`${site.pathUrl}__svc/v/1/`);
    expect(preview.status).toBe(200);
    expect(await preview.text()).toContain('<h1>One</h1>');
    expect(preview.headers.get('content-security-policy')).toMatch(/^sandbox /);
    expect(preview.headers.get('x-robots-tag')).toBe('noindex');
    expect(await (await fetch(`${site.pathUrl}__svc/v/1/style.css`)).text()).toBe('old{}');
    expect(await (await fetch(`${site.pathUrl}style.css`)).text()).toBe('new{}');
    // Without its slash, the preview's root redirects (its relative links then resolve inside it).
    const bare = await fetch(`${site.pathUrl}__svc/v/1`, { redirect: 'manual' });
    expect(bare.status).toBe(301);
    expect(bare.headers.get('location')).toBe(`/s/previewed/__svc/v/1/`);
    const none = await fetch(`${site.pathUrl}__svc/v/7/`);
    expect(none.status).toBe(404);
    expect(await none.text()).toContain('Version 7 of the site &quot;previewed&quot; is not kept.');
  });

  it('a private site asks for its password before a preview, and its unlock opens the previews too', async () => {
    const { key } = await h.account();
    const site = await publish(key, 'secret-history');
    await write(key, site.id, { files: [{ path: 'index.html', content: html('Two') }] });
    expect((await h.fetch(`/api/v1/sites/${site.id}`, { method: 'PATCH', key, json: { password: 'open sesame' } })).status).toBe(200);
    const locked = await fetch(`${site.pathUrl}__svc/v/1/`);
    expect(locked.status).toBe(401);
    expect(await locked.text()).not.toContain('<h1>One</h1>');
    const unlock = await fetch(`${site.pathUrl}__svc/unlock`, {
      method: 'POST',
      body: new URLSearchParams({ password: 'open sesame', next: '/s/secret-history/__svc/v/1/' }),
      redirect: 'manual',
    });
    expect(unlock.status).toBe(303);
    const cookie = unlock.headers.get('set-cookie')!.split(';')[0]!;
    const open = await fetch(`${site.pathUrl}__svc/v/1/`, { headers: { cookie } });
    expect(open.status).toBe(200);
    expect(await open.text()).toContain('<h1>One</h1>');
  });

  it('rollback serves the old files at once on both URL forms (ETags follow), is itself a version, and replays by requestId', async () => {
    const { key } = await h.account();
    const site = await publish(key, 'undo-me', [{ path: 'app.js', content: 'v1' }]);
    const first = await fetch(site.pathUrl);
    const etag1 = first.headers.get('etag');
    await write(key, site.id, {
      files: [
        { path: 'index.html', content: html('Broken') },
        { path: 'extra.txt', content: 'x' },
      ],
      delete: ['app.js'],
    });
    const broken = await fetch(site.pathUrl);
    expect(await broken.text()).toContain('Broken');

    const back = await h.fetch(`/api/v1/sites/${site.id}/rollback`, { method: 'POST', key, json: { version: 1, requestId: 'undo-1' } });
    expect(back.status).toBe(201);
    const body = await back.json();
    expect(body).toMatchObject({ ok: true, siteId: site.id, replayed: false });
    expect(body.version).toMatchObject({ version: 3, current: true, action: 'rollback', rollbackOf: 1, fileCount: 2 });
    expect(body.version.summary).toBe('rolled back to version 1: added app.js; changed index.html; removed extra.txt');

    const now = await fetch(site.pathUrl);
    expect(await now.text()).toContain('<h1>One</h1>');
    expect(now.headers.get('etag')).toBe(etag1);
    expect((await fetch(site.pathUrl, { headers: { 'if-none-match': etag1! } })).status).toBe(304);
    expect(await (await fetch(`${site.pathUrl}app.js`)).text()).toBe('v1');
    expect((await fetch(`${site.pathUrl}extra.txt`)).status).toBe(404);
    const byHost = await getWithHost(`${h.url}/`, 'undo-me.localhost');
    expect(byHost.body).toContain('<h1>One</h1>');

    // The same requestId: the same answer, nothing changed.
    const again = await h.fetch(`/api/v1/sites/${site.id}/rollback`, { method: 'POST', key, json: { version: 1, requestId: 'undo-1' } });
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ replayed: true, version: { version: 3, rollbackOf: 1 } });
    const reused = await h.fetch(`/api/v1/sites/${site.id}/rollback`, { method: 'POST', key, json: { version: 2, requestId: 'undo-1' } });
    expect(reused.status).toBe(409);

    // A rollback can be rolled back.
    const redo = await (await h.fetch(`/api/v1/sites/${site.id}/rollback`, { method: 'POST', key, json: { version: 2 } })).json();
    expect(redo.version).toMatchObject({ version: 4, rollbackOf: 2 });
    expect(await (await fetch(site.pathUrl)).text()).toContain('Broken');
    expect((await versions(key, site.id)).current).toBe(4);

    const gone = await h.fetch(`/api/v1/sites/${site.id}/rollback`, { method: 'POST', key, json: { version: 12 } });
    expect(gone.status).toBe(404);
    expect((await h.fetch(`/api/v1/sites/${site.id}/rollback`, { method: 'POST', key, json: { version: 'one' } })).status).toBe(400);
  });

  it('an upload finalize is a version too; identical bytes are stored once across versions', async () => {
    const { key } = await h.account();
    const site = await publish(key, 'uploaded');
    const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('pixels')]);
    const urls = await (
      await h.fetch(`/api/v1/sites/${site.id}/upload-urls`, {
        method: 'POST',
        key,
        json: { files: [{ path: 'img/logo.png', size: png.length, type: 'image/png' }] },
      })
    ).json();
    const put = await fetch(urls.files[0].uploadUrl, { method: 'PUT', headers: urls.files[0].headers, body: png });
    expect(put.ok).toBe(true);
    const done = await h.fetch(`/api/v1/sites/${site.id}/upload-urls/finalize`, {
      method: 'POST',
      key,
      json: { uploadToken: urls.uploadToken, files: [{ path: 'img/logo.png', size: png.length }] },
    });
    expect(done.status).toBe(200);
    const list = await versions(key, site.id);
    expect(list.versions[0]).toMatchObject({ version: 2, action: 'upload', summary: 'added img/logo.png' });

    const filesOf = async () => (await h.deps.blobs.list(`sites/${site.id}/files/`)).length;
    const stored = await filesOf();
    // The same bytes at another path, and a rollback: no new blob.
    await write(key, site.id, { files: [{ path: 'copy.html', content: html('One') }] });
    await h.fetch(`/api/v1/sites/${site.id}/rollback`, { method: 'POST', key, json: { version: 1 } });
    expect(await filesOf()).toBe(stored);
  });

  it("retention prunes versions past the last N (an account's own setting over the operator's); the sweep keeps every blob a kept version names", async () => {
    const { key, email } = await h.account();
    const site = await publish(key, 'pruned', [{ path: 'v.txt', content: 'one' }]);
    for (const n of ['two', 'three', 'four']) await write(key, site.id, { files: [{ path: 'v.txt', content: n }] });
    expect((await versions(key, site.id)).total).toBe(4);

    // The operator keeps 2; this account asks for 3.
    expect(await runAdminOperation(h.deps, 'account.versions', { email, keepLast: 3 })).toMatchObject({ retention: { keepLast: 3, keepDays: 0 }, own: true });
    const report = await runHousekeeping(h.deps, { force: true });
    expect(report!.versions).toBeGreaterThanOrEqual(1);
    const kept = await versions(key, site.id);
    expect(kept.versions.map((v: { version: number }) => v.version)).toEqual([4, 3, 2]);
    const pruned = await h.fetch(`/api/v1/sites/${site.id}/versions/1`, { key });
    expect(pruned.status).toBe(404);
    expect((await pruned.json()).error.message).toContain('is no longer kept');
    expect((await fetch(`${site.pathUrl}__svc/v/1/v.txt`)).status).toBe(404);

    // The sweep (everything old enough): version 1's own blob goes, every kept version still serves.
    await deleteOrphanBlobs(h.deps, new Date(Date.now() + 1000), 0);
    for (const [n, text] of [
      [2, 'two'],
      [3, 'three'],
      [4, 'four'],
    ] as const) {
      const res = await fetch(`${site.pathUrl}__svc/v/${n}/v.txt`);
      expect(res.status, `version ${n}`).toBe(200);
      expect(await res.text()).toBe(text);
    }
    const blobs = await h.deps.blobs.list(`sites/${site.id}/files/`);
    expect(blobs.length).toBe(4); // index.html (shared by all) and v.txt of versions 2, 3, 4
    // Back to the operator's 2.
    await runAdminOperation(h.deps, 'account.versions', { email, reset: true });
    await runHousekeeping(h.deps, { force: true });
    expect((await versions(key, site.id)).versions.map((v: { version: number }) => v.version)).toEqual([4, 3]);
    // A rollback to a kept version still works after the sweep.
    const back = await h.fetch(`/api/v1/sites/${site.id}/rollback`, { method: 'POST', key, json: { version: 3 } });
    expect(back.status).toBe(201);
    expect(await (await fetch(`${site.pathUrl}v.txt`)).text()).toBe('three');
  });

  it('traffic: requests and bytes per day on both URL forms, previews apart, added when the node flushes', async () => {
    const { key } = await h.account();
    const site = await publish(key, 'visited');
    await write(key, site.id, { files: [{ path: 'index.html', content: html('Two') }] });
    const size = Buffer.byteLength(html('Two'));
    for (let i = 0; i < 3; i++) expect((await fetch(site.pathUrl)).status).toBe(200); // the first fills the cache, then the fast path
    expect((await getWithHost(`${h.url}/`, 'visited.localhost')).status).toBe(200);
    expect((await fetch(`${site.pathUrl}__svc/v/1/`)).status).toBe(200);
    expect((await fetch(`${site.pathUrl}missing.css`)).status).toBe(404); // not a file served: not counted

    const before = await (await h.fetch(`/api/v1/sites/${site.id}/traffic?days=2`, { key })).json();
    expect(before.total.requests).toBe(0); // nothing flushed yet
    await h.deps.traffic.flush(h.deps);
    const after = await (await h.fetch(`/api/v1/sites/${site.id}/traffic?days=2`, { key })).json();
    expect(after.days).toHaveLength(2);
    expect(after.days[1].day).toBe(new Date().toISOString().slice(0, 10));
    expect(after.total).toEqual({ requests: 4, bytes: 4 * size, previewRequests: 1, previewBytes: Buffer.byteLength(html('One')) });
    expect(after.flushSeconds).toBe(5);
    // A second flush adds only what came since.
    await fetch(site.pathUrl);
    await h.deps.traffic.flush(h.deps);
    await h.deps.traffic.flush(h.deps);
    expect((await (await h.fetch(`/api/v1/sites/${site.id}/traffic`, { key })).json()).total.requests).toBe(5);
    expect((await h.fetch(`/api/v1/sites/${site.id}/traffic?days=0`, { key })).status).toBe(400);
  });
});
