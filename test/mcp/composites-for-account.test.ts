import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { call, connectHttp, text } from './helpers.js';

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');

// svc-mcp given a personal key and no wallet: deploy_site publishes a folder and upload_dataset converts a
// file for the account, free, through the Account API (a user with an account and no USDC could do neither before).
describe.each(dbKinds())('deploy_site and upload_dataset for the account, without a wallet (%s)', (kind) => {
  let h: Harness;
  let dir: string;
  beforeAll(async () => {
    // Data files over 5 MiB go in parts of 5 MiB (the smallest the store takes), so a test file of 6 MB is multipart.
    h = await startHarness(kind, { SVC_DATASET_MULTIPART_THRESHOLD_BYTES: String(5 * 1024 * 1024), SVC_DATASET_PART_BYTES: String(5 * 1024 * 1024) });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-deploy-account-'));
  });
  afterAll(async () => {
    await h?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  function folder(name: string, files: Record<string, string | Buffer>): string {
    const root = path.join(dir, name);
    for (const [p, content] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(root, p)), { recursive: true });
      fs.writeFileSync(path.join(root, p), content);
    }
    return root;
  }
  const served = async (url: string) => {
    const res = await fetch(url);
    return { status: res.status, type: res.headers.get('content-type'), bytes: Buffer.from(await res.arrayBuffer()) };
  };

  it('publishes a folder as a new app of the account, in as many requests as its size needs, then updates it by appId', async () => {
    const { key } = await h.account();
    const s = await connectHttp({ SVC_URL: h.url, SVC_API_KEY: key, SVC_SPEND_LEDGER: path.join(dir, 'ledger.json') });
    try {
      expect(s.client.getInstructions()).toMatch(/No wallet is configured: the tools act as the account of SVC_API_KEY, free/);
      const names = (await s.client.listTools()).tools.map((t) => t.name);
      // The wallet's tools are not listed (none can pay); a call names the account's tool instead.
      expect(names).not.toContain('create_table_api');
      expect(text(await call(s.client, 'create_table_api', { appId: 'x', name: 't', schema: { fields: [] } }))).toBe(
        'create_table_api acts as a wallet (it pays, or signs as the owner), and this server has a personal key but no wallet: account_create_table does this for the account, free.',
      );
      expect(text(await call(s.client, 'publish_app', { appId: 'x' }))).toMatch(
        /^publish_app acts as a wallet .*nothing does it for the account\. Ask the user to give the MCP server a wallet/,
      );
      const listed = (await s.client.listTools()).tools.find((t) => t.name === 'deploy_site')!;
      expect(listed.description).toMatch(/for the account \(SVC_API_KEY\), free/);
      expect(Object.keys(listed.inputSchema.properties ?? {})).not.toContain('entryPoint');
      // Two 600 KB scripts: more than one request carries (the service takes 1 MiB of JSON).
      const big = (c: string) => `// ${c}\n${c.repeat(600 * 1024)}`;
      const root = folder('site', {
        'index.html': '<h1>Account site</h1>',
        'css/site.css': 'h1{color:teal}',
        'pixel.png': PNG,
        'a.js': big('a'),
        'b.js': big('b'),
        '.env': 'SECRET=1',
      });
      const progress: string[] = [];
      const r = await s.client.callTool({ name: 'deploy_site', arguments: { folder: root, appName: `acct-site-${kind}` } }, undefined, {
        onprogress: (p) => {
          progress.push(p.message ?? '');
        },
      });
      expect(r.isError, text(r)).toBeFalsy();
      const out = r.structuredContent as { appId: string; appName: string; url: string; pathUrl: string; files: number; paid: string };
      expect(out).toMatchObject({ appName: `acct-site-${kind}`, files: 5, paid: '0' });
      expect(text(r)).toMatch(/^Deployed 5 files for the account, free; live at /);
      expect(progress.length).toBeGreaterThanOrEqual(2);
      // The account's app, not a wallet's.
      const mine = await (await h.fetch('/api/v1/sites', { key })).json();
      expect(mine.sites.map((x: { slug: string; fileCount: number }) => [x.slug, x.fileCount])).toEqual([[`acct-site-${kind}`, 5]]);
      expect((await served(out.pathUrl)).bytes.toString()).toBe('<h1>Account site</h1>');
      const png = await served(`${out.pathUrl}pixel.png`);
      expect([png.type, png.bytes.equals(PNG)]).toEqual(['image/png', true]);
      expect((await served(`${out.pathUrl}b.js`)).bytes.toString()).toBe(big('b'));
      expect((await served(`${out.pathUrl}.env`)).status).toBe(404);

      const update = await call(s.client, 'deploy_site', { appId: out.appName, files: [{ path: 'index.html', content: '<h1>v2</h1>' }] });
      expect(update.isError, text(update)).toBeFalsy();
      expect((await served(out.pathUrl)).bytes.toString()).toBe('<h1>v2</h1>');
      expect((await served(`${out.pathUrl}css/site.css`)).bytes.toString()).toBe('h1{color:teal}');
    } finally {
      await s.close();
    }
  });

  it('upload_dataset turns a local file into a dataset of the account, inline or (larger) by upload URL, free; a bad one keeps nothing', async () => {
    const { key } = await h.account();
    const s = await connectHttp({ SVC_URL: h.url, SVC_API_KEY: key, SVC_SPEND_LEDGER: path.join(dir, 'ledger4.json') });
    try {
      const listed = (await s.client.listTools()).tools.find((t) => t.name === 'upload_dataset')!;
      expect(listed.description).toMatch(/on an app of the account \(SVC_API_KEY\), free/);
      const made = await call(s.client, 'deploy_site', { appName: `data-${kind}`, files: [{ path: 'index.html', content: '<p>data</p>' }] });
      expect(made.isError, text(made)).toBeFalsy();
      const csv = path.join(dir, `prices-${kind}.csv`);
      fs.writeFileSync(csv, 'item,price\ntea,3\ncake,5\n');
      const up = await call(s.client, 'upload_dataset', { appId: `data-${kind}`, file: csv });
      expect(up.isError, text(up)).toBeFalsy();
      expect(up.structuredContent).toMatchObject({
        appName: `data-${kind}`,
        table: `prices-${kind}`,
        paid: '0',
        dataset: { datasetId: expect.stringMatching(/^ds_/), recordCount: 2 },
      });
      expect(text(up)).toMatch(/^Dataset ready at .*; table_query reads it \(appName data-\w+, table prices-\w+\)\. Free\./);
      const q = await call(s.client, 'table_query', { appName: `data-${kind}`, table: `prices-${kind}`, sort: '-price' });
      expect(q.structuredContent).toMatchObject({ records: [{ fields: { item: 'cake' } }, { fields: { item: 'tea' } }] });

      // Larger than one request carries: by the account's upload URL, one PUT or (over 5 MiB here) in parts, still free.
      // (Rows of 100 bytes: as few as the sizes allow, PGlite converting a few million rows is slow.)
      for (const [rows, strategy] of [
        [12_000, 'single'],
        [66_000, 'multipart'],
      ] as const) {
        const big = path.join(dir, `big-${strategy}.csv`);
        fs.writeFileSync(big, `a\n${`${'x'.repeat(99)}\n`.repeat(rows)}`);
        const large = await call(s.client, 'upload_dataset', { appId: `data-${kind}`, file: big });
        expect(large.structuredContent, text(large)).toMatchObject({ strategy, paid: '0', dataset: { recordCount: rows, slug: `big-${strategy}` } });
        expect(text(large)).toMatch(/\. Free\.\n/);
      }
      const bad = await call(s.client, 'upload_dataset', { appId: `data-${kind}`, content: 'a,b\n1,2\n"open,3\n', fileName: 'bad.csv' });
      expect(text(bad)).toMatch(/^upload_dataset stopped: account_create_dataset failed: bad\.csv \(CSV\) could not be converted: .* Nothing was kept\.$/);
      const datasets = await (await h.fetch(`/api/v1/sites/data-${kind}/datasets`, { key })).json();
      expect(datasets.datasets.map((d: { slug: string }) => d.slug)).toEqual([`prices-${kind}`, 'big-single', 'big-multipart']);
    } finally {
      await s.close();
    }
  });

  it('a private app; files no request carries go by upload URL; refused before anything is sent: such an index.html, an entry point other than index.html', async () => {
    const { key } = await h.account();
    const s = await connectHttp({ SVC_URL: h.url, SVC_API_KEY: key, SVC_SPEND_LEDGER: path.join(dir, 'ledger2.json') });
    try {
      const priv = await call(s.client, 'deploy_site', { files: [{ path: 'index.html', content: '<p>secret</p>' }], password: 'open sesame' });
      expect(priv.isError, text(priv)).toBeFalsy();
      expect((await served((priv.structuredContent as { pathUrl: string }).pathUrl)).status).toBe(401);

      // Files no request carries go by upload URL, PUT, finalize: still free, served byte for byte.
      const photo = Buffer.concat([PNG, Buffer.alloc(1024 * 1024, 7)]);
      const video = Buffer.alloc(1024 * 1024, 9);
      const huge = folder('huge', { 'index.html': '<img src="photo.png">', 'photo.png': photo, 'video.bin': video, 'a.css': 'p{}' });
      const big = await call(s.client, 'deploy_site', { folder: huge });
      expect(big.structuredContent, text(big)).toMatchObject({ files: 4, paid: '0' });
      const at = (big.structuredContent as { pathUrl: string }).pathUrl;
      expect((await served(`${at}photo.png`)).bytes).toEqual(photo);
      expect((await served(`${at}video.bin`)).bytes).toEqual(video);
      expect((await served(`${at}a.css`)).bytes.toString()).toBe('p{}');
      // An update whose only other file is one of them (a deploy always carries its index.html).
      const again = await call(s.client, 'deploy_site', {
        appId: (big.structuredContent as { appName: string }).appName,
        files: [
          { path: 'index.html', content: '<video src="video.bin">' },
          { path: 'video.bin', contentBase64: photo.toString('base64') },
        ],
      });
      expect(again.isError, text(again)).toBeFalsy();
      expect((await served(`${at}video.bin`)).bytes).toEqual(photo);
      // But a new app is published from its index.html, which must fit in that request.
      expect(text(await call(s.client, 'deploy_site', { files: [{ path: 'index.html', content: `<p>${'x'.repeat(1_000_000)}</p>` }] }))).toBe(
        'deploy_site: index.html does not fit in one Account API request (983,040 bytes of JSON), and a new app is published from it. Nothing was sent.',
      );
      expect(text(await call(s.client, 'deploy_site', { files: [{ path: 'home.html', content: '<p>x</p>' }], entryPoint: 'home.html' }))).toMatch(
        /^deploy_site has no argument entryPoint/,
      );
      expect(text(await call(s.client, 'deploy_site', { files: [{ path: 'home.html', content: '<p>x</p>' }] }))).toMatch(
        /^deploy_site: the entry point index\.html is not among the files/,
      );
      // The private app and the one of large files: the refusals made none.
      const sites = await (await h.fetch('/api/v1/sites', { key })).json();
      expect(sites.total).toBe(2);
      // Its quote says so too (the wallet toolset is not listed by default here).
      const withQuote = await connectHttp({
        SVC_URL: h.url,
        SVC_API_KEY: key,
        SVC_TOOLSETS: 'default,wallet',
        SVC_SPEND_LEDGER: path.join(dir, 'ledger3.json'),
      });
      try {
        const q = await call(withQuote.client, 'quote', { tool: 'deploy_site', args: { files: [{ path: 'index.html', content: '<p>x</p>' }] } });
        expect(q.structuredContent).toMatchObject({ quotes: [{ tool: 'deploy_site', price: '0', allowed: true, refusal: null }] });
        const dataset = await call(withQuote.client, 'quote', { tool: 'upload_dataset' });
        expect(dataset.structuredContent).toMatchObject({ quotes: [{ tool: 'upload_dataset', price: '0', allowed: true, steps: ['account_create_dataset'] }] });
      } finally {
        await withQuote.close();
      }
      // A failure of the service is said in deploy_site's words; nothing was published.
      const taken = await call(s.client, 'deploy_site', {
        appName: (priv.structuredContent as { appName: string }).appName,
        files: [{ path: 'index.html', content: '<p>again</p>' }],
      });
      expect(text(taken)).toMatch(/^deploy_site stopped: account_publish_app failed: .*taken.* Nothing was published\.$/);
    } finally {
      await s.close();
    }
  });
});
