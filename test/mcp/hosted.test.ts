import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { x402Client } from '@x402/core/client';
import { registerExactEvmScheme } from '@x402/evm/exact/client';
import type { PrivateKeyAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { mountHostedMcp } from '../../cli/hosted-mcp.js';
import { revokePersonalKey } from '../../service/accounts/personal-keys.js';
import { personalKeys } from '../../service/db/schema/index.js';
import { USDC_ADDRESS } from '../../shared/agent-api/network.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { devChain, fundedWallet, html } from '../payments/helpers.js';
import { annotationsOf } from '../../mcp/toolsets.js';
import { modelSize } from './helpers.js';

// The hosted endpoint {base}/mcp on the service's own port, driven by the official SDK client with a
// personal key, and paid through _meta by a real x402 signer (@x402/evm) on the dev chain.
let h: Harness;
let payer: PrivateKeyAccount;

beforeAll(async () => {
  h = await startHarness('pglite', { SVC_X402_MODE: 'dev' }, { mount: (app, deps) => mountHostedMcp(app, deps) });
  payer = await fundedWallet(h, 1_000_000n);
}, 120_000);
afterAll(async () => {
  await h?.close();
});

async function connect(key: string, query = ''): Promise<Client> {
  const client = new Client({ name: 'hosted-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${h.url}/mcp${query}`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  return client;
}
const call = async (client: Client, name: string, args: Record<string, unknown>, meta?: Record<string, unknown>) =>
  (await client.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) })) as CallToolResult;
const text = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

async function balance(address: string): Promise<bigint> {
  return devChain(h).balanceOf(address);
}

async function signPayment(required: unknown): Promise<Record<string, unknown>> {
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: payer as never });
  return (await client.createPaymentPayload(required as never)) as unknown as Record<string, unknown>;
}

