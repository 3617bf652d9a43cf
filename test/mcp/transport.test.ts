import fs from 'node:fs';
import nodeHttp from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadMcpConfig } from '../../mcp/config.js';
import { startMcpHttp } from '../../mcp/http.js';
import { DATA_ICONS } from '../../mcp/icons.js';
import { annotationsOf, TOOLSET_OF, toolsetOf } from '../../mcp/toolsets.js';
import { ACCOUNT_OPERATIONS } from '../../shared/account-api/operations.js';
import type { AgentAction } from '../../shared/agent-api/action.js';
import { AGENT_ACTIONS, toolNameOf } from '../../shared/agent-api/catalogue.js';
import { asModelSees, call, connectHttp, connectStdio, modelSize, text } from './helpers.js';

// No service behind these servers (SVC_URL points at a closed port): protocol, listing, validation
// and refusals only. Paid calls against the real service are in paid-tools.test.ts.
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-mcp-transport-'));
const env = { SVC_URL: 'http://127.0.0.1:9', SVC_SPEND_LEDGER: path.join(dir, 'ledger.json') };
const catalogue = AGENT_ACTIONS as readonly AgentAction[];

let stdio: Client;
let http: Awaited<ReturnType<typeof connectHttp>>;

beforeAll(async () => {
  [stdio, http] = await Promise.all([connectStdio(env), connectHttp(env)]);
});
afterAll(async () => {
  await Promise.all([stdio?.close(), http?.close()]);
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('svc-mcp over stdio and streamable HTTP', () => {
  it.each(['stdio', 'http'] as const)('lists the default toolsets (apps, tables, datasets, wallet) with prices and annotations (%s)', async (kind) => {
    const client = kind === 'stdio' ? stdio : http.client;
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    for (const a of catalogue) {
      const name = toolNameOf(a);
      if (toolsetOf(name) === 'advanced' || toolsetOf(name) === 'versions') {
        expect(byName.has(name), `${name} is in the ${toolsetOf(name)} toolset`).toBe(false);
        continue;
      }
      const t = byName.get(name);
      expect(t, name).toBeDefined();
      expect(t!.annotations).toEqual(annotationsOf(name));
      expect(t!.annotations?.readOnlyHint).toBe(a.readOnly);
      if (a.price !== '0') {
        expect(t!.description).toContain(`Costs ${a.price} USDC`);
        expect(Object.keys(t!.inputSchema.properties ?? {})).toContain('maxPrice');
      }
      // One vocabulary: an app is appId / appName, never siteId or site.
      expect(Object.keys(t!.inputSchema.properties ?? {})).not.toEqual(expect.arrayContaining(['siteId']));
    }
    for (const name of [
      'table_query',
      'table_schema',
      'table_get_record',
      'table_create_record',
      'table_update_record',
      'table_delete_record',
      'wallet_status',
      'quote',
      'list_receipts',
      'deploy_site',
      'upload_dataset',
    ]) {
      expect(byName.has(name), name).toBe(true);
    }
    const q = Object.keys(byName.get('table_query')!.inputSchema.properties ?? {});
    expect(q).toEqual(
      expect.arrayContaining(['appName', 'table', 'limit', 'offset', 'cursor', 'where', 'sort', 'q', 'fields', 'aggregate', 'groupBy', 'bbox']),
    );
    expect(byName.get('table_delete_record')!.annotations).toEqual({ readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true });
  });

  // A user who gave svc-mcp a personal key and no wallet was listed 21 tools that pay (each refusing:
  // no wallet) and none of the account's.
  it('without SVC_TOOLSETS lists the tools its configuration can use: a key, a wallet, or both', async () => {
    const toolsetsOf = async (extra: Record<string, string>) => {
      const s = await connectHttp({ ...env, ...extra });
      try {
        const names = (await s.client.listTools()).tools.map((t) => t.name);
        // The composites are the account's when they act for the account (composites-for-account.test.ts).
        const composite = (n: string) => n === 'deploy_site' || n === 'upload_dataset';
        const toolset = (n: string) => (composite(n) && !names.includes('wallet_status') ? 'account' : TOOLSET_OF[n]);
        return [...new Set(names.map((n) => toolset(n) ?? ACCOUNT_OPERATIONS.find((o) => o.tool === n)?.toolset))].sort();
      } finally {
        await s.close();
      }
    };
    const walletKey = `0x${'11'.repeat(32)}`;
    expect(await toolsetsOf({})).toEqual(['apps', 'datasets', 'tables', 'wallet']);
    expect(await toolsetsOf({ SVC_WALLET_PRIVATE_KEY: walletKey })).toEqual(['apps', 'datasets', 'tables', 'wallet']);
    expect(await toolsetsOf({ SVC_API_KEY: 'svc_pat_unused' })).toEqual(['account', 'tables']);
    expect(await toolsetsOf({ SVC_API_KEY: 'svc_pat_unused', SVC_WALLET_PRIVATE_KEY: walletKey })).toEqual(['account', 'apps', 'datasets', 'tables', 'wallet']);
    // `default` in SVC_TOOLSETS is the same choice.
    expect(await toolsetsOf({ SVC_API_KEY: 'svc_pat_unused', SVC_TOOLSETS: 'default,functions' })).toEqual(['account', 'functions', 'tables']);
  });

  it('keeps the tool list within its budget: default ≤ 16,000 characters (with a key and no wallet too), no tool over 1,600, everything ≤ 48,000', async () => {
    // Sizes are deterministic (the JSON a client receives, less the views' _meta.ui no model is shown), not timings.
    const size = modelSize;
    const { tools } = await http.client.listTools();
    expect(size(tools)).toBeLessThanOrEqual(16_000);
    // The default of a personal key without a wallet: the account's tools, the Table tools, the two composites.
    const keyOnly = await connectHttp({ ...env, SVC_API_KEY: 'svc_pat_unused' });
    try {
      expect(size((await keyOnly.client.listTools()).tools)).toBeLessThanOrEqual(16_000);
    } finally {
      await keyOnly.close();
    }
    // Every tool: all toolsets, a key and a wallet (with a key and no wallet the wallet's tools are not listed).
    const all = await connectHttp({ ...env, SVC_TOOLSETS: 'all', SVC_API_KEY: 'svc_pat_unused', SVC_WALLET_PRIVATE_KEY: `0x${'22'.repeat(32)}` });
    try {
      const everything = (await all.client.listTools()).tools;
      expect(everything.length).toBeGreaterThan(tools.length);
      for (const t of everything) expect(JSON.stringify(asModelSees(t)).length, t.name).toBeLessThanOrEqual(1_600);
      expect(size(everything)).toBeLessThanOrEqual(48_000);
      // One vocabulary, said once: every appId is described as the app's id or name (not the service's
      // "site"), every other id as the result field it comes from, and no description states its price twice.
      for (const t of everything) {
        const args = (t.inputSchema.properties ?? {}) as Record<string, { description?: string }>;
        if (args.appId) expect(args.appId.description ?? '', t.name).toMatch(/^App id or name \(appId or appName in results\)/);
        if (args.tableId) expect(args.tableId.description, t.name).toBe('Table id (tableId in results)');
        if (args.functionId) expect(args.functionId.description, t.name).toBe('Function id or slug (functionId or slug in results)');
        expect(t.description!.match(/\bFree\b/g)?.length ?? 0, t.name).toBeLessThanOrEqual(1);
      }
    } finally {
      await all.close();
    }
  });

  it('every tool tells the host its four hints (from the one table that declares it) and its toolset icon; the order is the same on every server and transport', async () => {
    const all = await connectHttp({ ...env, SVC_TOOLSETS: 'all', SVC_API_KEY: 'svc_pat_unused', SVC_WALLET_PRIVATE_KEY: `0x${'22'.repeat(32)}` });
    const again = await connectHttp({ ...env, SVC_TOOLSETS: 'all', SVC_API_KEY: 'svc_pat_unused', SVC_WALLET_PRIVATE_KEY: `0x${'22'.repeat(32)}` });
    try {
      const everything = (await all.client.listTools()).tools;
      for (const t of everything) {
        expect(t.annotations, t.name).toEqual(annotationsOf(t.name));
        expect(Object.keys(t.annotations ?? {}).sort(), t.name).toEqual(['destructiveHint', 'idempotentHint', 'openWorldHint', 'readOnlyHint']);
        const toolset = ACCOUNT_OPERATIONS.find((o) => o.tool === t.name)?.toolset ?? toolsetOf(t.name);
        expect(t.icons, t.name).toEqual(DATA_ICONS.toolsets[toolset]);
      }
      // What a host confirms: the tools that lose something for good, and only those.
      expect(
        everything
          .filter((t) => t.annotations?.destructiveHint)
          .map((t) => t.name)
          .sort(),
      ).toEqual([
        'account_create_dataset',
        'account_delete_app',
        'account_write_app_files',
        'convert_data_file_to_api',
        'delete_app',
        'function_delete',
        'function_publish',
        'function_update_draft',
        'table_delete_record',
        'table_update_record',
        'upload_dataset',
      ]);
      // Deterministic: another server, the same list byte for byte, whichever server of a pool answers.
      const lists = await Promise.all([all.client.listTools(), again.client.listTools(), again.client.listTools()]);
      for (const l of lists) expect(JSON.stringify(l.tools)).toBe(JSON.stringify(everything));
      // The default list over stdio is the one HTTP lists, in the same order.
      expect((await stdio.listTools()).tools.map((t) => t.name)).toEqual((await http.client.listTools()).tools.map((t) => t.name));
      // Icons are one per toolset (~380 characters each, base64 SVG) and the hints ~95: what a host reads costs the wire at most 520 characters a tool.
      const icons = new Set(everything.map((t) => JSON.stringify(t.icons)));
      expect(icons.size).toBeLessThanOrEqual(8);
      for (const t of everything) expect(JSON.stringify({ annotations: t.annotations, icons: t.icons }).length, t.name).toBeLessThanOrEqual(520);
    } finally {
      await Promise.all([all.close(), again.close()]);
    }
  });

  it("svc-agent-host mcp is svc-mcp over stdio (how the MCP Registry's npm entry starts it: the package's default bin)", async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [path.resolve(import.meta.dirname, '../../bin/svc.mjs'), 'mcp'],
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'svc-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      expect(client.getServerVersion()?.name).toBe('svc');
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual((await stdio.listTools()).tools.map((t) => t.name));
    } finally {
      await client.close();
    }
  });

  it('SVC_TOOLSETS picks toolsets; an unknown one is refused at start naming the known ones', async () => {
    const tables = await connectHttp({ ...env, SVC_TOOLSETS: 'tables' });
    try {
      const names = (await tables.client.listTools()).tools.map((t) => t.name).sort();
      // The Table tools alone: creating a Table is its owner's (create_table_api in apps, account_create_table in account).
      expect(names).toEqual(['table_create_record', 'table_delete_record', 'table_get_record', 'table_query', 'table_schema', 'table_update_record']);
      // A tool of a toolset not turned on is not listed; calling it says how to turn it on.
      const off = await call(tables.client, 'list_pricing');
      expect(off.isError).toBe(true);
      expect(text(off)).toBe(
        'list_pricing is in the "advanced" toolset, which this session did not turn on: ask the user to start svc-mcp with SVC_TOOLSETS=tables,advanced ("dynamic" lets the session turn toolsets on itself).',
      );
    } finally {
      await tables.close();
    }
    expect(() => loadMcpConfig({ ...env, SVC_TOOLSETS: 'tables,nope' })).toThrow(/unknown toolset\(s\): nope \(known: apps, tables/);
  });

  it('dynamic toolsets: enable_toolset adds its tools and the client hears tools/list_changed', async () => {
    const dyn = await connectStdio({ ...env, SVC_TOOLSETS: 'tables,dynamic' });
    try {
      let changed = 0;
      dyn.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        changed++;
      });
      const before = (await dyn.listTools()).tools.map((t) => t.name);
      expect(before).toContain('list_toolsets');
      expect(before).not.toContain('deploy_site');
      const early = await call(dyn, 'deploy_site', { appName: 'x', dir: '.' });
      expect([early.isError, text(early)]).toEqual([
        true,
        'deploy_site is in the "apps" toolset, not turned on in this session yet: call enable_toolset with {"toolset": "apps"} first.',
      ]);
      const listed = await call(dyn, 'list_toolsets');
      expect(listed.structuredContent).toMatchObject({
        toolsets: expect.arrayContaining([{ toolset: 'apps', enabled: false, description: expect.any(String), tools: 10 }]),
      });
      const on = await call(dyn, 'enable_toolset', { toolset: 'apps' });
      expect(on.isError, text(on)).toBeFalsy();
      await vi.waitFor(() => expect(changed).toBeGreaterThan(0));
      expect((await dyn.listTools()).tools.map((t) => t.name)).toContain('deploy_site');
    } finally {
      await dyn.close();
    }
  });

  it('SVC_READ_ONLY=1 keeps only tools that can neither write nor pay', async () => {
    const ro = await connectHttp({ ...env, SVC_READ_ONLY: '1' });
    try {
      const names = (await ro.client.listTools()).tools.map((t) => t.name).sort();
      expect(names).toEqual(['list_apps', 'list_receipts', 'quote', 'suggest_site_name', 'table_get_record', 'table_query', 'table_schema', 'wallet_status']);
      const r = await call(ro.client, 'create_app_from_html', { appName: 'x', html: '<p>x</p>' });
      expect(r.isError).toBe(true);
      expect(text(r)).toMatch(/^There is no tool named create_app_from_html in this session\. This server is read-only \(SVC_READ_ONLY\)/);
    } finally {
      await ro.close();
    }
  });

  it('SVC_READ_ONLY=1 pays for nothing, also when the service charges for a tool the catalogue lists as free', async () => {
    const ro = await connectHttp({ ...env, SVC_READ_ONLY: '1' }, { tweak: (ctx) => ctx.prices.set('x402.suggest_site_name', '0.001') });
    try {
      const r = await call(ro.client, 'suggest_site_name');
      expect(r.isError).toBe(true);
      expect(text(r)).toMatch(/costs 0\.001 USDC on this service and this server is read-only.*Nothing was charged/);
    } finally {
      await ro.close();
    }
  });

  it('without a wallet a paid tool refuses with an actionable sentence, and quote says so', async () => {
    const r = await call(stdio, 'create_app_from_html', { appName: 'x', html: '<p>x</p>' });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(
      /no wallet is configured; nothing was paid\. Ask the user to give the MCP server a wallet: SVC_WALLET_KEY_FILE \(svc-mcp --new-wallet <file> writes one\) or SVC_WALLET_PRIVATE_KEY\. Or, free and with no wallet: SVC_API_KEY set to a personal key \(svc_pat_…\) makes the account_\* tools \(and deploy_site, upload_dataset\) act for that account\.$/,
    );
    const q = await call(stdio, 'quote', { tool: 'publish_app' });
    expect(q.isError).toBeFalsy();
    expect(q.structuredContent).toMatchObject({ quotes: [{ action: 'x402.publish_app', price: '0.002', allowed: false, walletConfigured: false }] });
    const composite = await call(stdio, 'quote', { tool: 'upload_dataset' });
    expect(composite.structuredContent).toMatchObject({ quotes: [{ tool: 'upload_dataset', price: '0.012' }] });
    const unknown = await call(stdio, 'quote', { tool: 'deploy_everything' });
    expect(text(unknown)).toMatch(/^Unknown tool "deploy_everything"\. Paid tools: deploy_site, upload_dataset, create_app_from_html, /);
    // Only tools that cost something are named (list_apps and list_pricing are free).
    expect(text(unknown)).not.toMatch(/list_apps|list_pricing|suggest_site_name|describe_api/);
  });

  it('bad arguments come back as a tool error naming the field', async () => {
    const r = await call(stdio, 'create_app_from_html', { html: '<p>x</p>' });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/appName/);
  });

  it('a taken port is refused with a sentence naming the port and the setting, not an unhandled error', async () => {
    const holder = nodeHttp.createServer();
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
    const { port } = holder.address() as { port: number };
    try {
      await expect(startMcpHttp(http.ctx, port, '127.0.0.1', 'SVC_MCP_PORT')).rejects.toThrow(
        `port ${port} on 127.0.0.1 is taken by another process (EADDRINUSE): stop that process or choose another port with SVC_MCP_PORT=…`,
      );
    } finally {
      holder.close();
    }
  });

  it('an unreachable service is an error result, not a crash', async () => {
    const r = await call(http.client, 'suggest_site_name');
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/suggest_site_name|fetch failed|did not answer/);
  });

  it('resources: svc://pricing, svc://receipts and svc://wallet', async () => {
    const { resources } = await http.client.listResources();
    // Beside the tools' views (ui://, views.test.ts).
    expect(resources.map((r) => r.uri).sort()).toEqual([
      'svc://pricing',
      'svc://receipts',
      'svc://wallet',
      'ui://svc/dataset',
      'ui://svc/site',
      'ui://svc/table',
      'ui://svc/wallet',
    ]);
    const pricing = JSON.parse(((await http.client.readResource({ uri: 'svc://pricing' })).contents[0] as { text: string }).text);
    expect(pricing.source).toBe('catalogue');
    expect(pricing.pricing).toContainEqual(expect.objectContaining({ action: 'x402.create_app_from_html', price: '0.007' }));
    const wallet = JSON.parse(((await http.client.readResource({ uri: 'svc://wallet' })).contents[0] as { text: string }).text);
    expect(wallet).toMatchObject({ configured: false, caps: { perCall: '0.05', perSession: '1', perDay: '5', total: null } });
  });

  it('HTTP: concurrent calls each get their own answer from reused servers, and a malformed body leaves the next request whole', async () => {
    const tools = ['create_app_from_html', 'publish_app', 'create_table_api', 'delete_app', 'update_app_meta'];
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => call(http.client, 'quote', { tool: tools[i % tools.length], args: {} }).then((r) => ({ i, r }))),
    );
    for (const { i, r } of answers) {
      expect(r.isError, text(r)).toBeFalsy();
      expect((r.structuredContent as { quotes: { tool: string }[] }).quotes.map((q) => q.tool)).toEqual([tools[i % tools.length]]);
    }
    const broken = await fetch(http.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{"jsonrpc": "2.0", "id": 1, "method": ',
    });
    expect(broken.status).toBe(400);
    expect(((await broken.json()) as { error: { code: number } }).error.code).toBe(-32700);
    const after = await call(http.client, 'quote', { tool: 'publish_app', args: {} });
    expect((after.structuredContent as { quotes: { tool: string }[] }).quotes[0]!.tool).toBe('publish_app');
  });

  it('HTTP transport rejects non-loopback Host and Origin (DNS rebinding) before any MCP handling', async () => {
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    };
    const post = (headers: Record<string, string>) =>
      new Promise<number>((resolve, reject) => {
        // node:http, because fetch does not let a caller set Host.
        const u = new URL(http.url);
        const req = nodeHttp.request(
          {
            host: u.hostname,
            port: u.port,
            path: u.pathname,
            method: 'POST',
            headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
          },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify(init));
      });
    const port = new URL(http.url).port;
    expect(await post({ host: `evil.example:${port}` })).toBe(403);
    expect(await post({ host: `localhost:${port}`, origin: 'http://evil.example' })).toBe(403);
    expect(await post({ host: `localhost:${port}`, origin: `http://localhost:${port}` })).toBe(200);
    expect(await post({ host: `127.0.0.1:${port}` })).toBe(200);
  });
});

