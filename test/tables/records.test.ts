import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { getJson, makeTable, type TableFixture } from './helpers.js';

const SCHEMA = {
  fields: [
    { name: 'title', label: 'Title', type: 'string', required: true },
    { name: 'price', label: 'Price', type: 'number' },
    { name: 'tags', label: 'Tags', type: 'json' },
  ],
};

describe.each(dbKinds())('Table API records (%s)', (kind) => {
  let h: Harness;
  let t: TableFixture;
  let key: Record<string, string>;
  beforeAll(async () => {
    h = await startHarness(kind);
    t = await makeTable(h, { name: 'Items', schema: SCHEMA });
    key = { 'x-svc-write-key': t.table.writeKey };
  });
  afterAll(async () => h?.close());

  const send = async (method: string, path: string, json?: unknown) => {
    const res = await h.fetch(path, { method, json, headers: key });
    return { status: res.status, body: await res.json() };
  };

  it('POST {record} creates one; GET /<id> reads it; PATCH changes given fields; PUT replaces; DELETE removes', async () => {
    const created = await send('POST', t.path, { record: { title: 'Lamp', price: 20, tags: ['a'] } });
    expect(created.status).toBe(201);
    const { id } = created.body.record;
    expect(created.body.record).toMatchObject({ id: expect.stringMatching(/^\d+$/), fields: { title: 'Lamp', price: 20, tags: ['a'] } });

    const read = await getJson(h, `${t.path}/${id}`);
    expect(read.status).toBe(200);
    expect(read.body.record.fields).toEqual({ title: 'Lamp', price: 20, tags: ['a'] });

    const patched = await send('PATCH', `${t.path}/${id}`, { fields: { price: 25 } });
    expect(patched.status).toBe(200);
    expect(patched.body.record.fields).toEqual({ title: 'Lamp', price: 25, tags: ['a'] });

    const cleared = await send('PATCH', `${t.path}/${id}`, { fields: { tags: null } });
    expect(cleared.body.record.fields).toEqual({ title: 'Lamp', price: 25, tags: null });

    const replaced = await send('PUT', `${t.path}/${id}`, { record: { title: 'Desk lamp' } });
    expect(replaced.status).toBe(200);
    expect(replaced.body.record.fields).toEqual({ title: 'Desk lamp' });
    expect((await getJson(h, `${t.path}/${id}`)).body.record.fields).toEqual({ title: 'Desk lamp' });

    const deleted = await send('DELETE', `${t.path}/${id}`);
    expect(deleted).toEqual({ status: 200, body: { ok: true, deleted: { id } } });
    expect((await getJson(h, `${t.path}/${id}`)).status).toBe(404);
    expect((await send('DELETE', `${t.path}/${id}`)).status).toBe(404);
  });

  it('a bad record is a 400 naming the field, and nothing is written', async () => {
    const before = (await getJson(h, `${t.path}?aggregate=count`)).body.value;
    const bad = await send('POST', t.path, { record: { title: 'x', price: 'free' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.issues).toEqual([{ field: 'record.price', message: 'expected a number' }]);
    const missing = await send('POST', t.path, { record: { price: 1 } });
    expect(missing.body.error.details.issues).toEqual([{ field: 'record.title', message: 'required' }]);
    const unknown = await send('POST', t.path, { record: { title: 'x', colour: 'red' } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.details.issues[0].field).toBe('record.colour');
    const batch = await send('POST', t.path, { records: [{ title: 'ok 1' }, { title: 'ok 2' }, { title: 7, price: 'x' }, { title: 'ok 3', nope: 1 }] });
    expect(batch.status).toBe(400);
    expect(batch.body.error.details.issues.map((i: { field: string }) => i.field)).toEqual(['records.2.price', 'records.3.nope']);
    expect((await getJson(h, `${t.path}?aggregate=count`)).body.value).toBe(before);
  });

  it('POST {records} inserts a batch of up to 500; more is a 413 that writes nothing', async () => {
    const before = (await getJson(h, `${t.path}?aggregate=count`)).body.value;
    const ok = await send('POST', t.path, { records: Array.from({ length: 500 }, (_, i) => ({ title: `r${i}`, price: i })) });
    expect(ok.status).toBe(201);
    expect(ok.body.inserted).toBe(500);
    const tooMany = await send('POST', t.path, { records: Array.from({ length: 501 }, (_, i) => ({ title: `r${i}` })) });
    expect(tooMany.status).toBe(413);
    expect((await getJson(h, `${t.path}?aggregate=count`)).body.value).toBe(before + 500);
  });

  it('bodies are checked: PATCH needs fields, PUT needs the whole record, POST needs record or records', async () => {
    const { body } = await send('POST', t.path, { record: { title: 'Chair', price: 5 } });
    const id = body.record.id;
    expect((await send('PATCH', `${t.path}/${id}`, { record: { price: 1 } })).status).toBe(400);
    expect((await send('PATCH', `${t.path}/${id}`, { fields: { price: 'x' } })).body.error.details.issues).toEqual([
      { field: 'fields.price', message: 'expected a number' },
    ]);
    expect((await send('PATCH', `${t.path}/${id}`, { fields: { title: null } })).status).toBe(400);
    const put = await send('PUT', `${t.path}/${id}`, { record: { price: 9 } });
    expect(put.status).toBe(400);
    expect(put.body.error.details.issues).toEqual([{ field: 'record.title', message: 'required' }]);
    expect((await send('POST', t.path, { title: 'bare' })).status).toBe(400);
    expect((await send('POST', t.path, {})).status).toBe(400);
    // A value that is not an object where an object belongs: 400 naming the field and what was expected.
    const notObjects = [
      [await send('POST', t.path, { record: ['Chair'] }), 'record', 'invalid body: record: expected an object of field name to value'],
      [await send('PATCH', `${t.path}/${id}`, { fields: 'price=1' }), 'fields', 'invalid body: fields: expected an object of the fields to change'],
      [await send('PUT', `${t.path}/${id}`, { record: null }), 'record', 'invalid body: record: expected the complete record as an object'],
    ] as const;
    for (const [res, field, message] of notObjects) {
      expect(res.status).toBe(400);
      expect(res.body.error.message).toBe(message);
      expect(res.body.error.details.issues).toEqual([{ field, message: 'expected an object' }]);
    }
    const notJson = await h.fetch(t.path, { method: 'POST', headers: { ...key, 'content-type': 'application/json' }, body: '{oops' });
    expect(notJson.status).toBe(400);
    expect((await getJson(h, `${t.path}/${id}`)).body.record.fields).toEqual({ title: 'Chair', price: 5 });
  });

  it('unknown or foreign record ids are 404; methods on the wrong address are 405', async () => {
    const other = await makeTable(h, { name: 'Other', schema: SCHEMA });
    const res = await h.fetch(other.path, { method: 'POST', json: { record: { title: 'theirs' } }, headers: { 'x-svc-write-key': other.table.writeKey } });
    const theirs = (await res.json()).record.id;
    expect((await getJson(h, `${t.path}/${theirs}`)).status).toBe(404);
    expect((await send('PATCH', `${t.path}/${theirs}`, { fields: { price: 1 } })).status).toBe(404);
    expect((await send('DELETE', `${t.path}/${theirs}`)).status).toBe(404);
    expect((await getJson(h, `${other.path}/${theirs}`)).body.record.fields).toEqual({ title: 'theirs' });
    expect((await getJson(h, `${t.path}/abc`)).status).toBe(404);
    expect((await getJson(h, `${t.path}/99999999999999999999`)).status).toBe(404);
    expect((await send('DELETE', t.path)).status).toBe(405);
    expect((await send('POST', `${t.path}/schema`, {})).status).toBe(405);
  });

  it('JSON bodies above 1 MiB are refused with 413', async () => {
    const big = 'x'.repeat(1024 * 1024 + 10);
    const r = await send('POST', t.path, { record: { title: big } });
    expect(r.status).toBe(413);
  });
});
