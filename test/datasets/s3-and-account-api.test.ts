import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountOwner } from '../../service/db/owner.js';
import { getOwnedSite } from '../../service/sites/sites.js';
import { convertDataFile, planConversion } from '../../service/datasets/datasets.js';
import { createUpload } from '../../service/datasets/uploads.js';
import { SCOPES } from '../../shared/scopes.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { startS3Server, type S3Server } from '../helpers/s3rver.js';
import { citiesGeoJson } from './fixtures.js';
import { agentCall, handlers, newWallet, putFile, rejects, walletApp, type UploadAnswer } from './helpers.js';

const SMALL_PARTS = { SVC_DATASET_MULTIPART_THRESHOLD_BYTES: String(5 * 1024 * 1024), SVC_DATASET_PART_BYTES: String(5 * 1024 * 1024) };

describe.each(dbKinds())('Datasets on a real S3-compatible server, and the Account API listing (%s)', (kind) => {
  let s3: S3Server;
  let h: Harness;
  beforeAll(async () => {
    s3 = await startS3Server('datasets');
    h = await startHarness(kind, { ...s3.env, ...SMALL_PARTS });
  });
  afterAll(async () => {
    await h?.close();
    await s3?.close();
  });

  it('a file larger than the multipart threshold: presigned parts PUT to S3, completed, converted and queried', { timeout: 180_000 }, async () => {
    expect(h.deps.blobs.kind).toBe('s3');
    const wallet = newWallet();
    const app = await walletApp(h, wallet);
    const pad = 'y'.repeat(120);
    const lines = Array.from({ length: 40_000 }, (_, i) => `${i};"name ${i} ${pad}";${(i % 97) / 4};${i % 3 === 0 ? 'true' : 'false'}`);
    const bytes = Buffer.from(`n;label;score;flag\n${lines.join('\n')}\n`);
    expect(bytes.length).toBeGreaterThan(5 * 1024 * 1024);
    const answer: UploadAnswer = await agentCall(h, handlers.upload, wallet, app.id, { fileName: 'big.csv', fileSize: bytes.length });
    expect(answer.strategy).toBe('multipart');
    expect(answer.uploadId).toBeTruthy();
    expect(answer.partSize).toBe(5 * 1024 * 1024);
    expect(answer.parts!.map((p) => p.partNumber)).toEqual([1, 2]);
    expect(answer.parts![0]!.url).toContain(s3.endpoint);

    // Parts missing → the completion is refused (before payment) until all are given.
    await rejects(
      agentCall(h, handlers.complete, wallet, app.id, { uploadId: answer.uploadId, key: answer.key, parts: [{ ETag: '"x"', PartNumber: 1 }] }),
      'validation_failed',
    );
    // Converting before completion: not uploaded yet.
    await rejects(agentCall(h, handlers.convert, wallet, app.id, { key: answer.key, fileName: 'big.csv' }), 'not_uploaded');

    await putFile(h, wallet, app.id, answer, bytes); // PUTs both parts, completes with their ETags
    expect((await h.deps.blobs.head(answer.key))?.size).toBe(bytes.length);
    // Completing again is harmless (the store forgot the upload id; the file is there).
    const again = await agentCall(h, handlers.complete, wallet, app.id, {
      uploadId: answer.uploadId,
      key: answer.key,
      parts: answer.parts!.map((p) => ({ ETag: '"whatever"', PartNumber: p.partNumber })),
    });
    expect(again).toMatchObject({ success: true, size: bytes.length });

    const { asset } = await agentCall(h, handlers.convert, wallet, app.id, { key: answer.key, fileName: 'big.csv' });
    expect(asset.recordCount).toBe(40_000);
    expect(asset.fields.map((f) => f.type)).toEqual(['integer', 'string', 'number', 'boolean']);
    const res = await fetch(`${h.url}/api/data/${app.slug}/big?field=n&value=39999`);
    expect((await res.json()).records[0].fields).toEqual({ n: 39999, label: `name 39999 ${pad}`, score: (39999 % 97) / 4, flag: true });
  });

  it('a single presigned PUT to S3 for a small file', async () => {
    const wallet = newWallet();
    const app = await walletApp(h, wallet);
    const bytes = citiesGeoJson();
    const answer: UploadAnswer = await agentCall(h, handlers.upload, wallet, app.id, { fileName: 'c.geojson', fileSize: bytes.length });
    expect(answer.strategy).toBe('single');
    expect(answer.upload!.headers['content-type']).toBe('application/geo+json');
    await putFile(h, wallet, app.id, answer, bytes);
    const { asset } = await agentCall(h, handlers.convert, wallet, app.id, { key: answer.key, fileName: 'c.geojson', slug: 'places' });
    expect(asset.slug).toBe('places');
    expect(asset.recordCount).toBe(6);
  });

  it('GET /api/v1/sites/:siteId/datasets lists them; scope and ownership apply', async () => {
    const alice = await h.account();
    const pub = await h.fetch('/api/v1/sites', { method: 'POST', key: alice.key, json: { requestId: 'd1', html: '<p>x</p>', slug: `ds-${Date.now()}` } });
    const { site: view } = await pub.json();
    const site = await getOwnedSite(h.deps.db, accountOwner(alice.accountId), view.id);
    const bytes = citiesGeoJson();
    const slot = await createUpload(h.deps, site, { fileName: 'cities.geojson', fileSize: bytes.length });
    await h.deps.blobs.put(slot.key, bytes);
    const plan = await planConversion(h.deps, site, { key: slot.key, fileName: 'cities.geojson', name: 'Cities' });
    await h.deps.db.transaction((tx) => convertDataFile(h.deps, site, plan, tx));

    const res = await h.fetch(`/api/v1/sites/${site.id}/datasets`, { key: alice.key });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.datasets).toHaveLength(1);
    expect(body.datasets[0]).toMatchObject({
      slug: 'cities',
      name: 'Cities',
      format: 'geojson',
      fileName: 'cities.geojson',
      recordCount: 6,
      sourceBytes: bytes.length,
      pathUrl: `${h.url}/api/data/${site.slug}/cities`,
    });
    expect(body.datasets[0].fields).toContainEqual({ name: 'geometry', label: 'geometry', type: 'json' });

    const noScope = await h.account(SCOPES.filter((s) => s !== 'svc.data.read'));
    expect((await h.fetch(`/api/v1/sites/${site.id}/datasets`, { key: noScope.key })).status).toBe(403);
    const bob = await h.account();
    expect((await h.fetch(`/api/v1/sites/${site.id}/datasets`, { key: bob.key })).status).toBe(404);
    expect((await h.fetch(`/api/v1/sites/${site.id}/datasets`)).status).toBe(401);

    const doc = await (await h.fetch('/api/v1/openapi.json')).json();
    expect(doc.paths['/sites/{siteId}/datasets'].get.security).toEqual([{ personalKey: ['svc.data.read'] }, { oauth2: ['svc.data.read'] }]);
  });
});
