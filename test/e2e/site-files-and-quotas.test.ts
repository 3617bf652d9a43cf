import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
