import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PrivateKeyAccount } from 'viem/accounts';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { devChain, fundedWallet, html, paidCaller, payV2 } from '../payments/helpers.js';
import { citiesCsv } from './fixtures.js';

/** The whole flow through the real paid Agent API: x402 payments signed, verified and settled on the dev chain. */
describe.each(dbKinds())('Datasets through the paid Agent API (%s)', (kind) => {
  let h: Harness;
  let wallet: PrivateKeyAccount;
  let pay: typeof fetch;
  beforeAll(async () => {
    h = await startHarness(kind);
    wallet = await fundedWallet(h, 5_000_000n);
    pay = payV2(wallet);
  });
  afterAll(async () => h?.close());

  const call = paidCaller(
    () => h,
    () => pay,
  );
  const balance = () => devChain(h).balanceOf(wallet.address);

  it('upload URL (0.001) → PUT → convert (0.01) → Table API; bad files and kinds cost nothing', async () => {
    const app = await call('POST', '/api/x402/apps', { name: `data-${kind}`, html: html('data') });
    expect(app.status).toBe(201);
    const siteId = app.body.app.appId;

    // A kind we do not convert: 400 before payment.
    let before = await balance();
    const pdf = await call('POST', `/api/x402/apps/${siteId}/data-files/upload-url`, { fileName: 'x.pdf', fileSize: 10 });
    expect(pdf.status).toBe(400);
    expect(await balance()).toBe(before);

    const bytes = citiesCsv();
    before = await balance();
    const up = await call('POST', `/api/x402/apps/${siteId}/data-files/upload-url`, { fileName: 'cities.csv', fileSize: bytes.length, fileType: 'text/csv' });
    expect(up.status).toBe(200);
    expect(up.body).toMatchObject({ ok: true, strategy: 'single', kind: 'csv' });
    expect(up.body.receipt).toMatchObject({ action: 'x402.create_data_file_upload_url', price: '0.001', appId: siteId });
    expect(await balance()).toBe(before - 1000n);
    const put = await fetch(up.body.upload.url, { method: 'PUT', headers: up.body.upload.headers, body: new Uint8Array(bytes) });
    expect(put.status).toBe(200);

    before = await balance();
    const conv = await call('POST', `/api/x402/apps/${siteId}/data-files/convert`, {
      key: up.body.key,
      fileName: 'cities.csv',
      uploadToken: up.body.uploadToken,
    });
    expect(conv.status).toBe(200);
    expect(conv.body.asset).toMatchObject({ slug: 'cities', recordCount: 5, format: 'csv' });
    expect(conv.body.receipt).toMatchObject({ action: 'x402.convert_data_file_to_api', price: '0.01' });
    expect(await balance()).toBe(before - 10_000n);
    const rows = await (await fetch(`${conv.body.asset.pathUrl}?field=country&value=FR&sortField=name`)).json();
    expect(rows.records.map((r: { fields: { name: string } }) => r.fields.name)).toEqual(['Lyon', 'Paris']);

    // A file that fails to parse: 400 with row/line, nothing loaded, no settlement.
    const bad = Buffer.from('a,b\n1,2\n3\n');
    const up2 = await call('POST', `/api/x402/apps/${siteId}/data-files/upload-url`, { fileName: 'bad.csv', fileSize: bad.length });
    await fetch(up2.body.upload.url, { method: 'PUT', headers: up2.body.upload.headers, body: new Uint8Array(bad) });
    before = await balance();
    const failed = await call('POST', `/api/x402/apps/${siteId}/data-files/convert`, { key: up2.body.key, fileName: 'bad.csv' });
    expect(failed.status).toBe(400);
    expect(failed.body.error).toMatchObject({ code: 'data_file_invalid', details: { row: 2, line: 3 } });
    expect(await balance()).toBe(before);
    expect((await fetch(`${h.url}/api/data/${app.body.app.appName}/bad`)).status).toBe(404);

    // Deleting the app removes the dataset and its files.
    const del = await call('DELETE', `/api/x402/apps/${siteId}`);
    expect(del.status).toBe(200);
    expect((await fetch(conv.body.asset.pathUrl)).status).toBe(404);
    expect(await h.deps.blobs.list(`sites/${siteId}/`)).toEqual([]);
  });
});
