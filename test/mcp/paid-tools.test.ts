import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentHandlers } from '../../service/agent-handlers.js';
import type { DevFacilitator } from '../../service/payments/facilitator.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { getWithHost } from '../helpers/host-request.js';
import { call, connectHttp, connectStdio, text } from './helpers.js';

const PNG_1X1 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const PRICE = 7000n; // create_app_from_html, atomic USDC
let n = 0;
const uniqueName = (p: string) => `${p}-${Date.now().toString(36)}-${++n}`;

/** GET a site URL the way a browser would, through the harness's loopback port with the site's Host. */
async function visit(h: Harness, siteUrl: string, file = '') {
  const u = new URL(siteUrl);
  return getWithHost(`${h.url}${u.pathname}${file}`, u.host);
}

describe.each(dbKinds())('MCP tools paying on the dev chain (%s)', (kind) => {
  let h: Harness;
  let chain: DevFacilitator;
  let dir: string;
  const key = generatePrivateKey();
  const payer = privateKeyToAccount(key).address;
  let recipient: string;
  let stdio: Awaited<ReturnType<typeof connectStdio>>;
  const baseEnv = () => ({ SVC_URL: h.url, SVC_WALLET_PRIVATE_KEY: key, SVC_RPC_URL: chain.rpcUrl });
  const ledger = (name: string) => path.join(dir, `${name}.json`);
  const balances = async () => ({ payer: await chain.balanceOf(payer), recipient: await chain.balanceOf(recipient) });

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-mcp-paid-'));
    // Small multipart threshold (the service's minimum, 5 MiB) so upload_dataset's multipart path runs.
    h = await startHarness(kind, { SVC_DATASET_MULTIPART_THRESHOLD_BYTES: String(5 * 1024 * 1024), SVC_DATASET_PART_BYTES: String(5 * 1024 * 1024) });
    chain = h.deps.facilitator as DevFacilitator;
    expect(chain.kind).toBe('dev');
    await chain.mint(payer, 1_000_000n); // 1 USDC; starts the dev chain
    recipient = h.config.x402.recipient;
    stdio = await connectStdio({ ...baseEnv(), SVC_SPEND_LEDGER: ledger('stdio') });
  });
  afterAll(async () => {
    await stdio?.close();
    await h?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('create_app_from_html over stdio pays 0.007 USDC on chain, returns the receipt, and the app is served', async () => {
    const before = await balances();
    const name = uniqueName('stdio-app');
    const r = await call(stdio, 'create_app_from_html', { appName: name, html: '<!doctype html><h1>made by an agent</h1>' });
    expect(r.isError, text(r)).toBeFalsy();
    const out = r.structuredContent as {
      app: { appId: string; appName: string; url: string; pathUrl: string };
      receiptId: string;
      paid: string;
    };
    expect(out.app.appName).toBe(name);
    expect(out.paid).toBe('0.007');
    expect(out.receiptId).toMatch(/\S/);
    const after = await balances();
    expect(before.payer - after.payer).toBe(PRICE);
    expect(after.recipient - before.recipient).toBe(PRICE);
    const served = await visit(h, out.app.url);
    expect(served.status).toBe(200);
    expect(served.body).toContain('made by an agent');

    const status = (await call(stdio, 'wallet_status')).structuredContent as { address: string; balance: string; spent: { session: string } };
    expect(status).toMatchObject({ address: payer, spent: { session: '0.007' } });
    expect(status.balance).toBe((Number(after.payer) / 1e6).toString());
    const receipts = (await call(stdio, 'list_receipts')).structuredContent as {
      receipts: { tool: string; status: string; receiptId: string; txHash: string }[];
    };
    expect(receipts.receipts[0]).toMatchObject({
      tool: 'create_app_from_html',
      status: 'committed',
      receiptId: out.receiptId,
      txHash: expect.stringMatching(/^0x/),
    });
    // The path form of the link resolves from a plain HTTP client.
    expect((await fetch(out.app.pathUrl)).status).toBe(200);
    // list_apps: free, the wallet proves itself with a zero-value signature.
    const apps = (await call(stdio, 'list_apps')).structuredContent as { apps: { appName: string }[] };
    expect(apps.apps.map((a) => a.appName)).toContain(name);
    expect((await balances()).payer).toBe(after.payer);
    // The server's own output (stderr; stdout is the protocol) names the address, never the key.
    expect(stdio.stderrText()).toContain(payer);
    expect(stdio.stderrText().toLowerCase()).not.toContain(key.slice(2).toLowerCase());
    for (const r of [out, status, receipts, apps]) expect(JSON.stringify(r).toLowerCase()).not.toContain(key.slice(2).toLowerCase());
  });

  it('deploy_site over streamable HTTP uploads several files, publishes, and the URL serves each, with progress', async () => {
    const s = await connectHttp({ ...baseEnv(), SVC_SPEND_LEDGER: ledger('deploy') });
    try {
      const before = await balances();
      const files = [
        { path: 'index.html', content: '<!doctype html><link rel="stylesheet" href="css/site.css"><h1>deployed</h1><script src="js/app.js"></script>' },
        { path: 'css/site.css', content: 'h1 { color: rebeccapurple; }' },
        { path: 'js/app.js', content: 'console.log("hi");' },
        { path: 'img/dot.png', contentBase64: PNG_1X1 },
      ];
      const name = uniqueName('deployed');
      const dry = await call(s.client, 'quote', { tool: 'deploy_site', args: { appName: name, files } });
      expect(dry.structuredContent).toMatchObject({
        quotes: [
          {
            tool: 'deploy_site',
            price: '0.011',
            allowed: true,
            steps: ['create_app_from_html', 'create_site_upload_urls', 'finalize_site_upload', 'publish_app'],
          },
        ],
      });
      expect(await balances()).toEqual(before);

      const progress: string[] = [];
      const r = (await s.client.callTool({ name: 'deploy_site', arguments: { appName: name, files } }, undefined, {
        onprogress: (p) => progress.push(p.message ?? ''),
      })) as { isError?: boolean; structuredContent?: Record<string, unknown> };
      expect(r.isError, text(r)).toBeFalsy();
      const out = r.structuredContent as { url: string; pathUrl: string; paid: string; receiptIds: unknown[] };
      expect(out.paid).toBe('0.011');
      expect(out.receiptIds).toHaveLength(4);
      expect((await fetch(out.pathUrl)).status).toBe(200);
      expect(progress).toContain('published');
      expect(progress.filter((m) => m.startsWith('uploaded '))).toHaveLength(4);
      expect(before.payer - (await balances()).payer).toBe(11_000n);
      expect((await visit(h, out.url)).body).toContain('<h1>deployed</h1>');
      const css = await visit(h, out.url, 'css/site.css');
      expect(css.status).toBe(200);
      expect(css.body).toBe('h1 { color: rebeccapurple; }');
      expect(css.headers['content-type']).toMatch(/text\/css/);
      expect((await visit(h, out.url, 'js/app.js')).body).toBe('console.log("hi");');
      const png = await visit(h, out.url, 'img/dot.png');
      expect(png.status).toBe(200);
      expect(png.headers['content-type']).toBe('image/png');

      // A local folder, into the same app (update: no create step).
      const folder = fs.mkdtempSync(path.join(dir, 'site-'));
      fs.writeFileSync(path.join(folder, 'index.html'), '<h1>v2 from a folder</h1>');
      fs.writeFileSync(path.join(folder, '.env'), 'SECRET=1');
      const appId = ((await call(s.client, 'list_apps')).structuredContent as { apps: { appId: string; appName: string }[] }).apps.find(
        (a) => a.appName === name,
      )!.appId;
      const again = await call(s.client, 'deploy_site', { appId, folder });
      expect(again.isError, text(again)).toBeFalsy();
      expect(again.structuredContent as { paid: string; files: number }).toMatchObject({ paid: '0.004', files: 1 });
      expect((await visit(h, out.url)).body).toContain('v2 from a folder');
      expect((await visit(h, out.url, '.env')).status).toBe(404);
    } finally {
      await s.close();
    }
  });

  it('deploy_site with files only picks a free name (as suggest_site_name would) and pays no more; appName with appId is refused free', async () => {
    const before = await balances();
    const files = [{ path: 'index.html', content: '<h1>named by the service</h1>' }];
    const both = await call(stdio, 'deploy_site', { appName: uniqueName('both'), appId: 'any', files });
    expect(both.isError).toBe(true);
    expect(text(both)).toBe('deploy_site takes appName (a new app) or appId (an existing app), not both. Nothing was done.');
    expect(await balances()).toEqual(before);
    // A file whose bytes are not what its name says: the service would refuse it on arrival, after the app was paid for.
    const mislabelled = await call(stdio, 'deploy_site', {
      appName: uniqueName('mislabelled'),
      files: [...files, { path: 'img/photo.png', contentBase64: Buffer.from('not a png').toString('base64') }],
    });
    expect([mislabelled.isError, text(mislabelled)]).toEqual([
      true,
      'deploy_site: img/photo.png is not image/png (its bytes do not match its extension or contentType). Nothing was done; fix the file or its name.',
    ]);
    expect(await balances()).toEqual(before);

    const quoted = await call(stdio, 'quote', { tool: 'deploy_site', args: { files } });
    expect(quoted.structuredContent).toMatchObject({ quotes: [{ price: '0.011', allowed: true }] });
    const r = await call(stdio, 'deploy_site', { files });
    expect(r.isError, text(r)).toBeFalsy();
    const out = r.structuredContent as { appName: string; url: string; paid: string };
    expect(out.appName).toMatch(/^[a-z0-9-]+$/);
    expect(out.paid).toBe('0.011');
    expect(before.payer - (await balances()).payer).toBe(11_000n);
    expect((await visit(h, out.url)).body).toContain('named by the service');
    const listed = await call(stdio, 'list_apps');
    const apps = listed.structuredContent as { apps: { appName: string }[] };
    expect(apps.apps.map((a) => a.appName)).toContain(out.appName);
    // A free read answers its JSON alone (no "list_apps done." before it).
    expect(text(listed)).toBe(JSON.stringify(listed.structuredContent));
  });

  it('an unfunded wallet is told, in dev mode, the faucet command for its own address; nothing is paid or counted', async () => {
    const empty = generatePrivateKey();
    const address = privateKeyToAccount(empty).address;
    const poor = await connectStdio({ ...baseEnv(), SVC_WALLET_PRIVATE_KEY: empty, SVC_SPEND_LEDGER: ledger('unfunded') });
    try {
      const r = await call(poor, 'create_app_from_html', { appName: uniqueName('poor'), html: '<h1>no funds</h1>' });
      expect(r.isError).toBe(true);
      expect(text(r)).toMatch(
        /^The service rejected the signed payment for x402\.create_app_from_html \(insufficient_funds\); it was not settled, so nothing was paid\./,
      );
      expect(text(r).toLowerCase()).toContain(`npm run svc -- faucet ${address.toLowerCase()} 5`);
      const status = (await call(poor, 'wallet_status')).structuredContent as { spent: { session: string; day: string } };
      expect(status.spent).toMatchObject({ session: '0', day: '0' });
      expect(await chain.balanceOf(address)).toBe(0n);
    } finally {
      await poor.close();
    }
  });

  it('deploy_site that fails at a step names the step and what was paid so far', async () => {
    const s = await connectHttp({ ...baseEnv(), SVC_SPEND_LEDGER: ledger('deploy-fail') });
    try {
      const before = await balances();
      const r = await call(s.client, 'deploy_site', { appId: 'no-such-app', files: [{ path: 'index.html', content: '<p>x</p>' }] });
      expect(r.isError).toBe(true);
      expect(text(r)).toMatch(/^deploy_site stopped at create_site_upload_urls: .*Paid so far in this deploy: 0 USDC\.$/s);
      expect(await balances()).toEqual(before);
    } finally {
      await s.close();
    }
  });

  it('a per-call cap below the price refuses before any signature leaves; no money moved', async () => {
    const s = await connectHttp({ ...baseEnv(), SVC_SPEND_LEDGER: ledger('percall'), SVC_MAX_USDC_PER_CALL: '0.005' });
    try {
      const before = await balances();
      const r = await call(s.client, 'create_app_from_html', { appName: uniqueName('capped'), html: '<p>x</p>' });
      expect(r.isError).toBe(true);
      expect(text(r)).toMatch(
        /Refused to pay 0\.007 USDC for x402\.create_app_from_html: the per-call cap is 0\.005 USDC\. Nothing was paid\. Ask the user to raise SVC_MAX_USDC_PER_CALL if this price is acceptable\.$/,
      );
      // A deploy whose first step is over the cap: quote says so (it said allowed, for the plan's total
      // of 0.011 within the day's headroom), and the deploy refuses the same before paying anything.
      const files = [{ path: 'index.html', content: '<p>x</p>' }];
      const quoted = await call(s.client, 'quote', { tool: 'deploy_site', args: { appName: uniqueName('capped'), files } });
      const refusal = 'Refused to pay 0.007 USDC for x402.create_app_from_html: the per-call cap is 0.005 USDC.';
      expect((quoted.structuredContent as { quotes: unknown[] }).quotes[0]).toMatchObject({
        tool: 'deploy_site',
        price: '0.011',
        allowed: false,
        refusal: expect.stringContaining(refusal),
      });
      const deployed = await call(s.client, 'deploy_site', { appName: uniqueName('capped'), files });
      expect(text(deployed)).toContain(refusal);
      // An update of an app (no create step: every step within 0.005) is quoted as allowed.
      const update = await call(s.client, 'quote', { tool: 'deploy_site', args: { appId: 'any-app', files } });
      expect((update.structuredContent as { quotes: unknown[] }).quotes[0]).toMatchObject({ price: '0.004', allowed: true, refusal: null });
      expect(await balances()).toEqual(before);
      expect(fs.existsSync(ledger('percall')) ? JSON.parse(fs.readFileSync(ledger('percall'), 'utf8')).entries : []).toEqual([]);
    } finally {
      await s.close();
    }
  });

  it('a session cap of N x price allows exactly N of 2N concurrent calls', async () => {
    const N = 3;
    const s = await connectHttp({ ...baseEnv(), SVC_SPEND_LEDGER: ledger('session'), SVC_MAX_USDC_PER_SESSION: '0.021' });
    try {
      const before = await balances();
      const results = await Promise.all(
        Array.from({ length: 2 * N }, (_, i) => call(s.client, 'create_app_from_html', { appName: uniqueName(`burst${i}`), html: '<p>x</p>' })),
      );
      const ok = results.filter((r) => !r.isError);
      const refused = results.filter((r) => r.isError);
      expect(ok).toHaveLength(N);
      expect(refused).toHaveLength(N);
      for (const r of refused) expect(text(r)).toMatch(/per-session cap is 0\.021 USDC/);
      expect(before.payer - (await balances()).payer).toBe(BigInt(N) * PRICE);
      expect((await call(s.client, 'wallet_status')).structuredContent).toMatchObject({ spent: { session: '0.021' }, headroom: { session: '0' } });
    } finally {
      await s.close();
    }
  });

  it('a daily cap holds across a restart (same ledger file)', async () => {
    const env = { ...baseEnv(), SVC_SPEND_LEDGER: ledger('daily'), SVC_MAX_USDC_PER_DAY: '0.014' };
    const first = await connectHttp(env);
    for (let i = 0; i < 2; i++)
      expect((await call(first.client, 'create_app_from_html', { appName: uniqueName('day'), html: '<p>x</p>' })).isError).toBeFalsy();
    await first.close();
    const second = await connectHttp(env); // a new process would do the same: a new session, the same file
    try {
      const before = await balances();
      const r = await call(second.client, 'create_app_from_html', { appName: uniqueName('day'), html: '<p>x</p>' });
      expect(r.isError).toBe(true);
      expect(text(r)).toMatch(/rolling 24-hour cap is 0\.014 USDC and 0 USDC of it is left/);
      expect(await balances()).toEqual(before);
      expect((await call(second.client, 'wallet_status')).structuredContent).toMatchObject({ spent: { session: '0', day: '0.014' } });
    } finally {
      await second.close();
    }
  });

  it("deploy_site's own cap (SVC_MAX_USDC_PER_TOOL) counts all its steps and refuses the plan it cannot take before any payment; other tools still pay", async () => {
    const s = await connectHttp({ ...baseEnv(), SVC_SPEND_LEDGER: ledger('per-tool'), SVC_MAX_USDC_PER_TOOL: 'deploy_site=0.02' });
    try {
      const files = [
        { path: 'index.html', content: '<h1>capped</h1><script src="app.js"></script>' },
        { path: 'app.js', content: 'console.log(1);' },
      ];
      const before = await balances();
      const first = await call(s.client, 'deploy_site', { appName: uniqueName('capped'), files });
      expect(first.isError, text(first)).toBeFalsy();
      expect((first.structuredContent as { paid: string }).paid).toBe('0.011');
      // 0.009 of deploy_site's 0.02 is left: a second new site (0.011) is refused whole, before its first step.
      const dry = await call(s.client, 'quote', { tool: 'deploy_site', args: { appName: uniqueName('capped'), files } });
      expect(dry.structuredContent).toMatchObject({ quotes: [{ price: '0.011', allowed: false, headroom: '0.009' }] });
      const second = await call(s.client, 'deploy_site', { appName: uniqueName('capped'), files });
      expect(second.isError).toBe(true);
      expect(text(second)).toContain(
        'Refused to pay 0.011 USDC for deploy_site (all steps together): the deploy_site rolling 24-hour cap is 0.02 USDC and 0.009 USDC of it is left. Nothing was paid.',
      );
      expect(text(second)).toContain('SVC_MAX_USDC_PER_TOOL');
      const other = await call(s.client, 'create_app_from_html', { appName: uniqueName('uncapped'), html: '<p>x</p>' });
      expect(other.isError, text(other)).toBeFalsy();
      const after = await balances();
      expect(before.payer - after.payer).toBe(11_000n + PRICE);
      expect(after.recipient - before.recipient).toBe(11_000n + PRICE);
      expect((await call(s.client, 'wallet_status')).structuredContent).toMatchObject({
        caps: { perTool: { deploy_site: '0.02' } },
        spent: { perTool: { deploy_site: '0.011' }, paidCallsLastHour: 5 },
        headroom: { perTool: { deploy_site: '0.009' } },
      });
    } finally {
      await s.close();
    }
  });

  it('a price drift is refused with the new price; accepting it with maxPrice pays', async () => {
    // This server quotes an old, lower price (as if the service raised it after the tools were listed).
    const s = await connectHttp({ ...baseEnv(), SVC_SPEND_LEDGER: ledger('drift') }, { tweak: (ctx) => ctx.prices.set('x402.create_app_from_html', '0.005') });
    try {
      const before = await balances();
      const name = uniqueName('drift');
      const r = await call(s.client, 'create_app_from_html', { appName: name, html: '<p>x</p>' });
      expect(r.isError).toBe(true);
      expect(text(r)).toMatch(/price changed from 0\.005 to 0\.007 USDC\. Nothing was paid/);
      expect(await balances()).toEqual(before);
      const ok = await call(s.client, 'create_app_from_html', { appName: name, html: '<p>x</p>', maxPrice: '0.007' });
      expect(ok.isError, text(ok)).toBeFalsy();
      expect(before.payer - (await balances()).payer).toBe(PRICE);
    } finally {
      await s.close();
    }
  });

  type Tamper = (a: Record<string, unknown>) => Record<string, unknown>;
  it.each<[string, Tamper, RegExp]>([
    ['another recipient', (a: Record<string, unknown>) => ({ ...a, payTo: privateKeyToAccount(generatePrivateKey()).address }), /recipient 0x/],
    ['another network', (a: Record<string, unknown>) => ({ ...a, network: 'base-sepolia' }), /network base-sepolia/],
  ])('a 402 naming %s (tampered in transit) is refused; no money moved', async (_n, tamper, why) => {
    const tampering: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (res.status !== 402) return res;
      const body = (await res.json()) as { accepts: Record<string, unknown>[] };
      return new Response(JSON.stringify({ ...body, accepts: body.accepts.map(tamper) }), { status: 402, headers: { 'content-type': 'application/json' } });
    };
    const s = await connectHttp({ ...baseEnv(), SVC_SPEND_LEDGER: ledger(`tamper-${n++}`) }, { fetch: tampering });
    try {
      const before = await balances();
      const r = await call(s.client, 'create_app_from_html', { appName: uniqueName('tamper'), html: '<p>x</p>' });
      expect(r.isError).toBe(true);
      expect(text(r)).toMatch(why);
      expect(text(r)).toMatch(/Nothing was signed or paid/);
      expect(await balances()).toEqual(before);
    } finally {
      await s.close();
    }
  });

  it('table tools: a Table created through create_table_api is read and written through the Table API', async () => {
    const s = await connectHttp({ ...baseEnv(), SVC_TOOLSETS: 'default,advanced', SVC_SPEND_LEDGER: ledger('tables') });
    try {
      const name = uniqueName('shop');
      expect((await call(s.client, 'create_app_from_html', { appName: name, html: '<p>shop</p>' })).isError).toBeFalsy();
      // Finalizing an upload whose bytes were never PUT: the arguments are right, the upload is missing.
      const urls = await call(s.client, 'create_site_upload_urls', { appId: name, files: [{ path: 'logo.png', size: 68, type: 'image/png' }] });
      expect(urls.isError, text(urls)).toBeFalsy();
      const early = await call(s.client, 'finalize_site_upload', {
        appId: name,
        uploadToken: (urls.structuredContent as { uploadToken: string }).uploadToken,
        entryPoint: 'index.html',
        files: [{ path: 'logo.png', size: 68 }],
      });
      expect([early.isError, text(early)]).toEqual([
        true,
        'finalize_site_upload failed: upload check failed: logo.png has not been uploaded; PUT each to its upload URL with the headers given, then finalize again [HTTP 400 not_uploaded]. Nothing was paid. Upload the bytes as the message says, then call again.',
      ]);
      const t = await call(s.client, 'create_table_api', {
        appId: name, // an app's name works wherever its id does
        name: 'Products',
        slug: 'products',
        schema: {
          fields: [
            { name: 'title', label: 'Title', type: 'string' },
            { name: 'price', label: 'Price', type: 'number' },
          ],
        },
      });
      expect(t.isError, text(t)).toBeFalsy();
      const { writeKey, tableId, ...table } = (t.structuredContent as { table: { writeKey: string; tableId: string } }).table;
      // The answer says what the table tools take, that this server keeps the key, and how the
      // app's pages reach the Table (its shape; no key in a page: this Table takes no public inserts).
      expect(text(t)).toMatch(
        new RegExp(
          `^create_table_api done\\. The table tools take appName ${name}, table products; this server remembers its write key\\. ` +
            `The app's pages reach it at /api/data/${name}/products: GET answers \\{"records": \\[\\{"id", "fields": \\{…\\}\\}\\]\\}; ` +
            'writes need the write key, and the write key must never be in a page\\. Paid 0\\.008 USDC',
        ),
      );
      // The Table's id is named as insert_table_records takes it.
      expect(tableId).toMatch(/^tbl_/);
      expect(table).not.toHaveProperty('id');
      const inserted = await call(s.client, 'insert_table_records', { tableId, records: [{ title: 'desk', price: 120 }] });
      expect(inserted.structuredContent, text(inserted)).toMatchObject({ inserted: 1, paid: '0.001' });
      const target = { appName: name, table: 'products' };
      // The key is kept beside the spend ledger (mode 0600), by the service's origin.
      const keysFile = path.join(dir, 'table-write-keys.json');
      expect(fs.statSync(keysFile).mode & 0o777).toBe(0o600);
      expect(JSON.parse(fs.readFileSync(keysFile, 'utf8')).keys[new URL(h.url).origin][`${name}/products`]).toBe(writeKey);
      // A server started later by the same user (a new session: same folder) writes without the key.
      const later = await connectHttp({ ...baseEnv(), SVC_SPEND_LEDGER: ledger('tables-later') });
      try {
        const kept = await call(later.client, 'table_create_record', { ...target, record: { title: 'stool', price: 9 } });
        expect(kept.isError, text(kept)).toBeFalsy();
        const id = (kept.structuredContent as { record: { id: string } }).record.id;
        expect((await call(later.client, 'table_delete_record', { ...target, recordId: id })).isError).toBeFalsy();
      } finally {
        await later.close();
      }
      // A remembered key the Table no longer takes (made again since by another owner, say) is forgotten
      // and the call asked again without it: a public read answers instead of "invalid write key".
      const kept = JSON.parse(fs.readFileSync(keysFile, 'utf8'));
      kept.keys[new URL(h.url).origin][`${name}/products`] = 'svc_tk_not-this-tables-key';
      fs.writeFileSync(keysFile, JSON.stringify(kept));
      const stale = await connectHttp({ ...baseEnv(), SVC_SPEND_LEDGER: ledger('tables-stale') });
      try {
        const read = await call(stale.client, 'table_query', { ...target, limit: 1 });
        expect(read.isError, text(read)).toBeFalsy();
        expect(JSON.parse(fs.readFileSync(keysFile, 'utf8')).keys[new URL(h.url).origin]).not.toHaveProperty(`${name}/products`);
      } finally {
        await stale.close();
      }
      // Another user's server (it did not create the Table, its keys are elsewhere) needs the key, and says so.
      const other = await connectHttp({
        SVC_URL: h.url,
        SVC_SPEND_LEDGER: ledger('tables-other'),
        SVC_TABLE_KEYS_FILE: path.join(dir, 'other-user', 'keys.json'),
      });
      try {
        const noKey = await call(other.client, 'table_create_record', { ...target, record: { title: 'x', price: 1 } });
        expect(noKey.isError).toBe(true);
        expect(text(noKey)).toMatch(/Pass the Table write key \(writeKey\), or ask the user to set SVC_TABLE_WRITE_KEY/);
        const withKey = await call(other.client, 'table_create_record', { ...target, record: { title: 'rug', price: 15 }, writeKey });
        expect(withKey.isError, text(withKey)).toBeFalsy();
        expect(
          (
            await call(other.client, 'table_delete_record', {
              ...target,
              recordId: (withKey.structuredContent as { record: { id: string } }).record.id,
              writeKey,
            })
          ).isError,
        ).toBeFalsy();
      } finally {
        await other.close();
      }
      // The server whose wallet created it remembers the key: no writeKey argument needed.
      const ids: string[] = [];
      for (const [title, price] of [
        ['lamp', 30],
        ['chair', 60],
      ] as const) {
        const c = await call(s.client, 'table_create_record', { ...target, record: { title, price } });
        expect(c.isError, text(c)).toBeFalsy();
        ids.push((c.structuredContent as { record: { id: string } }).record.id);
      }
      const desk = await call(s.client, 'table_query', { ...target, q: 'desk' });
      ids.splice(1, 0, (desk.structuredContent as { records: { id: string }[] }).records[0]!.id);
      // Each Table numbers its records from 1: desk came first, stool and rug (deleted) second and third.
      expect(ids).toEqual(['4', '1', '5']);
      const q = await call(s.client, 'table_query', { ...target, sort: '-price', limit: 2, includeTotal: true });
      expect(q.isError, text(q)).toBeFalsy();
      expect(q.structuredContent).toMatchObject({ total: 3, records: [{ fields: { title: 'desk' } }, { fields: { title: 'chair' } }] });
      const agg = await call(s.client, 'table_query', { ...target, aggregate: 'sum', aggregateField: 'price' });
      expect(agg.structuredContent).toMatchObject({ aggregate: 'sum', value: 210 });
      // A filter value written as a JSON number, as a model writes it.
      const numeric = await call(s.client, 'table_query', { ...target, where: [{ field: 'price', op: 'gte', value: 50 }], sort: 'price' });
      expect(numeric.isError, text(numeric)).toBeFalsy();
      expect(numeric.structuredContent).toMatchObject({ records: [{ fields: { title: 'chair' } }, { fields: { title: 'desk' } }] });
      expect((await call(s.client, 'table_update_record', { ...target, recordId: ids[0], fields: { price: 35 }, writeKey })).isError).toBeFalsy();
      expect((await call(s.client, 'table_get_record', { ...target, recordId: ids[0] })).structuredContent).toMatchObject({
        record: { fields: { title: 'lamp', price: 35 } },
      });
      // Record ids are numbers as text ("1"); the number itself is taken too, as a model often writes it.
      expect(ids[0]).toMatch(/^\d+$/);
      expect((await call(s.client, 'table_get_record', { ...target, recordId: Number(ids[0]) })).structuredContent).toMatchObject({
        record: { id: ids[0], fields: { title: 'lamp' } },
      });
      expect((await call(s.client, 'table_delete_record', { ...target, recordId: ids[1], writeKey })).structuredContent).toMatchObject({
        deleted: { id: ids[1] },
      });
      expect((await call(s.client, 'table_query', { ...target, q: 'desk' })).structuredContent).toMatchObject({ records: [] });
      const described = (await call(s.client, 'table_schema', target)).structuredContent;
      expect(described).toMatchObject({ tableId, schema: { fields: [{ name: 'title' }, { name: 'price' }] } });
      expect(described).not.toHaveProperty('id');
      const bad = await call(s.client, 'table_query', { ...target, sort: 'nope' });
      expect(bad.isError).toBe(true);
      expect(text(bad)).toMatch(/nope/);
      // A refusal names the argument as the tool takes it, once.
      const badWhere = text(await call(s.client, 'table_query', { ...target, where: [{ field: 'price', op: 'gte', value: 'cheap' }] }));
      expect(badWhere).toContain('where {field: "price", op: "gte"}: expected a number for field "price"');
      expect(badWhere).not.toContain('filter[');
      expect(badWhere.split('expected a number').length).toBe(2);
    } finally {
      await s.close();
    }
  });

  it("the wallet's app beside an account key: account tools say whose it is, a second deploy under its name says to pass it as appId, its Table answers", async () => {
    const s = await connectHttp({ ...baseEnv(), SVC_API_KEY: (await h.account()).key, SVC_TOOLSETS: 'default,account', SVC_SPEND_LEDGER: ledger('apart') });
    try {
      // The session holds two owners; its instructions say whose apps each set of tools sees.
      expect(s.client.getInstructions()).toMatch(
        /Apps the paid tools create belong to the wallet \(list_apps\); the account_\* tools see the account's apps only\.$/,
      );
      const name = uniqueName('walletapp');
      expect((await call(s.client, 'create_app_from_html', { appName: name, html: '<p>mine</p>' })).isError).toBeFalsy();
      const r = await call(s.client, 'account_list_tables', { appId: name });
      expect(r.isError).toBe(true);
      expect(text(r)).toBe(
        `account_list_tables failed: app ${name} not found in this account [HTTP 404 not_found]. account_list_apps lists the apps of this account; an app created with the wallet (list_apps lists those) belongs to the wallet and is managed with the wallet's tools (publish_app, create_table_api…).`,
      );
      expect((await call(s.client, 'publish_app', { appId: name })).structuredContent).toMatchObject({ app: { appName: name, status: 'published' } });
      // Deploying again under the app's name as appName (a new app) says how to update it instead.
      const files = [{ path: 'index.html', content: '<p>v2</p>' }];
      const taken = await call(s.client, 'deploy_site', { appName: name, files });
      expect(text(taken)).toMatch(
        /\[HTTP 409 slug_taken\]\. This step was not charged\. If it is your app \(list_apps\), update it instead: pass its name as appId \(deploy_site, update_app_file\)\. Otherwise take the suggested name\. Paid so far in this deploy: 0 USDC\.$/,
      );
      const updated = await call(s.client, 'deploy_site', { appId: name, files });
      expect(updated.structuredContent, text(updated)).toMatchObject({ appName: name, appId: expect.stringMatching(/^site_/), files: 1 });
      expect(await (await fetch(`${h.url}/s/${name}/`)).text()).toContain('<p>v2</p>');
      // The account's key (sent as the owner's credential) does not open the wallet's Table: its public
      // reads still answer, and its writes go with the write key this server learned.
      const schema = { fields: [{ name: 'title' }] };
      expect((await call(s.client, 'create_table_api', { appId: name, name: 'Notes', slug: 'notes', schema })).isError).toBeFalsy();
      const target = { appName: name, table: 'notes' };
      expect((await call(s.client, 'table_create_record', { ...target, record: { title: 'first' } })).isError).toBeFalsy();
      const byId = await call(s.client, 'table_query', { ...target, appName: (updated.structuredContent as { appId: string }).appId });
      expect(text(byId)).toMatch(
        /^table_query: appName is the app's name \(appName in results, the first label of its url\), not its id site_\w+\. Nothing was done\.$/,
      );
      const read = await call(s.client, 'table_query', target);
      expect(read.structuredContent, text(read)).toMatchObject({ records: [{ fields: { title: 'first' } }] });
      // A server of another user, with only an account key (none of this wallet's Table keys).
      const keyOnly = await connectHttp({
        SVC_URL: h.url,
        SVC_API_KEY: (await h.account()).key,
        SVC_SPEND_LEDGER: ledger('apart-key'),
        SVC_TABLE_KEYS_FILE: path.join(dir, 'key-only', 'keys.json'),
      });
      try {
        expect((await call(keyOnly.client, 'table_query', target)).structuredContent).toMatchObject({ records: [{ fields: { title: 'first' } }] });
        const write = await call(keyOnly.client, 'table_create_record', { ...target, record: { title: 'second' } });
        expect(text(write)).toMatch(
          /\[HTTP 401 unauthorized\]\. Nothing was changed\. Pass the Table write key \(writeKey\), or ask the user to set SVC_TABLE_WRITE_KEY\.$/,
        );
      } finally {
        await keyOnly.close();
      }
    } finally {
      await s.close();
    }
  });

  // Runs when the dataset Agent API handlers are registered in service/agent-handlers.ts (they are);
  // a deployment without them answers 503 and this test would be reported as skipped, never passed.
  const datasetsWired = Boolean((agentHandlers as Record<string, unknown>)['x402.convert_data_file_to_api']);
  it.skipIf(!datasetsWired)(
    'upload_dataset: inline CSV (single PUT) and a 5.5 MiB file (multipart) become Table APIs',
    async () => {
      const s = await connectHttp({ ...baseEnv(), SVC_SPEND_LEDGER: ledger('datasets'), SVC_MAX_USDC_PER_SESSION: '1' });
      try {
        const name = uniqueName('data');
        const app = (await call(s.client, 'create_app_from_html', { appName: name, html: '<p>data</p>' })).structuredContent as { app: { appId: string } };
        const before = await balances();
        const small = await call(s.client, 'upload_dataset', {
          appId: app.app.appId,
          content: 'city,population\nParis,2100000\nLyon,520000\n',
          fileName: 'cities.csv',
          slug: 'cities',
        });
        expect(small.isError, text(small)).toBeFalsy();
        expect(small.structuredContent).toMatchObject({
          strategy: 'single',
          paid: '0.011',
          dataset: { datasetId: expect.stringMatching(/^ds_/), slug: 'cities', recordCount: 2 },
        });
        expect(before.payer - (await balances()).payer).toBe(11_000n);
        // The result names what table_query takes.
        const { appName, table } = small.structuredContent as { appName: string; table: string };
        expect([appName, table]).toEqual([name, 'cities']);
        const q = await call(s.client, 'table_query', { appName, table, sort: 'population' });
        expect(q.structuredContent).toMatchObject({ records: [{ fields: { city: 'Lyon' } }, { fields: { city: 'Paris' } }] });
        // A dataset is read-only: a change says how its records change instead.
        const change = await call(s.client, 'table_update_record', { appName, table, recordId: '1', fields: { population: 1 } });
        expect(text(change)).toBe(
          'table_update_record failed: PATCH is not enabled for the dataset "cities" (enabled: GET) [HTTP 405 method_not_allowed]. Nothing was changed. A dataset (a converted data file) is read-only: to change its records, convert the changed file again with replaceExisting: true.',
        );
        // The same file again without a slug: a new dataset beside the first, and the result says how to replace instead.
        const again = await call(s.client, 'upload_dataset', { appId: name, content: 'city,population\nNice,340000\n', fileName: 'cities.csv' });
        expect(again.structuredContent, text(again)).toMatchObject({ table: 'cities-2', slugTaken: 'cities' });
        expect(text(again)).toContain(
          'table_query reads it (appName ' +
            name +
            ', table cities-2). cities existed, so this is a new dataset beside it (replaceExisting: true with slug cities replaces its data instead).',
        );
        const replaced = await call(s.client, 'upload_dataset', {
          appId: name,
          content: 'city,population\nNice,340000\n',
          fileName: 'cities.csv',
          slug: 'cities',
          replaceExisting: true,
        });
        expect(replaced.structuredContent, text(replaced)).toMatchObject({ table: 'cities', dataset: { recordCount: 1 } });
        expect(replaced.structuredContent).not.toHaveProperty('slugTaken');

        const file = path.join(dir, 'big.csv');
        const pad = 'x'.repeat(4000); // wide rows: few records, so conversion stays quick
        const rows = ['id,label,pad'];
        for (let i = 0, bytes = 12; bytes < 5.5 * 1024 * 1024; i++) {
          const row = `${i},row ${i},${pad}`;
          rows.push(row);
          bytes += row.length + 1;
        }
        fs.writeFileSync(file, rows.join('\n'));
        const big = await call(s.client, 'upload_dataset', { appId: app.app.appId, file, slug: 'big' });
        expect(big.isError, text(big)).toBeFalsy();
        expect(big.structuredContent).toMatchObject({ strategy: 'multipart', paid: '0.012', dataset: { slug: 'big', recordCount: rows.length - 1 } });
        const count = await call(s.client, 'table_query', { appName: name, table: 'big', aggregate: 'count' });
        expect(count.structuredContent).toMatchObject({ value: rows.length - 1 });

        // A file that cannot be converted: the upload URL was paid, the conversion was not; the
        // answer says which, and that the fix is the file.
        const beforeBad = await balances();
        const bad = await call(s.client, 'upload_dataset', { appId: app.app.appId, content: 'a,b\n1,2\n"open,3\n', fileName: 'bad.csv' });
        expect(bad.isError).toBe(true);
        expect(text(bad)).toMatch(
          /^upload_dataset stopped at convert_data_file_to_api: .*row \d+.*\[HTTP 400 data_file_invalid\]\. This step was not charged\. Fix the file where the message says, then upload it again\. Paid so far in this upload: 0\.001 USDC\.$/s,
        );
        expect(beforeBad.payer - (await balances()).payer).toBe(1_000n);
      } finally {
        await s.close();
      }
    },
    120_000,
  );
});