describe('hosted MCP endpoint', () => {
  it('refuses a request without a credential with a 401 that points at its protected-resource metadata', async () => {
    const res = await fetch(`${h.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(res.status).toBe(401);
    const challenge = res.headers.get('www-authenticate') ?? '';
    expect(challenge).toContain(`resource_metadata="${h.url}/.well-known/oauth-protected-resource/mcp"`);
    const meta = await (await fetch(`${h.url}/.well-known/oauth-protected-resource/mcp`)).json();
    expect(meta).toMatchObject({ resource: `${h.url}/mcp`, authorization_servers: [h.url] });
  });

  it('answers a client in a browser page: preflights of both endpoints, and a 401 whose challenge the page can read', async () => {
    const origin = 'https://agent.example';
    for (const path of ['/mcp', '/mcp/x402']) {
      const preflight = await fetch(`${h.url}${path}`, {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type,mcp-protocol-version' },
      });
      expect(preflight.status, path).toBe(204);
      expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
      expect(preflight.headers.get('access-control-allow-methods')).toContain('POST');
      expect(preflight.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('mcp-protocol-version');
    }
    const refused = await fetch(`${h.url}/mcp`, { method: 'POST', headers: { origin, 'content-type': 'application/json' }, body: '{}' });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('access-control-allow-origin')).toBe('*');
    expect(refused.headers.get('access-control-expose-headers')?.toLowerCase()).toContain('www-authenticate');
    const ping = await fetch(`${h.url}/mcp/x402`, {
      method: 'POST',
      headers: { origin, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    expect([ping.status, ping.headers.get('access-control-allow-origin'), await ping.json()]).toEqual([200, '*', { jsonrpc: '2.0', id: 1, result: {} }]);
  });

  it('lists only the Account API tools the credential’s scopes allow, and acts as the account', async () => {
    const narrow = await h.account(['svc.sites.read']);
    const client = await connect(narrow.key);
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('account_list_apps');
    expect(names).not.toContain('account_publish_app');
    expect(names).not.toContain('function_create');
    const list = await call(client, 'account_list_apps', {});
    expect(list.isError).toBeFalsy();
    expect(list.structuredContent).toMatchObject({ ok: true, apps: [], total: 0 });
    // The wallet's tool names the account's, and the scope this sign-in lacks for it.
    expect(text(await call(client, 'create_app_from_html', { appName: 'x', html: '<p>x</p>' }))).toMatch(
      /^create_app_from_html is in the "apps" toolset, not turned on in this session: account_publish_app would do this for the account, free, but account_publish_app needs the scope svc\.publish, which this credential was not granted: sign in again granting it/,
    );
    await client.close();

    const full = await h.account();
    const fullClient = await connect(full.key);
    const published = await call(fullClient, 'account_publish_app', { requestId: 'r1', html: html('Hosted'), appName: 'hosted-one' });
    expect(published.isError, text(published)).toBeFalsy();
    const app = (published.structuredContent as { app: { appId: string; appName: string; pathUrl: string } }).app;
    expect(app.appName).toBe('hosted-one');
    const page = await fetch(app.pathUrl);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Hosted');
    // Another account cannot see it.
    const other = await connect((await h.account()).key);
    const miss = await call(other, 'account_get_app', { appId: app.appId });
    expect(miss.isError).toBe(true);
    expect(text(miss)).toMatch(/HTTP 404/);
    // A Table through the Account API tool, written and read through the table tools with the caller's key.
    const table = await call(fullClient, 'account_create_table', {
      appId: app.appId,
      name: 'Products',
      slug: 'products',
      schema: { fields: [{ name: 'title' }] },
    });
    expect(table.isError, text(table)).toBeFalsy();
    // In the tools' words: the Table's id as tableId, its app as appId (the service says id, siteId).
    expect(table.structuredContent).toMatchObject({ table: { slug: 'products', tableId: expect.stringMatching(/^tbl_/), appId: app.appId } });
    expect(JSON.stringify(table.structuredContent)).not.toMatch(/"(id|siteId)":/);
    // And how the app's pages reach it (no key in a page).
    expect(text(table).split('\n')[0]).toBe(
      'account_create_table done. The table tools take appName hosted-one, table products. The app\'s pages reach it at /api/data/hosted-one/products: GET answers {"records": [{"id", "fields": {…}}]}; writes need the write key, and the write key must never be in a page.',
    );
    const listed = (await call(fullClient, 'account_list_tables', { appId: 'hosted-one' })).structuredContent as { tables: Record<string, unknown>[] };
    expect(listed.tables).toEqual([expect.objectContaining({ slug: 'products', appId: app.appId })]);
    expect(listed.tables[0]).not.toHaveProperty('siteId');
    // A Table that takes public inserts: what the answer says a page does holds.
    const guestbook = await call(fullClient, 'account_create_table', {
      appId: app.appId,
      name: 'Notes',
      schema: { fields: [{ name: 'note' }] },
      publicInsert: true,
    });
    expect(text(guestbook)).toMatch(
      /The app's pages reach it at \/api\/data\/hosted-one\/notes: GET answers \{"records": \[\{"id", "fields": \{…\}\}\]\}; POST \{"record": \{…\}\} adds one, with no key \(publicInsert\)\.\n/,
    );
    const fromPage = await fetch(`${h.url}/api/data/hosted-one/notes`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"record": {"note": "hi"}}',
    });
    expect(fromPage.status).toBe(201);
    expect(await (await fetch(`${h.url}/api/data/hosted-one/notes`)).json()).toMatchObject({ records: [{ id: '1', fields: { note: 'hi' } }] });
    const row = await call(fullClient, 'table_create_record', { appName: 'hosted-one', table: 'products', record: { title: 'lamp' } });
    expect(row.isError, text(row)).toBeFalsy();
    expect((await call(fullClient, 'table_query', { appName: 'hosted-one', table: 'products' })).structuredContent).toMatchObject({
      records: [{ fields: { title: 'lamp' } }],
    });
    // Many at once: all or none, answered by their ids.
    const many = await call(fullClient, 'table_create_record', { appName: 'hosted-one', table: 'products', records: [{ title: 'desk' }, { title: 'chair' }] });
    expect(many.structuredContent).toEqual({ ok: true, inserted: 2, ids: ['2', '3'] });
    const bad = await call(fullClient, 'table_create_record', { appName: 'hosted-one', table: 'products', records: [{ title: 'shelf' }, { titel: 'x' }] });
    expect(text(bad)).toMatch(/^table_create_record failed: .*records\.1.*titel.*\[HTTP 400 validation_failed\]\. Nothing was changed\./);
    const neither = await call(fullClient, 'table_create_record', { appName: 'hosted-one', table: 'products' });
    expect(text(neither)).toBe('table_create_record: give record (one object) or records (a list), one of the two. Nothing was done.');
    expect((await call(fullClient, 'table_query', { appName: 'hosted-one', table: 'products', aggregate: 'count' })).structuredContent).toMatchObject({
      value: 3,
    });

    // Private behind a password, through a tool: the page now asks for it.
    const locked = await call(fullClient, 'account_update_app', { appId: app.appId, password: 'open sesame' });
    expect(locked.isError, text(locked)).toBeFalsy();
    expect(locked.structuredContent).toMatchObject({ app: { visibility: 'private', hasPassword: true } });
    expect(await (await fetch(app.pathUrl)).text()).not.toContain('Hosted');

    // A function created, published and invoked through tools (personal keys may invoke).
    const slug = `hosted-fn-${Date.now()}`;
    const created = await call(fullClient, 'function_create', {
      name: 'Echo',
      slug,
      code: 'export default (req) => ({ status: 201, body: { q: req.query } })',
    });
    expect(created.isError, text(created)).toBeFalsy();
    const fnId = (created.structuredContent as { function: { functionId: string } }).function.functionId;
    expect((await call(fullClient, 'function_publish', { functionId: fnId })).isError).toBeFalsy();
    const shared = await call(fullClient, 'function_set_access', { functionId: fnId, allowUserInvoke: true });
    expect(shared.structuredContent).toMatchObject({ function: { allowUserInvoke: true } });
    const invoked = await call(fullClient, 'function_invoke', { functionId: slug, method: 'GET', path: '/', query: 'x=1' });
    expect(invoked.isError, text(invoked)).toBeFalsy();
    expect(invoked.structuredContent).toMatchObject({ response: { status: 201 } });
    await Promise.all([fullClient.close(), other.close()]);
  });

  it('a signed-in default lists the account, function and Table tools within 17,500 characters, none paid by a wallet', async () => {
    const client = await connect((await h.account()).key);
    try {
      const { tools } = await client.listTools();
      // What a model is shown (the views' _meta.ui is the host's, for the person: views.test.ts).
      expect(modelSize(tools)).toBeLessThanOrEqual(17_500);
      expect(tools.filter((t) => !/^(account_|function_|table_)/.test(t.name)).map((t) => t.name)).toEqual([]);
      expect(tools.filter((t) => /USDC/.test(t.description ?? '')).map((t) => t.name)).toEqual([]);
      // The caller's credential opens the account's own Tables (the test above writes one without its key).
      expect(tools.find((t) => t.name === 'table_update_record')!.description).toBe(
        "Change some fields of one record; the others stay. Needs the write key (not on the account's own Tables). Free.",
      );
    } finally {
      await client.close();
    }
  });

  it('every tool of /mcp (all toolsets) and /mcp/x402 tells the host its four hints and its icon, in the same order on every request', async () => {
    const key = (await h.account()).key;
    const signedIn = await connect(key, '?toolsets=all');
    const wallet = new Client({ name: 'hosted-test', version: '1.0.0' });
    await wallet.connect(new StreamableHTTPClientTransport(new URL(`${h.url}/mcp/x402?toolsets=all`)));
    try {
      for (const client of [signedIn, wallet]) {
        const { tools } = await client.listTools();
        expect(tools.length).toBeGreaterThan(20);
        for (const t of tools) {
          expect(t.annotations, t.name).toEqual(annotationsOf(t.name));
          // Served from the service's own origin (test/mcp/hosted-icons.test.ts), not inlined as data: URIs.
          expect(t.icons?.[0]?.src, t.name).toMatch(new RegExp(`^${h.url}/mcp/icons/[a-z]+\\.svg$`));
        }
        // Pooled servers answer in turn: each answer is the first, byte for byte.
        const again = await Promise.all([client.listTools(), client.listTools(), client.listTools()]);
        for (const a of again) expect(JSON.stringify(a.tools)).toBe(JSON.stringify(tools));
      }
      // The hosted endpoints carry no composites: the upload steps are theirs, with the hints of their actions.
      const steps = (await wallet.listTools()).tools.find((t) => t.name === 'convert_data_file_to_api');
      expect(steps?.annotations).toEqual({ readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true });
    } finally {
      await Promise.all([signedIn.close(), wallet.close()]);
    }
  });

  it('callers with the same scopes calling at once each act as themselves (servers are reused, credentials never)', async () => {
    const callers = await Promise.all(
      ['ann', 'bob', 'cyd'].map(async (who) => {
        const account = await h.account();
        const client = await connect(account.key);
        const published = await call(client, 'account_publish_app', { requestId: `own-${who}`, html: html(who), appName: `own-${who}-${Date.now()}` });
        expect(published.isError, text(published)).toBeFalsy();
        return { client, appId: (published.structuredContent as { app: { appId: string } }).app.appId };
      }),
    );
    const rounds = await Promise.all(
      Array.from({ length: 24 }, async (_, i) => {
        const me = callers[i % callers.length];
        const list = await call(me!.client, 'account_list_apps', {});
        return { me, apps: (list.structuredContent as { apps: { appId: string }[] }).apps.map((a) => a.appId) };
      }),
    );
    for (const { me, apps } of rounds) expect(apps).toEqual([me!.appId]);
    await Promise.all(callers.map((c) => c.client.close()));
  });

  it('a request body over SVC_MAX_JSON_BODY_BYTES is refused with 413 before it is parsed', async () => {
    const { key } = await h.account();
    const huge = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'account_publish_app', arguments: { requestId: 'big', html: 'x'.repeat(h.config.limits.maxJsonBodyBytes) } },
    });
    const res = await fetch(`${h.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: huge,
    });
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/exceeds \d+ bytes/);
    // Sent chunked (no Content-Length): counted while read, refused the same way.
    const chunked = await fetch(`${h.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: new Blob([huge]).stream(),
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(413);
  });

  it('a tool of a toolset the URL did not ask for is not listed, and a call to it says to add it to ?toolsets=', async () => {
    const client = await connect((await h.account()).key, '?toolsets=apps');
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).not.toContain('table_query');
      const off = await call(client, 'table_query', { tableId: 'x' });
      expect(off.isError).toBe(true);
      expect(text(off)).toMatch(
        /^table_query is in the "tables" toolset, which this session did not turn on: ask the user to add \?toolsets=apps,tables to the endpoint's URL/,
      );
    } finally {
      await client.close();
    }
  });

  it('a paid tool answers PaymentRequired; paid via _meta it works once, and a replayed payment is not charged again', async () => {
    const client = await connect((await h.account()).key, '?toolsets=apps');
    const recipient = (h.config.x402.recipient ?? '') as string;
    const [payerBefore, recipientBefore] = await Promise.all([balance(payer.address), balance(recipient)]);

    const unpaid = await call(client, 'create_app_from_html', { appName: 'wallet-paid', html: html('Paid') });
    expect(unpaid.isError).toBe(true);
    const required = unpaid.structuredContent as { x402Version: number; accepts: { amount: string; asset: string }[] };
    expect(required.x402Version).toBe(2);
    expect(required.accepts[0]).toMatchObject({ amount: '7000', asset: USDC_ADDRESS });
    expect(JSON.parse(text(unpaid))['x402/error']).toMatchObject({ code: 402 });

    const payment = await signPayment(required);
    const paid = await call(client, 'create_app_from_html', { appName: 'wallet-paid', html: html('Paid') }, { 'x402/payment': payment });
    expect(paid.isError, text(paid)).toBeFalsy();
    expect((paid.structuredContent as { app: { appName: string } }).app.appName).toBe('wallet-paid');
    expect(paid._meta?.['x402/payment-response']).toMatchObject({ success: true });

    // The same signed payment again: refused or replayed, never charged twice.
    const replay = await call(client, 'create_app_from_html', { appName: 'wallet-paid-2', html: html('Again') }, { 'x402/payment': payment });
    expect(replay.isError).toBe(true);
    const [payerAfter, recipientAfter] = await Promise.all([balance(payer.address), balance(recipient)]);
    expect(payerBefore - payerAfter).toBe(7000n);
    expect(recipientAfter - recipientBefore).toBe(7000n);
    await client.close();
  });

  it('/mcp/x402 takes no sign-in: the wallet pays through _meta, owns what it made, and has no Account API tools', async () => {
    const client = new Client({ name: 'wallet-only', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${h.url}/mcp/x402`)));
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['create_app_from_html', 'list_apps', 'table_query', 'convert_data_file_to_api']));
    expect(names.filter((n) => n.startsWith('account_') || n.startsWith('function_'))).toEqual([]);
    const recipient = h.config.x402.recipient as string;
    const before = await Promise.all([balance(payer.address), balance(recipient)]);

    const args = { appName: `wallet-only-${Date.now()}`, html: html('Wallet only') };
    const unpaid = await call(client, 'create_app_from_html', args);
    expect(unpaid.isError).toBe(true);
    expect(JSON.parse(text(unpaid))['x402/error'].message).toContain('_meta["x402/payment"]');
    const paid = await call(client, 'create_app_from_html', args, { 'x402/payment': await signPayment(unpaid.structuredContent) });
    expect(paid.isError, text(paid)).toBeFalsy();
    const app = (paid.structuredContent as { app: { appName: string; pathUrl: string } }).app;
    expect(await (await fetch(app.pathUrl)).text()).toContain('Wallet only');
    const after = await Promise.all([balance(payer.address), balance(recipient)]);
    expect(before[0] - after[0]).toBe(7000n);
    expect(after[1] - before[1]).toBe(7000n);

    // The wallet is the owner: its zero-value proof lists the app.
    const ask = await call(client, 'list_apps', {});
    expect(ask.isError).toBe(true);
    const listed = await call(client, 'list_apps', {}, { 'x402/payment': await signPayment(ask.structuredContent) });
    expect(listed.isError, text(listed)).toBeFalsy();
    expect(JSON.stringify(listed.structuredContent)).toContain(args.appName);
    await client.close();

    // A credential belongs at /mcp: refused here, not silently ignored.
    const res = await fetch(`${h.url}/mcp/x402`, {
      method: 'POST',
      headers: { authorization: `Bearer ${(await h.account()).key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/connect to \/mcp instead/);
  });

  it("/mcp/x402's default puts an image into an app and turns a data file into a Table API, with only the tools it lists", async () => {
    const client = new Client({ name: 'wallet-only', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${h.url}/mcp/x402`)));
    // A paid call as a client that signs x402 makes it: unpaid, then again with the payment.
    const paid = async (name: string, args: Record<string, unknown>) => {
      const asked = await call(client, name, args);
      expect(asked.isError, text(asked)).toBe(true);
      const done = await call(client, name, args, { 'x402/payment': await signPayment(asked.structuredContent) });
      expect(done.isError, text(done)).toBeFalsy();
      return done;
    };
    try {
      const appName = `uploads-${Date.now()}`;
      await paid('create_app_from_html', { appName, html: '<img src="logo.png">' });
      const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
      const urls = (await paid('create_site_upload_urls', { appId: appName, files: [{ path: 'logo.png', size: png.length, type: 'image/png' }] }))
        .structuredContent as { uploadToken: string; files: { uploadUrl: string; headers: Record<string, string> }[] };
      expect((await fetch(urls.files[0]!.uploadUrl, { method: 'PUT', headers: urls.files[0]!.headers, body: png })).ok).toBe(true);
      await paid('finalize_site_upload', {
        appId: appName,
        uploadToken: urls.uploadToken,
        entryPoint: 'index.html',
        files: [{ path: 'logo.png', size: png.length }],
      });
      expect(Buffer.from(await (await fetch(`${h.url}/s/${appName}/logo.png`)).arrayBuffer())).toEqual(png);

      const csv = 'city,country\nParis,FR\nBerlin,DE\nLyon,FR\n';
      const upload = (await paid('create_data_file_upload_url', { appId: appName, fileName: 'cities.csv', fileSize: Buffer.byteLength(csv) }))
        .structuredContent as { key: string; upload: { url: string; headers: Record<string, string> } };
      expect((await fetch(upload.upload.url, { method: 'PUT', headers: upload.upload.headers, body: csv })).ok).toBe(true);
      const converted = await paid('convert_data_file_to_api', { appId: appName, key: upload.key, fileName: 'cities.csv' });
      expect(text(converted)).toMatch(
        new RegExp(`The table tools take appName ${appName}, table cities\\. The app's pages reach it at /api/data/${appName}/cities: GET answers`),
      );
      const fr = await call(client, 'table_query', { appName, table: 'cities', where: [{ field: 'country', value: 'FR' }] });
      expect((fr.structuredContent as { records: { fields: { city: string } }[] }).records.map((r) => r.fields.city)).toEqual(['Paris', 'Lyon']);
    } finally {
      await client.close();
    }
  });

  it('the same signed payment sent by two racing calls is charged once', async () => {
    const client = await connect((await h.account()).key, '?toolsets=apps');
    const recipient = h.config.x402.recipient as string;
    const before = await Promise.all([balance(payer.address), balance(recipient)]);
    const args = { appName: `race-${Date.now()}`, html: html('Race') };
    const required = (await call(client, 'create_app_from_html', args)).structuredContent;
    const payment = await signPayment(required);
    const results = await Promise.all([0, 1].map(() => call(client, 'create_app_from_html', args, { 'x402/payment': payment })));
    // Both may answer success (the second replays the first result), but the money moves once.
    expect(results.some((r) => !r.isError)).toBe(true);
    const after = await Promise.all([balance(payer.address), balance(recipient)]);
    expect(before[0] - after[0]).toBe(7000n);
    expect(after[1] - before[1]).toBe(7000n);
    await client.close();
  });

  it('an underpaid payment, or one signed for another tool’s price, is refused and nothing is charged', async () => {
    const client = await connect((await h.account()).key, '?toolsets=apps');
    const before = await balance(payer.address);
    const args = { appName: `under-${Date.now()}`, html: html('Under') };
    const required = (await call(client, 'create_app_from_html', args)).structuredContent as { accepts: { amount: string }[] };
    const underpaid = await signPayment({ ...required, accepts: [{ ...required.accepts[0], amount: '1000' }] });
    const r1 = await call(client, 'create_app_from_html', args, { 'x402/payment': underpaid });
    expect(r1.isError).toBe(true);
    expect((r1.structuredContent as { x402Version?: number }).x402Version).toBe(2);
    expect(r1._meta?.['x402/payment-response']).toMatchObject({ success: false });
    // A payment signed for update_app_meta (0.001) does not pay for create_app_from_html (0.007).
    const cheap = (await call(client, 'update_app_meta', { appId: 'whatever', visibility: 'public' })).structuredContent;
    const r2 = await call(client, 'create_app_from_html', args, { 'x402/payment': await signPayment(cheap) });
    expect(r2.isError).toBe(true);
    expect(await balance(payer.address)).toBe(before);
    expect((await fetch(`${h.url}/s/${args.appName}/`)).status).toBe(404);
    await client.close();
  });

  it('a revoked personal key is refused at /mcp with the 401 challenge', async () => {
    const account = await h.account();
    const [row] = await h.deps.db.select().from(personalKeys).where(eq(personalKeys.accountId, account.accountId));
    await revokePersonalKey(h.deps.db, account.accountId, row!.id, new Date());
    const res = await fetch(`${h.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
    expect((await res.json()).error.message).toMatch(/revoked/);
  });

  it('refuses an unknown or dynamic toolset choice with a 400 that says what to do', async () => {
    const { key } = await h.account();
    for (const [query, message] of [
      ['?toolsets=nope', /unknown toolset\(s\): nope/],
      ['?toolsets=dynamic', /dynamic needs a session/],
    ] as const) {
      const res = await fetch(`${h.url}/mcp${query}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(res.status).toBe(400);
      expect((await res.json()).error.message).toMatch(message);
    }
  });

  it('refuses a malformed _meta payment before sending anything', async () => {
    const client = await connect((await h.account()).key, '?toolsets=apps');
    const r = await call(client, 'publish_app', { appId: 'nope' }, { 'x402/payment': 'not-a-payload' });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/must be an x402 PaymentPayload \(x402Version 1 or 2\): the object, or the base64 string of its JSON\. Nothing was sent or paid/);
    await client.close();
  });
});
