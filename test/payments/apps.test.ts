import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PrivateKeyAccount } from 'viem/accounts';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { fundedWallet, html, jsonInit, paidCaller, payV1, payV2 } from './helpers.js';

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('rest-of-a-png-file')]);

describe.each(dbKinds())('Agent API apps, files and uploads (%s)', (kind) => {
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

  it('free discovery: describe_api lists the 20 actions with the spec fields; pricing matches; suggest_site_name is free and available', async () => {
    const doc = await (await fetch(`${h.url}/api/x402`)).json();
    // The spec's fields, plus (development mode only) the dev chain's rpcUrl, and who signs receipts.
    expect(Object.keys(doc).sort()).toEqual(
      ['currency', 'endpoints', 'network', 'ok', 'payment', 'pricingUpdatedAt', 'purpose', 'receiptSigner', 'recipient', 'rpcUrl', 'service'].sort(),
    );
    expect(doc.rpcUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(doc).toMatchObject({ ok: true, network: 'eip155:8453', currency: 'USDC' });
    expect(doc.endpoints).toHaveLength(20);
    for (const e of doc.endpoints) {
      expect(Object.keys(e).sort()).toEqual(['action', 'description', 'input', 'inputSchema', 'method', 'output', 'path', 'price', 'priceUpdatedAt'].sort());
      expect(e.inputSchema.type).toBe('object');
    }
    const create = doc.endpoints.find((e: { action: string }) => e.action === 'x402.create_app_from_html');
    expect(create).toMatchObject({ method: 'POST', path: '/api/x402/apps', price: '0.007' });
    expect(create.inputSchema.required).toEqual(['name', 'html']);
    const pricing = await (await fetch(`${h.url}/api/x402/pricing`)).json();
    expect(pricing.pricing.map((p: { action: string; price: string }) => [p.action, p.price])).toEqual(
      doc.endpoints.map((e: { action: string; price: string }) => [e.action, e.price]),
    );
    const name = await (await fetch(`${h.url}/api/x402/name`)).json();
    expect(name.name).toMatch(/^[a-z0-9-]+$/);
    const taken = await call('POST', '/api/x402/apps', { name: name.name, html: html('n') });
    expect(taken.status).toBe(201);
  });

  it('create → update file → private with password → unpublish → publish → delete, each visible to a second client', async () => {
    const created = await call('POST', '/api/x402/apps', { name: `life-${kind}`, html: html('Life') });
    expect(created.status).toBe(201);
    const id = created.body.app.appId;
    const site = `${h.url}/s/life-${kind}/`;

    const file = await call('POST', `/api/x402/apps/${id}/files`, { path: 'css/site.css', content: 'body{color:red}' });
    expect(file.status).toBe(200);
    expect(file.body.app.status).toBe('updated');
    expect(file.body.receipt.price).toBe('0.003');
    const css = await fetch(`${site}css/site.css`);
    expect(css.headers.get('content-type')).toContain('text/css');
    expect(await css.text()).toBe('body{color:red}');

    const meta = await call('PATCH', `/api/x402/apps/${id}`, { password: 'open sesame' });
    expect(meta.body.app).toMatchObject({ status: 'updated', visibility: 'private' });
    expect(meta.body.receipt.visibility).toBe('private');
    expect((await fetch(site)).status).toBe(401);
    const pub = await call('PATCH', `/api/x402/apps/${id}`, { visibility: 'public' });
    expect(pub.body.app.visibility).toBe('public');
    expect((await fetch(site)).status).toBe(200);

    const off = await call('POST', `/api/x402/apps/${id}/unpublish`);
    expect(off.body.app).toMatchObject({ status: 'updated', published: false });
    expect((await fetch(site)).status).toBe(404);
    const on = await call('POST', `/api/x402/apps/${id}/publish`);
    expect(on.body.app).toMatchObject({ status: 'published', published: true });
    expect((await fetch(site)).status).toBe(200);

    const listed = await call('GET', '/api/x402/apps');
    expect(listed.body.apps.find((a: { appId: string }) => a.appId === id)).toMatchObject({ status: 'published', fileCount: 2, hasPassword: false });

    const del = await call('DELETE', `/api/x402/apps/${id}`);
    expect(del.body.app).toMatchObject({ appId: id, status: 'deleted' });
    expect(del.body.receipt).toMatchObject({ appId: id, appName: `life-${kind}`, price: '0.001' });
    expect((await fetch(site)).status).toBe(404);
    expect((await call('GET', '/api/x402/apps')).body.apps.find((a: { appId: string }) => a.appId === id)).toBeUndefined();
    const gone = await call('POST', `/api/x402/apps/${id}/publish`);
    expect(gone.status).toBe(404);
  });

  it('CORS lets browsers send both payment headers and read the answers', async () => {
    const pre = await fetch(`${h.url}/api/x402/apps`, {
      method: 'OPTIONS',
      headers: {
        origin: 'http://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'x-payment,payment-signature,access-control-expose-headers,idempotency-key',
      },
    });
    const allowed = (pre.headers.get('access-control-allow-headers') ?? '').toLowerCase();
    for (const h of ['x-payment', 'payment-signature', 'access-control-expose-headers', 'idempotency-key']) expect(allowed).toContain(h);
    const res = await fetch(`${h.url}/api/x402/apps`, { headers: { origin: 'http://app.example' } });
    expect(res.status).toBe(402);
    const exposed = (res.headers.get('access-control-expose-headers') ?? '').toLowerCase();
    for (const h of ['x-payment-response', 'payment-response', 'payment-required']) expect(exposed).toContain(h);
  });

  it('delete_app removes the app with its data assets (a Table made through the Agent API stops answering)', async () => {
    const created = await call('POST', '/api/x402/apps', { name: `withdata-${kind}`, html: html('Data') });
    const id = created.body.app.appId;
    const table = await call('POST', `/api/x402/apps/${id}/tables`, { name: 'Notes', schema: { fields: [{ name: 'title', label: 'Title', type: 'string' }] } });
    expect(table.status).toBe(201);
    expect(table.body.receipt).toMatchObject({ action: 'x402.create_table_api', price: '0.008', appId: id });
    const inserted = await call('POST', `/api/x402/tables/${table.body.table.id}/records`, { records: [{ title: 'kept?' }] });
    expect(inserted.body.inserted).toBe(1);
    const before = await fetch(table.body.table.pathUrl);
    expect(before.status).toBe(200);
    expect((await before.json()).records).toHaveLength(1);

    expect((await call('DELETE', `/api/x402/apps/${id}`)).body.app.status).toBe('deleted');
    expect((await fetch(table.body.table.pathUrl)).status).toBe(404);
    expect((await call('POST', `/api/x402/tables/${table.body.table.id}/records`, { records: [{ title: 'x' }] })).status).toBe(404);
  });

  it('a taken name is a free 409 with a suggestion', async () => {
    await call('POST', '/api/x402/apps', { name: `dup-${kind}`, html: html('a') });
    const other = await fundedWallet(h, 0n); // unfunded: a charge could not even happen
    const res = await payV1(other)(`${h.url}/api/x402/apps`, jsonInit('POST', { name: `dup-${kind}`, html: html('b') }));
    expect(res.status).toBe(409);
    const body = await res.json();
    expect(body.error.code).toBe('slug_taken');
    expect(body.error.details.suggestion).toMatch(new RegExp(`^dup-${kind}-`));
  });

  it('upload URLs: real signed PUTs, finalize checks sizes and types against what arrived, then the files are served (the app named by its name)', async () => {
    const created = await call('POST', '/api/x402/apps', { name: `up-${kind}`, html: html('Up') });
    expect(created.status).toBe(201);
    // Every app route takes the app's name as well as its id (appName in results).
    const id = created.body.app.appName;
    const page = Buffer.from(html('Uploaded page'));
    const urls = await call('POST', `/api/x402/apps/${id}/upload-urls`, {
      files: [
        { path: 'img/logo.png', size: PNG.length, type: 'image/png' },
        { path: 'home.html', size: page.length, type: 'text/html' },
      ],
    });
    expect(urls.status).toBe(200);
    expect(urls.body.receipt.price).toBe('0.001');
    expect(urls.body.files).toHaveLength(2);
    const [logo, home] = urls.body.files;
    expect(logo).toMatchObject({ path: 'img/logo.png', size: PNG.length, type: 'image/png', method: 'PUT' });

    // The signed URL only takes the announced size and type.
    const wrongSize = await fetch(logo.uploadUrl, { method: 'PUT', headers: logo.headers, body: Buffer.concat([PNG, Buffer.from('x')]) });
    expect(wrongSize.status).toBe(413);
    const wrongType = await fetch(logo.uploadUrl, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: PNG });
    expect(wrongType.status).toBe(400);

    // Finalize before the bytes arrived: a free 400.
    const early = await call('POST', `/api/x402/apps/${id}/upload-urls/finalize`, {
      uploadToken: urls.body.uploadToken,
      entryPoint: 'home.html',
      files: [{ path: 'img/logo.png', size: PNG.length }],
    });
    expect(early.status).toBe(400);
    expect(early.body.error).toMatchObject({ code: 'not_uploaded', message: expect.stringContaining('img/logo.png has not been uploaded; PUT each') });

    expect((await fetch(logo.uploadUrl, { method: 'PUT', headers: logo.headers, body: PNG })).status).toBe(200);
    expect((await fetch(home.uploadUrl, { method: 'PUT', headers: home.headers, body: page })).status).toBe(200);

    const sizeLie = await call('POST', `/api/x402/apps/${id}/upload-urls/finalize`, {
      uploadToken: urls.body.uploadToken,
      entryPoint: 'home.html',
      files: [{ path: 'img/logo.png', size: PNG.length + 1 }],
    });
    expect(sizeLie.status).toBe(400);
    const unknown = await call('POST', `/api/x402/apps/${id}/upload-urls/finalize`, {
      uploadToken: `${urls.body.uploadToken}x`,
      entryPoint: 'home.html',
      files: [{ path: 'img/logo.png', size: PNG.length }],
    });
    expect(unknown.status).toBe(400);

    const done = await call('POST', `/api/x402/apps/${id}/upload-urls/finalize`, {
      uploadToken: urls.body.uploadToken,
      entryPoint: 'home.html',
      files: [
        { path: 'img/logo.png', size: PNG.length },
        { path: 'home.html', size: page.length },
      ],
    });
    expect(done.status).toBe(200);
    expect(done.body.app.status).toBe('updated');
    const served = await fetch(`${h.url}/s/up-${kind}/img/logo.png`);
    expect(served.headers.get('content-type')).toContain('image/png');
    expect(Buffer.from(await served.arrayBuffer()).equals(PNG)).toBe(true);
    expect(await (await fetch(`${h.url}/s/up-${kind}/`)).text()).toContain('Uploaded page');
  });

  it('finalize refuses bytes that are not the announced type', async () => {
    const created = await call('POST', '/api/x402/apps', { name: `liar-${kind}`, html: html('L') });
    const id = created.body.app.appId;
    const notPng = Buffer.from('this is not a png at all');
    const urls = await call('POST', `/api/x402/apps/${id}/upload-urls`, { files: [{ path: 'fake.png', size: notPng.length, type: 'image/png' }] });
    const [f] = urls.body.files;
    expect((await fetch(f.uploadUrl, { method: 'PUT', headers: f.headers, body: notPng })).status).toBe(200);
    const res = await call('POST', `/api/x402/apps/${id}/upload-urls/finalize`, {
      uploadToken: urls.body.uploadToken,
      entryPoint: 'index.html',
      files: [{ path: 'fake.png', size: notPng.length }],
    });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain('not image/png');
    expect((await fetch(`${h.url}/s/liar-${kind}/fake.png`)).status).toBe(404);
  });
});
