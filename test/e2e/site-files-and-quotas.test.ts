import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPersonalKey } from '../../service/accounts/personal-keys.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';

// A site published from inline files, the refusals that leave nothing behind, and limits that hold
// when the requests that would pass them arrive at once (the count and the insert run under a lock).
const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');

describe.each(dbKinds())('Account API publish from files, and quotas under concurrency (%s)', (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(kind, { SVC_MAX_SITES_PER_ACCOUNT: '4', SVC_MAX_TABLES_PER_SITE: '3', SVC_MAX_FILES_PER_SITE: '5' });
  });
  afterAll(async () => h?.close());

  const publish = (key: string, json: Record<string, unknown>) => h.fetch('/api/v1/sites', { method: 'POST', key, json });

  it('publishes a site from its HTML and other text and base64 files, each served with its type', async () => {
    const { key } = await h.account();
    const home = '<link rel="stylesheet" href="css/site.css"><img src="pixel.png"><h1>Files</h1>';
    const res = await publish(key, {
      requestId: 'files-1',
      slug: 'from-files',
      html: home,
      files: [
        { path: '/css/site.css', content: 'h1 { color: teal }' },
        { path: 'pixel.png', content: PNG.toString('base64'), encoding: 'base64' },
      ],
    });
    expect(res.status).toBe(201);
    const { site } = await res.json();
    expect(site).toMatchObject({ slug: 'from-files', entryPoint: 'index.html', fileCount: 3, bytes: home.length + 18 + PNG.length });
    expect(await (await fetch(site.pathUrl)).text()).toContain('<h1>Files</h1>');
    const css = await fetch(`${site.pathUrl}css/site.css`);
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect(await css.text()).toBe('h1 { color: teal }');
    const png = await fetch(`${site.pathUrl}pixel.png`);
    expect(png.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await png.arrayBuffer())).toEqual(PNG);
  });

  it('refuses bad files with a 400 naming the field, and stores nothing', async () => {
    const { key } = await h.account();
    const page = '<p>x</p>';
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ files: [{ path: 'a.css', content: 'x' }] }, /html/],
      [{ html: page, files: [{ path: 'index.html', content: '<p>y</p>' }] }, /files\.0\.path: index\.html is the html field/],
      [
        {
          html: page,
          files: [
            { path: 'a.css', content: 'a' },
            { path: './a.css', content: 'b' },
          ],
        },
        /files\.1\.path: a\.css is listed twice/,
      ],
      [{ html: page, files: [{ path: '../etc/passwd', content: 'x' }] }, /files\.0\.path/],
      [{ html: page, files: [{ path: 'a.png', content: 'not base64!', encoding: 'base64' }] }, /files\.0\.content: not valid base64/],
      [{ html: page, files: [{ path: 'a.txt', content: 'x', contentType: 'no type' }] }, /files\.0\.contentType: not a media type/],
    ];
    for (const [i, [body, message]] of cases.entries()) {
      const res = await publish(key, { requestId: `bad-${i}`, ...body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect((await res.json()).error.message).toMatch(message);
    }
    const tooMany = await publish(key, { requestId: 'many', html: page, files: [1, 2, 3, 4, 5].map((n) => ({ path: `${n}.txt`, content: 'x' })) });
    expect(tooMany.status).toBe(429);
    expect((await tooMany.json()).error.message).toMatch(/6 files given \(index\.html and 5 more\); the limit is 5 files per site/);
    expect((await (await h.fetch('/api/v1/sites', { key })).json()).total).toBe(0);
    // A refused request keeps no requestId: the same one works once the body is fixed.
    expect((await publish(key, { requestId: 'bad-1', html: '<p>fixed</p>' })).status).toBe(201);
  });

  it('writes files into a published site: index.html replaced, new files added, the others kept, served at once', async () => {
    const { key } = await h.account();
    const { site } = await (
      await publish(key, { requestId: 'w', slug: `write-${kind}`, html: '<h1>v1</h1>', files: [{ path: 'css/a.css', content: 'h1{}' }] })
    ).json();
    expect(await (await fetch(site.pathUrl)).text()).toBe('<h1>v1</h1>');
    // By name, as every :siteId takes it; a path written as "/app.js" is app.js.
    const res = await h.fetch(`/api/v1/sites/write-${kind}/files`, {
      method: 'POST',
      key,
      json: {
        files: [
          { path: 'index.html', content: '<script src="app.js"></script><h1>v2</h1>' },
          { path: '/app.js', content: 'console.log(2)' },
          { path: 'pixel.png', content: PNG.toString('base64'), encoding: 'base64' },
        ],
      },
    });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.site).toMatchObject({ id: site.id, status: 'updated', fileCount: 4 });
    expect(await (await fetch(site.pathUrl)).text()).toBe('<script src="app.js"></script><h1>v2</h1>');
    const js = await fetch(`${site.pathUrl}app.js`);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await js.text()).toBe('console.log(2)');
    expect(Buffer.from(await (await fetch(`${site.pathUrl}pixel.png`)).arrayBuffer())).toEqual(PNG);
    expect(await (await fetch(`${site.pathUrl}css/a.css`)).text()).toBe('h1{}');
  });

  it("refuses a bad write naming the field and writes none of its files; another account's site is a 404; the scope is svc.sites.write", async () => {
    const { key, accountId } = await h.account();
    const { site } = await (await publish(key, { requestId: 'r', html: '<h1>kept</h1>', files: [{ path: 'a.css', content: 'a' }] })).json();
    const write = (files: unknown[], as = key) => h.fetch(`/api/v1/sites/${site.id}/files`, { method: 'POST', key: as, json: { files } });
    const good = { path: 'index.html', content: '<h1>lost</h1>' };
    const cases: [unknown[], number, RegExp][] = [
      [[good, { path: '../x', content: 'x' }], 400, /files\.1\.path/],
      [[good, { path: '/index.html', content: 'y' }], 400, /files\.1\.path: index\.html is listed twice/],
      [[good, { path: 'b.png', content: 'not base64!', encoding: 'base64' }], 400, /files\.1\.content: not valid base64/],
      [[], 400, /files/],
      // Five files is the limit: two there, three new and a replaced one would make five (allowed),
      // four new would make six, refused as a whole though each alone would fit.
      [[good, ...[1, 2, 3, 4].map((n) => ({ path: `n${n}.txt`, content: 'x' }))], 429, /the site has 2 files, 4 more would pass the limit of 5 files per site/],
    ];
    for (const [files, status, message] of cases) {
      const res = await write(files);
      expect(res.status, JSON.stringify(files)).toBe(status);
      expect((await res.json()).error.message).toMatch(message);
    }
    const content = await (await h.fetch(`/api/v1/sites/${site.id}/content`, { key })).json();
    expect(content.files.map((f: { path: string; content: string }) => [f.path, f.content])).toEqual([
      ['a.css', 'a'],
      ['index.html', '<h1>kept</h1>'],
    ]);
    const other = await h.account();
    expect((await write([good], other.key)).status).toBe(404);
    const readOnly = await createPersonalKey(h.deps.db, { accountId, name: 'read', scopes: ['svc.sites.read'] });
    const noScope = await write([good], readOnly.secret);
    expect(noScope.status).toBe(403);
    expect((await noScope.json()).error.message).toMatch(/svc\.sites\.write/);
    expect(await (await fetch(site.pathUrl)).text()).toBe('<h1>kept</h1>');
    const fits = await write([good, ...[1, 2, 3].map((n) => ({ path: `n${n}.txt`, content: 'x' }))]);
    expect(fits.status).toBe(200);
    expect((await fits.json()).site.fileCount).toBe(5);
  });

  it('deletes files in the same all-or-none change: never the entry point, never a file that is not there; a swap at the file limit fits', async () => {
    const { key } = await h.account();
    const files = [1, 2, 3].map((n) => ({ path: `old${n}.html`, content: `<p>${n}</p>` }));
    const { site } = await (await publish(key, { requestId: 'd', html: '<h1>home</h1>', files: [...files, { path: 'a.css', content: 'a' }] })).json();
    expect(site.fileCount).toBe(5); // the limit
    const change = (json: unknown) => h.fetch(`/api/v1/sites/${site.id}/files`, { method: 'POST', key, json });
    const refusals: [unknown, RegExp][] = [
      [{ delete: ['index.html'] }, /^delete\.0: index\.html is the entry point \("\/" serves it\): replace it instead$/],
      [{ delete: ['old1.html', 'nope.txt'] }, /^delete\.1: the site has no file nope\.txt$/],
      [{ files: [{ path: 'old1.html', content: 'x' }], delete: ['/old1.html'] }, /^delete\.0: old1\.html is listed twice$/],
      [{ delete: ['../x'] }, /^delete\.0: /],
      [{ files: [], delete: [] }, /^files: give files to write, paths to delete, or both$/],
    ];
    for (const [json, message] of refusals) {
      const res = await change(json);
      expect(res.status, JSON.stringify(json)).toBe(400);
      expect((await res.json()).error.message).toMatch(message);
    }
    expect(await (await fetch(`${site.pathUrl}old1.html`)).text()).toBe('<p>1</p>');
    // At the limit of five: one new file and one deleted is five still (counted together, not refused).
    const swap = await change({ files: [{ path: 'new.html', content: '<p>new</p>' }], delete: ['old1.html', 'old2.html'] });
    expect(swap.status).toBe(200);
    expect((await swap.json()).site).toMatchObject({ fileCount: 4, status: 'updated' });
    expect((await fetch(`${site.pathUrl}old1.html`)).status).toBe(404);
    expect(await (await fetch(`${site.pathUrl}new.html`)).text()).toBe('<p>new</p>');
    const content = await (await h.fetch(`/api/v1/sites/${site.id}/content`, { key })).json();
    expect(content.files.map((f: { path: string }) => f.path)).toEqual(['a.css', 'index.html', 'new.html', 'old3.html']);
    // Deleting alone works too.
    expect((await change({ delete: ['old3.html'] })).status).toBe(200);
    expect((await fetch(`${site.pathUrl}old3.html`)).status).toBe(404);
  });

  it('uploads a file no JSON body carries by URL: PUT, then finalize checks what arrived; a token is good for its own site only', async () => {
    const { key } = await h.account();
    const { site } = await (await publish(key, { requestId: 'u', html: '<img src="photo.png">' })).json();
    const other = (await (await publish(key, { requestId: 'u2', html: '<p>other</p>' })).json()).site;
    // 2 MB: over what one JSON body carries in base64.
    const photo = Buffer.concat([PNG, Buffer.alloc(2 * 1024 * 1024, 7)]);
    const post = (path: string, json: unknown, id = site.id) => h.fetch(`/api/v1/sites/${id}/${path}`, { method: 'POST', key, json });
    const urls = await (await post('upload-urls', { files: [{ path: 'photo.png', size: photo.length, type: 'image/png' }] })).json();
    expect(urls).toMatchObject({ ok: true, uploadToken: expect.any(String), files: [{ path: 'photo.png', size: photo.length, method: 'PUT' }] });
    const finalize = (json: Record<string, unknown>, id = site.id) =>
      post('upload-urls/finalize', { uploadToken: urls.uploadToken, files: [{ path: 'photo.png', size: photo.length }], ...json }, id);
    const early = await finalize({});
    expect(early.status).toBe(400);
    expect((await early.json()).error).toMatchObject({ code: 'not_uploaded', message: expect.stringMatching(/photo\.png has not been uploaded/) });
    expect((await fetch(urls.files[0].uploadUrl, { method: 'PUT', headers: urls.files[0].headers, body: photo })).ok).toBe(true);
    const elsewhere = await finalize({}, other.id);
    expect((await elsewhere.json()).error.message).toBe('uploadToken belongs to another app');
    const done = await finalize({});
    expect(done.status).toBe(200);
    expect((await done.json()).site).toMatchObject({ fileCount: 2, status: 'updated' });
    expect(Buffer.from(await (await fetch(`${site.pathUrl}photo.png`)).arrayBuffer())).toEqual(photo);
    // The limits are checked before any URL is signed: six files on a site limited to five.
    const many = await post('upload-urls', { files: [1, 2, 3, 4].map((n) => ({ path: `p${n}.png`, size: 10, type: 'image/png' })) });
    expect(many.status).toBe(429);
  });

  it('eight concurrent publishes for an account limited to four sites make four sites', async () => {
    const { key } = await h.account();
    const results = await Promise.all([...Array(8).keys()].map((i) => publish(key, { requestId: `q-${i}`, html: `<p>${i}</p>` })));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 201, 201, 201, 429, 429, 429, 429]);
    const refused = await Promise.all(results.filter((r) => r.status === 429).map((r) => r.json()));
    for (const b of refused) expect(b.error.message).toMatch(/site limit reached \(4 sites\)/);
    expect((await (await h.fetch('/api/v1/sites', { key })).json()).total).toBe(4);
  });

  it('six concurrent table creates on a site limited to three tables make three tables', async () => {
    const { key } = await h.account();
    const { site } = await (await publish(key, { requestId: 't', html: '<p>t</p>' })).json();
    const schema = { fields: [{ name: 'title', label: 'Title', type: 'string' }] };
    const results = await Promise.all(
      [...Array(6).keys()].map((i) => h.fetch(`/api/v1/sites/${site.id}/tables`, { method: 'POST', key, json: { name: `T${i}`, schema } })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 201, 201, 429, 429, 429]);
    const list = await (await h.fetch(`/api/v1/sites/${site.id}/tables`, { key })).json();
    expect(list.tables).toHaveLength(3);
  });
});
