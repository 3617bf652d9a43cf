import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mountHostedMcp } from '../../cli/hosted-mcp.js';
import { UI_EXTENSION, VIEW_MIME_TYPE } from '../../mcp/views/views.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { BIN, connectHttp } from './helpers.js';

// MCP Apps views on both faces: svc-mcp (stdio, streamable HTTP) and the hosted /mcp and /mcp/x402.
// What a client sees in tools/list, resources/list and resources/read, with and without the UI
// extension declared; the views rendering real results in Chromium are in views-browser.test.ts.
const RENDERS_VIEWS = { extensions: { [UI_EXTENSION]: { mimeTypes: [VIEW_MIME_TYPE] } } };
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-mcp-views-'));
let h: Harness;

beforeAll(async () => {
  h = await startHarness('pglite', {}, { mount: (app, deps) => mountHostedMcp(app, deps) });
}, 120_000);
afterAll(async () => {
  await h?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function clientOver(transport: StdioClientTransport | StreamableHTTPClientTransport, rendersViews: boolean): Promise<Client> {
  const client = new Client({ name: 'views-test', version: '1.0.0' }, { capabilities: rendersViews ? RENDERS_VIEWS : {} });
  await client.connect(transport);
  return client;
}
const stdio = (env: Record<string, string>) =>
  new StdioClientTransport({
    command: process.execPath,
    args: [BIN],
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stderr: 'ignore',
  });
const hosted = (pathname: string, key?: string) =>
  new StreamableHTTPClientTransport(new URL(`${h.url}${pathname}`), key ? { requestInit: { headers: { authorization: `Bearer ${key}` } } } : undefined);

/** The tools as listed, without their `_meta.ui`: what a client that renders no view reads of them. */
const withoutViews = (tools: Tool[]) =>
  JSON.stringify(
    tools.map(({ _meta, ...tool }) => {
      const { ui: _ui, ...other } = _meta ?? {};
      return Object.keys(other).length ? { ...tool, _meta: other } : tool;
    }),
  );
const viewOf = (tools: Tool[], name: string) => (tools.find((t) => t.name === name)?._meta as { ui?: { resourceUri?: string } } | undefined)?.ui?.resourceUri;

/** resources/read of a view as a host does it: one HTML document, its MIME type, and the CSP it asks for. */
async function readView(client: Client, uri: string) {
  const { contents } = await client.readResource({ uri });
  expect(contents).toHaveLength(1);
  const [c] = contents as [{ uri: string; mimeType: string; text: string; _meta?: { ui?: { csp?: Record<string, string[]> } } }];
  expect(c).toMatchObject({ uri, mimeType: VIEW_MIME_TYPE });
  expect(c.text).toMatch(/^<!doctype html>/);
  // Self-contained: nothing to load from anywhere (no src or href to a URL, no @import).
  expect(c.text).not.toMatch(/(src|href)=["']?(https?:)?\/\//);
  expect(c.text).not.toMatch(/@import/);
  return c;
}

// The svc-mcp tests spawn it over stdio: a start from sources (tsx) on a loaded machine takes tens of seconds.
describe('MCP Apps views on svc-mcp', () => {
  const env = () => ({ SVC_URL: h.url, SVC_SPEND_LEDGER: path.join(dir, 'ledger.json') });

  it('stdio: a client that declares the UI extension sees the same tools plus their views; one that does not sees no _meta', async () => {
    const [plain, withUi] = await Promise.all([clientOver(stdio(env()), false), clientOver(stdio(env()), true)]);
    try {
      const [before, after] = await Promise.all([plain.listTools(), withUi.listTools()]);
      expect(before.tools.filter((t) => t._meta).map((t) => t.name)).toEqual([]);
      expect(withoutViews(after.tools)).toBe(JSON.stringify(before.tools));
      expect(viewOf(after.tools, 'deploy_site')).toBe('ui://svc/site');
      expect(viewOf(after.tools, 'create_app_from_html')).toBe('ui://svc/site');
      expect(viewOf(after.tools, 'table_query')).toBe('ui://svc/table');
      expect(viewOf(after.tools, 'upload_dataset')).toBe('ui://svc/dataset');
      expect(viewOf(after.tools, 'wallet_status')).toBe('ui://svc/wallet');
      expect(viewOf(after.tools, 'list_receipts')).toBe('ui://svc/wallet');
      expect(viewOf(after.tools, 'quote')).toBeUndefined();
      // What _meta adds, and nothing more.
      const added = JSON.stringify(after.tools).length - JSON.stringify(before.tools).length;
      expect(added).toBe(after.tools.filter((t) => t._meta).reduce((n, t) => n + `,"_meta":${JSON.stringify(t._meta)}`.length, 0));
      expect(after.tools.filter((t) => t._meta).map((t) => t.name)).toEqual([
        'create_app_from_html',
        'update_app_file',
        'update_app_meta',
        'publish_app',
        'unpublish_app',
        'table_query',
        'wallet_status',
        'list_receipts',
        'deploy_site',
        'upload_dataset',
      ]);

      // The views are resources either way (a host reads one when a tool names it).
      const { resources } = await withUi.listResources();
      const views = resources.filter((r) => r.uri.startsWith('ui://'));
      expect(views.map((r) => [r.uri, r.mimeType])).toEqual([
        ['ui://svc/site', VIEW_MIME_TYPE],
        ['ui://svc/table', VIEW_MIME_TYPE],
        ['ui://svc/dataset', VIEW_MIME_TYPE],
        ['ui://svc/wallet', VIEW_MIME_TYPE],
      ]);
      const site = await readView(withUi, 'ui://svc/site');
      // It frames the app's path URL on the service: the service's origin, and nothing else.
      expect(site._meta?.ui?.csp).toEqual({ frameDomains: [new URL(h.url).origin] });
      for (const uri of ['ui://svc/table', 'ui://svc/dataset', 'ui://svc/wallet']) expect((await readView(withUi, uri))._meta?.ui?.csp).toEqual({});

      // Results are the same for both clients: text and structuredContent, no view needed.
      const [a, b] = await Promise.all([
        plain.callTool({ name: 'quote', arguments: { tool: 'create_app_from_html' } }),
        withUi.callTool({ name: 'quote', arguments: { tool: 'create_app_from_html' } }),
      ]);
      expect(b).toEqual(a);
    } finally {
      await Promise.all([plain.close(), withUi.close()]);
    }
  }, 180_000);

  it('streamable HTTP (stateless: a tools/list carries no capabilities) names the views to every client: the _meta keys are all it adds', async () => {
    const s = await connectHttp(env());
    const plain = await clientOver(stdio(env()), false);
    try {
      const [overHttp, overStdio] = await Promise.all([s.client.listTools(), plain.listTools()]);
      expect(viewOf(overHttp.tools, 'deploy_site')).toBe('ui://svc/site');
      expect(withoutViews(overHttp.tools)).toBe(JSON.stringify(overStdio.tools));
      expect((await readView(s.client, 'ui://svc/table')).text).toContain('table_query');
    } finally {
      await Promise.all([s.close(), plain.close()]);
    }
  }, 180_000);
});

describe('MCP Apps views on the hosted endpoints', () => {
  it('/mcp (signed in): the account tools that publish show the site view, table_query the grid, account_create_dataset the dataset; no wallet view', async () => {
    const { key } = await h.account();
    const [plain, withUi] = await Promise.all([clientOver(hosted('/mcp', key), false), clientOver(hosted('/mcp', key), true)]);
    try {
      const [a, b] = await Promise.all([plain.listTools(), withUi.listTools()]);
      expect(JSON.stringify(b.tools)).toBe(JSON.stringify(a.tools));
      for (const name of ['account_publish_app', 'account_write_app_files', 'account_update_app']) expect(viewOf(a.tools, name), name).toBe('ui://svc/site');
      expect(viewOf(a.tools, 'table_query')).toBe('ui://svc/table');
      expect(viewOf(a.tools, 'account_create_dataset')).toBe('ui://svc/dataset');
      const { resources } = await withUi.listResources();
      expect(resources.map((r) => r.uri)).toEqual(['ui://svc/site', 'ui://svc/table', 'ui://svc/dataset']);
      const site = await readView(withUi, 'ui://svc/site');
      expect(site._meta?.ui?.csp).toEqual({ frameDomains: [new URL(h.url).origin] });
      // A view's resource is no tool call: reading it needs nothing but the sign-in.
      await expect(withUi.readResource({ uri: 'ui://svc/wallet' })).rejects.toThrow(/not found/i);
    } finally {
      await Promise.all([plain.close(), withUi.close()]);
    }
  });

  it('/mcp/x402 (a wallet): the Agent API tools that publish show the site view', async () => {
    const client = await clientOver(hosted('/mcp/x402'), true);
    try {
      const { tools } = await client.listTools();
      for (const name of ['create_app_from_html', 'update_app_file', 'publish_app', 'unpublish_app', 'finalize_site_upload'])
        expect(viewOf(tools, name), name).toBe('ui://svc/site');
      expect(viewOf(tools, 'table_query')).toBe('ui://svc/table');
      expect(viewOf(tools, 'convert_data_file_to_api')).toBe('ui://svc/dataset');
      expect(viewOf(tools, 'list_apps')).toBeUndefined();
      const site = await readView(client, 'ui://svc/site');
      expect(site.text).toContain('publish_app');
    } finally {
      await client.close();
    }
  });
});
