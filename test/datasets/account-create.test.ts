import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { datasetUploads } from '../../service/db/schema/index.js';
import { createPersonalKey } from '../../service/accounts/personal-keys.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { citiesCsv, citiesGeoJson, citiesXlsx } from './fixtures.js';

// POST /api/v1/sites/:siteId/datasets: an account makes a dataset from a file given inline, as a
// wallet does with upload URLs and convert_data_file_to_api (svc's addition to the spec).
describe.each(dbKinds())('Account API: a dataset from an inline data file (%s)', (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(kind, { SVC_DATASET_MULTIPART_THRESHOLD_BYTES: String(5 * 1024 * 1024), SVC_DATASET_PART_BYTES: String(5 * 1024 * 1024) });
  });
  afterAll(async () => h?.close());

  async function appOf(key: string, slug: string) {
    const res = await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: slug, slug, html: '<p>data</p>' } });
    expect(res.status).toBe(201);
    return (await res.json()).site as { id: string; slug: string };
  }
  const create = (key: string, site: string, json: Record<string, unknown>) => h.fetch(`/api/v1/sites/${site}/datasets`, { method: 'POST', key, json });

  it('converts CSV text and XLSX in base64 into datasets the Table API serves; replaceExisting swaps the data; a taken name gets a free slug', async () => {
    const { key } = await h.account();
    const site = await appOf(key, `inline-${kind}`);
    const res = await create(key, site.slug, { fileName: 'cities.csv', content: citiesCsv().toString('utf8') });
    expect(res.status).toBe(201);
    const body = await res.json();
    expect(body).toMatchObject({ ok: true, replaced: false, dataset: { slug: 'cities', format: 'csv', recordCount: 5, fileName: 'cities.csv' } });
    expect(body.dataset.fields.map((f: { name: string; type: string }) => `${f.name}:${f.type}`)).toEqual([
      'name:string',
      'country:string',
      'population:integer',
      'area:number',
      'capital:boolean',
      'founded:date',
      'lon:number',
      'lat:number',
    ]);
    const rows = await (await fetch(`${body.dataset.pathUrl}?sort=-population&limit=2`)).json();
    expect(rows.records.map((r: { fields: { name: string } }) => r.fields.name)).toEqual(['Berlin', 'Paris']);

    const xlsx = await create(key, site.slug, { fileName: 'cities.xlsx', content: (await citiesXlsx()).toString('base64'), encoding: 'base64', slug: 'sheet' });
    expect(xlsx.status).toBe(201);
    expect((await xlsx.json()).dataset).toMatchObject({ slug: 'sheet', format: 'xlsx', recordCount: 5 });

    const again = await create(key, site.slug, { fileName: 'cities.csv', content: 'name\nOslo\n' });
    expect(await again.json()).toMatchObject({ dataset: { slug: 'cities-2', recordCount: 1 }, slugTaken: 'cities' });
    const replaced = await create(key, site.slug, { fileName: 'cities.csv', content: 'name\nOslo\nBern\n', slug: 'cities', replaceExisting: true });
    expect(await replaced.json()).toMatchObject({ replaced: true, dataset: { slug: 'cities', id: body.dataset.id, recordCount: 2 } });
    expect((await (await fetch(body.dataset.pathUrl)).json()).records.map((r: { fields: { name: string } }) => r.fields.name)).toEqual(['Oslo', 'Bern']);
    const listed = await (await h.fetch(`/api/v1/sites/${site.id}/datasets`, { key })).json();
    expect(listed.datasets.map((d: { slug: string }) => d.slug)).toEqual(['cities', 'sheet', 'cities-2']);
  });

  it('refuses a file it cannot convert, bad base64, an unknown kind, a missing scope and another account: nothing is kept', async () => {
    const { key, accountId } = await h.account();
    const site = await appOf(key, `refused-${kind}`);
    const cases: [Record<string, unknown>, number, RegExp][] = [
      [{ fileName: 'bad.csv', content: 'a,b\n1,2\n"open,3\n' }, 400, /^bad\.csv \(CSV\) could not be converted: .*Nothing was loaded\.$/],
      [{ fileName: 'a.xlsx', content: 'not base64!', encoding: 'base64' }, 400, /^content: not valid base64$/],
      [{ fileName: 'notes.pdf', content: 'hello' }, 400, /"notes\.pdf" is not a data file kind we convert/],
      [{ fileName: 'g.geojson', content: '{"type":"FeatureCollection"' }, 400, /g\.geojson \(GeoJSON\) could not be converted/],
    ];
    for (const [json, status, message] of cases) {
      const res = await create(key, site.slug, json);
      expect(res.status, JSON.stringify(json)).toBe(status);
      expect((await res.json()).error.message).toMatch(message);
    }
    const tables = await (await h.fetch(`/api/v1/sites/${site.id}/tables`, { key })).json();
    expect(tables.tables).toEqual([]);
    expect((await (await h.fetch(`/api/v1/sites/${site.id}/datasets`, { key })).json()).datasets).toEqual([]);
    // Nor the refused files: no upload slot, no bytes in the blob store.
    expect(await h.deps.db.select().from(datasetUploads).where(eq(datasetUploads.siteId, site.id))).toEqual([]);
    expect(await h.deps.blobs.list(`sites/${site.id}/datasets/`)).toEqual([]);

    const geo = { fileName: 'cities.geojson', content: citiesGeoJson().toString('utf8') };
    const readOnly = await createPersonalKey(h.deps.db, { accountId, name: 'read', scopes: ['svc.data.read'] });
    const noScope = await create(readOnly.secret, site.slug, geo);
    expect(noScope.status).toBe(403);
    const other = await h.account();
    expect((await create(other.key, site.slug, geo)).status).toBe(404);
    expect((await create(key, site.slug, geo)).status).toBe(201);
  });

  it('a file too large for one request goes by upload URL (one PUT, or parts), then convert; a refused file stays uploaded to convert again', async () => {
    const { key } = await h.account();
    const site = await appOf(key, `upload-${kind}`);
    const post = (path: string, json: Record<string, unknown>, as = key) =>
      h.fetch(`/api/v1/sites/${site.id}/datasets/${path}`, { method: 'POST', key: as, json });
    // One PUT: a CSV whose first data row is broken, refused, then the same key converted after a fixed re-upload.
    const bad = Buffer.from('name,population\nOslo,"709000\nBern,134000\n');
    const single = await (await post('upload-url', { fileName: 'towns.csv', fileSize: bad.length })).json();
    expect(single).toMatchObject({ ok: true, strategy: 'single', kind: 'csv', key: expect.any(String) });
    expect((await fetch(single.upload.url, { method: 'PUT', headers: single.upload.headers, body: bad })).ok).toBe(true);
    const refused = await post('convert', { key: single.key, fileName: 'towns.csv', uploadToken: single.uploadToken });
    expect(refused.status).toBe(400);
    expect((await refused.json()).error.message).toMatch(/^towns\.csv \(CSV\) could not be converted: /);
    expect(await h.deps.db.select().from(datasetUploads).where(eq(datasetUploads.key, single.key))).toHaveLength(1);
    // Another account's key, or a token for another key, is refused.
    expect((await post('convert', { key: single.key, fileName: 'towns.csv' }, (await h.account()).key)).status).toBe(404);
    const forged = await post('convert', { key: `${single.key}x`, fileName: 'towns.csv', uploadToken: single.uploadToken });
    expect((await forged.json()).error.message).toMatch(/uploadToken is invalid, expired, or for another key/);

    // Parts: 6 MiB of rows over the 5 MiB threshold, each part PUT, completed with their ETags, converted.
    const rows = Array.from({ length: 340_000 }, (_, i) => `town-${i},${i}`).join('\n');
    const big = Buffer.from(`name,population\n${rows}\n`);
    expect(big.length).toBeGreaterThan(5 * 1024 * 1024);
    const multi = await (await post('upload-url', { fileName: 'many.csv', fileSize: big.length })).json();
    expect(multi).toMatchObject({ strategy: 'multipart', parts: [expect.any(Object), expect.any(Object)] });
    const etags: { ETag: string; PartNumber: number }[] = [];
    let offset = 0;
    for (const part of multi.parts as { partNumber: number; url: string; size: number }[]) {
      const res = await fetch(part.url, { method: 'PUT', body: big.subarray(offset, offset + part.size) });
      offset += part.size;
      etags.push({ ETag: res.headers.get('etag')!, PartNumber: part.partNumber });
    }
    const completed = await post('complete-upload', { key: multi.key, uploadId: multi.uploadId, parts: etags, uploadToken: multi.uploadToken });
    expect(await completed.json()).toMatchObject({ ok: true, key: multi.key, size: big.length });
    const made = await post('convert', { key: multi.key, fileName: 'many.csv', name: 'Towns' });
    expect(made.status).toBe(201);
    const { dataset } = await made.json();
    expect(dataset).toMatchObject({ slug: 'towns', format: 'csv', recordCount: 340_000, sourceBytes: big.length });
    const last = await (await fetch(`${dataset.pathUrl}?sort=-population&limit=1`)).json();
    expect(last.records[0].fields).toEqual({ name: 'town-339999', population: 339999 });
  });
});