describe('svc-mcp start-up against a slow service', () => {
  it('answers initialize before the service has sent its prices; tools/list then shows the service price', async () => {
    // The fake service holds GET /api/x402/pricing until the test releases it.
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const pricing = catalogue.map((a) => ({
      action: a.name,
      method: a.method,
      path: a.path,
      price: a.name === 'x402.create_app_from_html' ? '0.009' : a.price,
      amount: '0',
      currency: 'USDC',
      network: 'eip155:8453',
      priceUpdatedAt: 0,
    }));
    const server = nodeHttp.createServer((req, res) => {
      if (req.url !== '/api/x402/pricing') return void res.writeHead(404).end();
      void released.then(() =>
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ ok: true, currency: 'USDC', network: 'eip155:8453', recipient: '0x0', pricingUpdatedAt: 0, pricing })),
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const client = await connectStdio({ ...env, SVC_URL: `http://127.0.0.1:${port}` });
    try {
      // initialize is done (connect resolved) while the price request is held unanswered.
      let listed = false;
      const list = client.listTools().then((r) => {
        listed = true;
        return r;
      });
      await new Promise((r) => setTimeout(r, 200));
      expect(listed).toBe(false);
      release();
      const { tools } = await list;
      expect(tools.find((t) => t.name === 'create_app_from_html')?.description).toContain('Costs 0.009 USDC');
    } finally {
      release();
      await client.close();
      server.close();
    }
  });
});
