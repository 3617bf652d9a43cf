import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';

// Input a careless or hostile client sends: each is a 4xx that says what is wrong, never a 500, and
// nothing is stored. (PostgreSQL refuses NUL characters; a body that is not JSON is not guessed at.)
describe.each(dbKinds())('hostile input (%s)', (kind) => {
  let h: Harness;
  let key: string;
  let siteId: string;
  beforeAll(async () => {
    h = await startHarness(kind);
    key = (await h.account()).key;
    siteId = (await (await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: 'base', html: '<p>x</p>' } })).json()).site.id;
  });
  afterAll(async () => h?.close());

  const expectError = async (res: Response, status: number, code: string) => {
    expect(res.status).toBe(status);
    const body = await res.json();
    expect(body.error.code).toBe(code);
    return body.error.message as string;
  };

  it('a NUL character anywhere is a 400 naming it, and nothing is stored', async () => {
    const nul = '\u0000';
    expect(
      await expectError(await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: `r${nul}`, html: '<p>y</p>' } }), 400, 'validation_failed'),
    ).toMatch(/NUL character/);
    await expectError(
      await h.fetch(`/api/v1/sites/${siteId}/tables`, { method: 'POST', key, json: { name: `T${nul}`, schema: { fields: [] } } }),
      400,
      'validation_failed',
    );
    await expectError(
      await h.fetch('/api/v1/functions', { method: 'POST', key, json: { name: 'f', slug: 'f-nul', code: `export default () => 1${nul}` } }),
      400,
      'validation_failed',
    );
    await expectError(await h.fetch('/api/v1/sites/site_%00', { key }), 400, 'validation_failed');
    expect((await (await h.fetch('/api/v1/sites', { key })).json()).total).toBe(1);
    const table = await (
      await h.fetch(`/api/v1/sites/${siteId}/tables`, {
        method: 'POST',
        key,
        json: { name: 'Notes', publicInsert: true, schema: { fields: [{ name: 'msg', label: 'Message', type: 'string' }] } },
      })
    ).json();
    const insert = await fetch(table.table.pathUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ msg: `a${nul}b` }),
    });
    expect(insert.status).toBe(400);
  });

  it('an Account API body field its schema does not declare is a 400 naming it and the declared ones, and nothing is stored; without a key, 401 first', async () => {
    // `name` for `slug`: dropped silently, the site would have been published under a random name.
    const message = await expectError(
      await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: 'misnamed', html: '<p>z</p>', name: 'shop' } }),
      400,
      'validation_failed',
    );
    expect(message).toBe('invalid body: unknown field name; its fields are requestId, html, files, slug. Nothing was done.');
    // Nested too: a misspelt `encoding` would have stored the base64 text as the file.
    const png = { path: 'logo.png', content: Buffer.from('\x89PNG\r\n').toString('base64'), encodign: 'base64' };
    const nested = await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: 'misspelt', html: '<p>z</p>', files: [png] } });
    expect(await expectError(nested, 400, 'validation_failed')).toBe(
      'invalid body: unknown field files.0.encodign; the fields of files.0 are path, content, encoding, contentType. Nothing was done.',
    );
    expect((await (await h.fetch('/api/v1/sites', { key })).json()).total).toBe(1);
    await expectError(await h.fetch('/api/v1/sites', { method: 'POST', json: { requestId: 'anon', html: '<p>z</p>', name: 'shop' } }), 401, 'unauthorized');
    // The same request with the declared field does what it says.
    const published = await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: 'misnamed', html: '<p>z</p>', slug: `shop-${kind}` } });
    expect(published.status).toBe(201);
    const site = (await published.json()).site;
    expect(site.slug).toBe(`shop-${kind}`);
    expect((await h.fetch(`/api/v1/sites/${site.id}`, { method: 'DELETE', key })).ok).toBe(true);
  });

  it('an Account API body that is not JSON is a 415 that names the type to send', async () => {
    for (const [path, body] of [
      ['/api/v1/sites', 'requestId=x&html=y'],
      [`/api/v1/sites/${siteId}/tables`, 'name=x'],
      ['/api/v1/functions/invoke/nothing', 'x'],
    ] as const) {
      const res = await fetch(`${h.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'text/plain' }, body });
      expect(await expectError(res, 415, 'unsupported_media_type'), path).toMatch(/application\/json/);
    }
    expect((await (await h.fetch('/api/v1/sites', { key })).json()).total).toBe(1);
  });

  it('a full disk is a 507 with Retry-After, and the files written before it are removed: no site, no orphan blob', async () => {
    const blobs = h.deps.blobs;
    const before = (await blobs.list('sites/')).length;
    const realPut = blobs.put.bind(blobs);
    let puts = 0;
    blobs.put = async (k, body, type) => {
      if (++puts === 3) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', syscall: 'write' });
      return realPut(k, body, type);
    };
    try {
      const files = ['a.css', 'b.js', 'c.txt'].map((path) => ({ path, content: `/* ${path} */` }));
      const res = await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: 'full-disk', html: '<p>big</p>', files } });
      expect(await expectError(res, 507, 'insufficient_storage')).toMatch(/out of storage space; nothing of this request was kept/);
      expect(res.headers.get('retry-after')).toBe('60');
    } finally {
      delete (blobs as { put?: unknown }).put; // the prototype's put again
    }
    expect(puts).toBe(3);
    expect((await (await h.fetch('/api/v1/sites', { key })).json()).total).toBe(1);
    expect((await blobs.list('sites/')).length).toBe(before);
    // The same request once there is space: published.
    const again = await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: 'full-disk', html: '<p>big</p>' } });
    expect(again.status).toBe(201);
  });
});
