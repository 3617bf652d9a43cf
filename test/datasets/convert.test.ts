import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteSite, deleteSiteBlobs } from '../../service/sites/sites.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { CITIES, citiesCsv, citiesGeoJson, citiesGeoParquet, citiesJson, citiesParquet, citiesShapefileZip, citiesXlsx } from './fixtures.js';
import { agentCall, handlers, newWallet, putFile, rejects, uploadAndConvert, walletApp } from './helpers.js';

const SMALL_PARTS = { SVC_DATASET_MULTIPART_THRESHOLD_BYTES: String(5 * 1024 * 1024), SVC_DATASET_PART_BYTES: String(5 * 1024 * 1024) };

describe.each(dbKinds())('Data-file datasets (%s)', (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(kind, SMALL_PARTS);
  });
  afterAll(async () => h?.close());

  /** GET on the Table API path fallback, as any HTTP client would. */
  const tableGet = async (siteSlug: string, slug: string, query = '') => {
    const res = await fetch(`${h.url}/api/data/${siteSlug}/${slug}${query}`);
    return { status: res.status, body: await res.json() };
  };

  const formats: [string, string, () => Promise<Buffer> | Buffer, boolean][] = [
    ['CSV', 'cities.csv', () => citiesCsv(';'), false],
    ['XLSX', 'cities.xlsx', () => citiesXlsx(), false],
    ['JSON', 'cities.json', () => citiesJson(true), false],
    ['GeoJSON', 'cities.geojson', () => citiesGeoJson(), true],
    ['Shapefile ZIP', 'cities.zip', () => citiesShapefileZip(), true],
    ['Parquet (zstd)', 'cities.parquet', () => citiesParquet('ZSTD'), false],
    ['GeoParquet', 'cities.parquet', () => citiesGeoParquet('GZIP'), true],
  ];

  for (const [label, fileName, make, geo] of formats) {
    it(`${label}: upload, convert, then query through the Table API with filters${geo ? ' and bbox' : ''}`, async () => {
      const wallet = newWallet();
      const app = await walletApp(h, wallet);
      const bytes = await make();
      const answer = await agentCall(h, handlers.upload, wallet, app.id, { fileName, fileSize: bytes.length });
      expect(answer.strategy).toBe('single');
      expect(answer.key).toMatch(new RegExp(`^sites/${app.id}/datasets/uploads/`));
      expect(answer.uploadToken).toMatch(/^dsu_/);
      await putFile(h, wallet, app.id, answer, bytes);
      const { asset, replaced } = await agentCall(h, handlers.convert, wallet, app.id, { key: answer.key, fileName, uploadToken: answer.uploadToken });
      expect(replaced).toBe(false);
      expect(asset.id).toMatch(/^ds_/);
      expect(asset.slug).toBe('cities');
      expect(asset.url).toContain(`/api/data/${app.slug}/cities`);
      const expectedCount = label === 'GeoJSON' || label === 'GeoParquet' ? CITIES.length + 1 : CITIES.length;
      expect(asset.recordCount).toBe(expectedCount);

      const all = await tableGet(app.slug, 'cities', '?includeTotal=true&sortField=name&sortDir=asc');
      expect(all.status).toBe(200);
      expect(all.body.total).toBe(expectedCount);

      const berlin = await tableGet(app.slug, 'cities', '?field=name&value=Berlin');
      expect(berlin.body.records).toHaveLength(1);
      expect(berlin.body.records[0].fields.name).toBe('Berlin');
      expect(berlin.body.records[0].fields.population).toBe(3_645_000);

      const big = await tableGet(app.slug, 'cities', '?filter=population&filterValue=gte.2000000&sortField=population&sortDir=desc');
      if (big.status === 200) expect(big.body.records.map((r: { fields: { name: string } }) => r.fields.name)).toEqual(['Berlin', 'Paris']);

      const schema = await tableGet(app.slug, 'cities', '/schema');
      expect(schema.body.kind).toBe('dataset');
      expect(schema.body.methods).toEqual(['GET']);
      const types = Object.fromEntries(schema.body.schema.fields.map((f: { name: string; type: string }) => [f.name, f.type]));
      expect(types.population).toBe('integer');

      if (geo) {
        expect(types).toMatchObject({ geometry: 'json', longitude: 'number', latitude: 'number' });
        // Germany's box: Berlin and Hamburg, not Paris, Lyon, Zürich (nor the lake polygon without a point).
        const de = await tableGet(app.slug, 'cities', '?bbox=5.8,47.5,15.1,55.1&sortField=name');
        expect(de.status).toBe(200);
        expect(de.body.records.map((r: { fields: { name: string } }) => r.fields.name)).toEqual(['Berlin', 'Hamburg']);
        expect(de.body.records[0].fields.geometry).toEqual({ type: 'Point', coordinates: [13.405, 52.52] });
      } else {
        const de = await tableGet(app.slug, 'cities', '?bbox=5.8,47.5,15.1,55.1&longitudeField=lon&latitudeField=lat&sortField=name');
        expect(de.body.records.map((r: { fields: { name: string } }) => r.fields.name)).toEqual(['Berlin', 'Hamburg']);
      }

      // Datasets are read-only through the Table API.
      const post = await fetch(`${h.url}/api/data/${app.slug}/cities`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ record: { name: 'x' } }),
      });
      expect([401, 403, 405]).toContain(post.status);
    });
  }

  it('refuses an unsupported kind and an oversize file before payment', async () => {
    const wallet = newWallet();
    const app = await walletApp(h, wallet);
    const e = await rejects(agentCall(h, handlers.upload, wallet, app.id, { fileName: 'report.pdf', fileSize: 100 }), 'validation_failed');
    expect(e.message).toContain('accepted: CSV');
    await rejects(agentCall(h, handlers.upload, wallet, app.id, { fileName: 'big.csv', fileSize: 10 * 1024 ** 4 }), 'payload_too_large');
  });

  it('a file named without an extension is converted by the kind declared in fileType', async () => {
    const wallet = newWallet();
    const app = await walletApp(h, wallet);
    const bytes = citiesGeoJson();
    const answer = await agentCall(h, handlers.upload, wallet, app.id, { fileName: 'export', fileSize: bytes.length, fileType: 'application/geo+json' });
    expect(answer.kind).toBe('geojson');
    await putFile(h, wallet, app.id, answer, bytes);
    const { asset } = await agentCall(h, handlers.convert, wallet, app.id, { key: answer.key, fileName: 'export' });
    expect(asset).toMatchObject({ slug: 'export', format: 'geojson', recordCount: 6 });
  });

  it("another wallet's app is a 404 at every step", async () => {
    const owner = newWallet();
    const app = await walletApp(h, owner);
    const bytes = citiesCsv();
    const answer = await agentCall(h, handlers.upload, owner, app.id, { fileName: 'c.csv', fileSize: bytes.length });
    await putFile(h, owner, app.id, answer, bytes);
    const thief = newWallet();
    await rejects(agentCall(h, handlers.upload, thief, app.id, { fileName: 'c.csv', fileSize: 10 }), 'not_found');
    await rejects(agentCall(h, handlers.convert, thief, app.id, { key: answer.key, fileName: 'c.csv' }), 'not_found');
    // A key of another app of the same wallet is not found either.
    const other = await walletApp(h, owner);
    await rejects(agentCall(h, handlers.convert, owner, other.id, { key: answer.key, fileName: 'c.csv' }), 'not_found');
  });

  it('converting before the upload arrived, or with a wrong kind, is refused before payment', async () => {
    const wallet = newWallet();
    const app = await walletApp(h, wallet);
    const answer = await agentCall(h, handlers.upload, wallet, app.id, { fileName: 'c.parquet', fileSize: 100 });
    const e = await rejects(agentCall(h, handlers.convert, wallet, app.id, { key: answer.key, fileName: 'c.parquet' }), 'not_uploaded');
    expect(e.message).toMatch(/nothing has been uploaded/);
    const csv = Buffer.alloc(100, 'a');
    await putFile(h, wallet, app.id, answer, csv);
    const bad = await rejects(agentCall(h, handlers.convert, wallet, app.id, { key: answer.key, fileName: 'c.parquet' }), 'data_file_invalid');
    expect(bad.message).toMatch(/PAR1/);
  });

  const malformed: [string, string, () => Promise<Buffer> | Buffer, RegExp, Record<string, unknown>][] = [
    ['CSV with a short row', 'bad.csv', () => Buffer.from('a,b,c\n1,2,3\n4,5\n'), /row 2, line 3/, { row: 2, line: 3 }],
    ['CSV with an unterminated quote', 'bad.csv', () => Buffer.from('a,b\n1,2\n3,"x\n'), /quot/i, {}],
    ['JSON with a syntax error', 'bad.json', () => Buffer.from('[{"a":1},\n{"a":2,}]'), /row 2, line 2/, { row: 2, line: 2 }],
    ['GeoJSON without FeatureCollection', 'bad.geojson', () => Buffer.from('{"type":"GeometryCollection","geometries":[]}'), /GeoJSON/, {}],
    ['XLSX that is a zip of something else', 'bad.xlsx', async () => await citiesShapefileZip(), /XLSX|sheet/, {}],
    ['Shapefile ZIP without a .shp', 'bad.zip', async () => await citiesXlsx(), /\.shp/, {}],
    ['truncated Parquet', 'bad.parquet', () => citiesParquet('SNAPPY').subarray(0, 300), /Parquet/, {}],
  ];
  for (const [label, fileName, make, message, location] of malformed) {
    it(`${label}: a clear error, nothing loaded`, async () => {
      const wallet = newWallet();
      const app = await walletApp(h, wallet);
      const e = await rejects(uploadAndConvert(h, wallet, app.id, fileName, await make()), 'data_file_invalid');
      expect(e.message).toMatch(message);
      expect(e.message).toContain('Nothing was loaded');
      expect(e.details).toMatchObject(location);
      const r = await tableGet(app.slug, 'bad');
      expect(r.status).toBe(404);
      const { tables } = await import('../../service/db/schema/index.js');
      const { eq } = await import('drizzle-orm');
      expect(await h.deps.db.select().from(tables).where(eq(tables.siteId, app.id))).toEqual([]);
    });
  }

  it('a sheet the workbook does not have is a validation error on sheet (the argument, not the file), naming the sheets', async () => {
    const wallet = newWallet();
    const app = await walletApp(h, wallet);
    const e = await rejects(uploadAndConvert(h, wallet, app.id, 'cities.xlsx', await citiesXlsx('Cities', 'Notes'), { sheet: 'Revenue' }), 'validation_failed');
    expect(e.message).toBe('cities.xlsx: the workbook has no sheet named "Revenue" (sheets: Notes, Cities). Nothing was loaded.');
    expect(e.details).toEqual({ issues: [{ field: 'sheet', message: 'the workbook has no sheet named "Revenue" (sheets: Notes, Cities)' }] });
    expect((await tableGet(app.slug, 'cities')).status).toBe(404);
    const named = await uploadAndConvert(h, wallet, app.id, 'cities.xlsx', await citiesXlsx('Cities', 'Notes'), { sheet: 'Cities' });
    expect(named.asset.recordCount).toBe(CITIES.length);
  });

  it('replaceExisting swaps atomically and keeps the dataset id; without it the slug is a 409', { timeout: 180_000 }, async () => {
    const wallet = newWallet();
    const app = await walletApp(h, wallet);
    const v1 = Buffer.from(`version,n\n${Array.from({ length: 3000 }, (_, i) => `1,${i}`).join('\n')}\n`);
    const v2 = Buffer.from(`version,n\n${Array.from({ length: 5000 }, (_, i) => `2,${i}`).join('\n')}\n`);
    const first = await uploadAndConvert(h, wallet, app.id, 'data.csv', v1, { slug: 'data' });
    await rejects(uploadAndConvert(h, wallet, app.id, 'data.csv', v2, { slug: 'data' }), 'slug_taken');

    // Readers during the replacement see all of v1 or all of v2, never a mix.
    let stop = false;
    const seen = new Set<string>();
    const reader = (async () => {
      while (!stop) {
        // One request, one statement: the versions present and how many rows each has.
        const r = await tableGet(app.slug, 'data', '?aggregate=count&groupBy=version');
        if (r.status === 200) seen.add(r.body.groups.map((g: { key: unknown; count: number }) => `${g.key}:${g.count}`).join(','));
      }
    })();
    let second;
    try {
      second = await uploadAndConvert(h, wallet, app.id, 'data.csv', v2, { slug: 'data', replaceExisting: true });
    } finally {
      stop = true;
      await reader;
    }
    expect(seen.size).toBeGreaterThan(0);
    for (const s of seen) expect(['1:3000', '2:5000']).toContain(s);
    expect(second.replaced).toBe(true);
    expect(second.asset.id).toBe(first.asset.id);
    expect(second.asset.tableId).not.toBe(first.asset.tableId);
    const after = await tableGet(app.slug, 'data', '?includeTotal=true&limit=1');
    expect(after.body.total).toBe(5000);

    // A failed replacement leaves the current data as it was.
    await rejects(
      uploadAndConvert(h, wallet, app.id, 'data.csv', Buffer.from('version,n\n3,1\n3\n'), { slug: 'data', replaceExisting: true }),
      'data_file_invalid',
    );
    expect((await tableGet(app.slug, 'data', '?includeTotal=true&limit=1')).body.total).toBe(5000);
  });

  it('a multipart upload on the local store above the threshold, then convert', { timeout: 180_000 }, async () => {
    const wallet = newWallet();
    const app = await walletApp(h, wallet);
    const pad = 'x'.repeat(120);
    const rows = Array.from({ length: 40_000 }, (_, i) => `${i},name-${i}-${pad},${(i * 0.25).toFixed(2)},${i % 2 === 0}`);
    const bytes = Buffer.from(`id,name,score,even\n${rows.join('\n')}\n`);
    expect(bytes.length).toBeGreaterThan(5 * 1024 * 1024);
    const answer = await agentCall(h, handlers.upload, wallet, app.id, { fileName: 'big.csv', fileSize: bytes.length });
    expect(answer.strategy).toBe('multipart');
    expect(answer.parts!.length).toBe(Math.ceil(bytes.length / (5 * 1024 * 1024)));
    // Completing with a wrong ETag is refused and can be retried correctly.
    await rejects(
      agentCall(h, handlers.complete, wallet, app.id, {
        uploadId: answer.uploadId,
        key: answer.key,
        parts: answer.parts!.map((p) => ({ ETag: '"00"', PartNumber: p.partNumber })),
      }),
      'validation_failed',
    );
    await putFile(h, wallet, app.id, answer, bytes);
    const { asset } = await agentCall(h, handlers.convert, wallet, app.id, { key: answer.key, fileName: 'big.csv' });
    expect(asset.recordCount).toBe(40_000);
    expect(asset.fields.map((f) => [f.name, f.type])).toEqual([
      ['source_id', 'integer'],
      ['name', 'string'],
      ['score', 'number'],
      ['even', 'boolean'],
    ]);
    const r = await tableGet(app.slug, 'big', '?field=source_id&value=12346');
    expect(r.body.records[0].fields).toEqual({ source_id: 12346, name: `name-12346-${pad}`, score: 3086.5, even: true });
  });

  it('deleting the app deletes its datasets, their tables and their files', async () => {
    const wallet = newWallet();
    const app = await walletApp(h, wallet);
    const { asset } = await uploadAndConvert(h, wallet, app.id, 'cities.csv', citiesCsv());
    expect((await tableGet(app.slug, asset.slug)).status).toBe(200);
    expect((await h.deps.blobs.list(`sites/${app.id}/datasets/`)).length).toBe(1);
    await deleteSite(h.deps, app);
    await deleteSiteBlobs(h.deps, app.id);
    expect((await tableGet(app.slug, asset.slug)).status).toBe(404);
    expect(await h.deps.blobs.list(`sites/${app.id}/`)).toEqual([]);
    const { datasets } = await import('../../service/db/schema/index.js');
    const { eq } = await import('drizzle-orm');
    expect(await h.deps.db.select().from(datasets).where(eq(datasets.siteId, app.id))).toEqual([]);
  });
});
