import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { getJson, makeTable } from './helpers.js';

const SCHEMA = { fields: [{ name: 'title', label: 'Title', type: 'string' }] };

describe.each(dbKinds())('Tables on the Account API (%s)', (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(kind);
  });
  afterAll(async () => h?.close());

  async function site(key: string) {
    const res = await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: crypto.randomUUID(), html: '<p>x</p>' } });
    return (await res.json()).site as { id: string; slug: string };
  }

  it('creates a table: id, slug, url, writeKey once; lists it with its record count (never the key)', async () => {
    const { key } = await h.account();
    const s = await site(key);
    const res = await h.fetch(`/api/v1/sites/${s.id}/tables`, {
      method: 'POST',
      key,
      json: {
        name: 'Guest book',
        requireReadKey: false,
        publicInsert: true,
        methods: ['GET', 'POST'],
        schema: {
          fields: [
            { name: 'msg', label: 'Message', type: 'string' },
            { name: 'at', label: 'At', type: 'datetime' },
          ],
        },
      },
    });
    expect(res.status).toBe(201);
    const { table } = await res.json();
    const port = new URL(h.url).port;
    expect(table).toMatchObject({
      slug: 'guest-book',
      name: 'Guest book',
      kind: 'table',
      url: `http://${s.slug}.localhost:${port}/api/data/${s.slug}/guest-book`,
      pathUrl: `${h.url}/api/data/${s.slug}/guest-book`,
      publicInsert: true,
      requireReadKey: false,
      methods: ['GET', 'POST'],
      writeKey: expect.stringMatching(/^svc_tk_[\w-]{43}$/),
      recordCount: 0,
    });
    expect(table.id).toMatch(/^tbl_/);
    await h.fetch(new URL(table.pathUrl).pathname, { method: 'POST', json: { record: { msg: 'hi' } } });
    const list = await getJson(h, `/api/v1/sites/${s.id}/tables`, { authorization: `Bearer ${key}` });
    expect(list.status).toBe(200);
    expect(list.body.tables).toHaveLength(1);
    expect(list.body.tables[0]).toMatchObject({ id: table.id, slug: 'guest-book', recordCount: 1 });
    expect(JSON.stringify(list.body)).not.toContain(table.writeKey);
  });

  it('checks the body: a bad schema is a 400 naming the field; a taken slug is a 409', async () => {
    const { key } = await h.account();
    const s = await site(key);
    const bad = await h.fetch(`/api/v1/sites/${s.id}/tables`, {
      method: 'POST',
      key,
      json: { name: 'x', schema: { fields: [{ name: 'a', label: 'A', type: 'money' }] } },
    });
    expect(bad.status).toBe(400);
    expect((await bad.json()).error.details.issues[0].field).toBe('schema.fields.0.type');
    const dup = await h.fetch(`/api/v1/sites/${s.id}/tables`, {
      method: 'POST',
      key,
      json: {
        name: 'x',
        schema: {
          fields: [
            { name: 'a', label: 'A', type: 'string' },
            { name: 'a', label: 'A', type: 'number' },
          ],
        },
      },
    });
    expect((await dup.json()).error.details.issues[0].field).toBe('schema.fields.1.name');
    const noSchema = await h.fetch(`/api/v1/sites/${s.id}/tables`, { method: 'POST', key, json: { name: 'x' } });
    expect(noSchema.status).toBe(400);
    const one = await h.fetch(`/api/v1/sites/${s.id}/tables`, { method: 'POST', key, json: { name: 'x', slug: 'things', schema: SCHEMA } });
    expect(one.status).toBe(201);
    const two = await h.fetch(`/api/v1/sites/${s.id}/tables`, { method: 'POST', key, json: { name: 'y', slug: 'things', schema: SCHEMA } });
    expect(two.status).toBe(409);
    const badSlug = await h.fetch(`/api/v1/sites/${s.id}/tables`, { method: 'POST', key, json: { name: 'y', slug: 'No Spaces', schema: SCHEMA } });
    expect(badSlug.status).toBe(400);
  });

  it('scopes: listing needs svc.data.read, creating svc.data.write; another account gets 404', async () => {
    const owner = await h.account();
    const s = await site(owner.key);
    const readOnly = await h.account(['svc.data.read']);
    const noData = await h.account(['svc.sites.read']);
    expect((await h.fetch(`/api/v1/sites/${s.id}/tables`)).status).toBe(401);
    expect((await h.fetch(`/api/v1/sites/${s.id}/tables`, { key: noData.key })).status).toBe(403);
    expect((await h.fetch(`/api/v1/sites/${s.id}/tables`, { method: 'POST', key: readOnly.key, json: { name: 'x', schema: SCHEMA } })).status).toBe(403);
    // readOnly is another account: it cannot see the owner's site at all.
    expect((await h.fetch(`/api/v1/sites/${s.id}/tables`, { key: readOnly.key })).status).toBe(404);
    const stranger = await h.account();
    expect((await h.fetch(`/api/v1/sites/${s.id}/tables`, { method: 'POST', key: stranger.key, json: { name: 'x', schema: SCHEMA } })).status).toBe(404);
    expect((await h.fetch(`/api/v1/sites/${s.id}/tables`, { key: owner.key })).status).toBe(200);
  });

  it('deleting the site deletes its tables and records; usage counts tables and records', async () => {
    const t = await makeTable(h, { name: 'Doomed', schema: SCHEMA });
    await h.fetch(t.path, { method: 'POST', json: { records: [{ title: 'a' }, { title: 'b' }] }, headers: { 'x-svc-write-key': t.table.writeKey } });
    const usage = await getJson(h, '/api/v1/usage', { authorization: `Bearer ${t.key}` });
    expect(usage.body.usage.tables.used).toBe(1);
    expect(usage.body.usage.tableRecords.used).toBe(2);
    const del = await h.fetch(`/api/v1/sites/${t.siteId}`, { method: 'DELETE', key: t.key });
    expect(del.status).toBe(200);
    expect((await getJson(h, t.path)).status).toBe(404);
    const after = await getJson(h, '/api/v1/usage', { authorization: `Bearer ${t.key}` });
    expect(after.body.usage.tables.used).toBe(0);
    expect(after.body.usage.tableRecords.used).toBe(0);
  });

  it('the OpenAPI document lists the two table operations with their scopes', async () => {
    const doc = await (await h.fetch('/api/v1/openapi.json')).json();
    const p = doc.paths['/sites/{siteId}/tables'] ?? doc.paths['/api/v1/sites/{siteId}/tables'];
    expect(p.get.security).toEqual(expect.arrayContaining([{ personalKey: ['svc.data.read'] }]));
    expect(p.post.security).toEqual(expect.arrayContaining([{ personalKey: ['svc.data.write'] }]));
  });
});
