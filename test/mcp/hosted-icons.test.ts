import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mountHostedMcp } from '../../cli/hosted-mcp.js';
import { DATA_ICONS } from '../../mcp/icons.js';
import { TOOLSET_OF, toolsetOf } from '../../mcp/toolsets.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { rpc2026 } from './rpc-2026.js';

// The hosted endpoints name their icons by URL on the service's own origin ({base}/mcp/icons/<name>.svg);
// those URLs answer the very SVG that svc-mcp (no origin) still sends as a data: URI.
let h: Harness;
let key = '';
let ICON_URL: RegExp;

beforeAll(async () => {
  h = await startHarness('pglite', {}, { mount: (app, deps) => mountHostedMcp(app, deps) });
  key = (await h.account()).key;
  ICON_URL = new RegExp(`^${h.url}/mcp/icons/([a-z]+)\\.svg$`);
});
afterAll(async () => {
  await h?.close();
});

/** The SVG a data: URI of svc-mcp's carries. */
const svgOf = (dataUri: string) => Buffer.from(dataUri.replace(/^data:image\/svg\+xml;base64,/, ''), 'base64').toString('utf8');
/** What svc-mcp sends for the icon served as `name`. */
const dataUriOf = (name: string) => (name === 'server' ? DATA_ICONS.server : DATA_ICONS.toolsets[name as keyof typeof DATA_ICONS.toolsets])[0]!.src;

async function fetchIcon(src: string) {
  const res = await fetch(src);
  return { status: res.status, headers: res.headers, body: await res.text() };
}

/** One raw 2026-07-28 request to a hosted endpoint, as the v2 client sends it. */
const post2026 = (path: string, method: string, params: Record<string, unknown>, credential?: string) =>
  rpc2026(`${h.url}${path}`, method, params, { key: credential });

describe('icons by URL on the hosted endpoints', () => {
  it('every tool of /mcp and /mcp/x402 names its toolset icon on the service origin; each URL answers the SVG svc-mcp sends as data:', async () => {
    const signedIn = new Client({ name: 'icons-test', version: '1.0.0' });
    await signedIn.connect(
      new StreamableHTTPClientTransport(new URL(`${h.url}/mcp?toolsets=all`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }),
    );
    const wallet = new Client({ name: 'icons-test', version: '1.0.0' });
    await wallet.connect(new StreamableHTTPClientTransport(new URL(`${h.url}/mcp/x402?toolsets=all`)));
    try {
      const served = new Set<string>();
      for (const client of [signedIn, wallet]) {
        const { tools } = await client.listTools();
        expect(tools.length).toBeGreaterThan(20);
        expect(JSON.stringify(tools)).not.toContain('data:');
        for (const t of tools) {
          expect(t.icons, t.name).toEqual([{ src: expect.stringMatching(ICON_URL), mimeType: 'image/svg+xml', sizes: ['any'] }]);
          const name = ICON_URL.exec(t.icons![0]!.src)![1]!;
          // The icon of the tool's toolset (the catalogue's tools; the account's are placed by their operations).
          if (t.name in TOOLSET_OF) expect(name, t.name).toBe(toolsetOf(t.name, false));
          served.add(t.icons![0]!.src);
        }
        // The 2025 initialize's serverInfo too.
        expect(client.getServerVersion()?.icons).toEqual([{ src: `${h.url}/mcp/icons/server.svg`, mimeType: 'image/svg+xml', sizes: ['any'] }]);
      }
      expect(served.size).toBeGreaterThanOrEqual(5);
      for (const src of [...served, `${h.url}/mcp/icons/server.svg`]) {
        const name = ICON_URL.exec(src)![1]!;
        const icon = await fetchIcon(src);
        expect(icon.status, src).toBe(200);
        expect(icon.headers.get('content-type'), src).toBe('image/svg+xml');
        expect(icon.headers.get('x-content-type-options'), src).toBe('nosniff');
        expect(icon.headers.get('cache-control'), src).toBe('public, max-age=86400');
        expect(icon.headers.get('access-control-allow-origin'), src).toBe('*');
        expect(icon.body, src).toBe(svgOf(dataUriOf(name)));
        expect(icon.body, src).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
      }
    } finally {
      await Promise.all([signedIn.close(), wallet.close()]);
    }
  });

  it("a 2026-07-28 result's serverInfo (tools/call, server/discover) points at the served server icon, and carries no data: URI", async () => {
    const call = await post2026('/mcp', 'tools/call', { name: 'account_list_apps', arguments: {} }, key);
    expect(call.status, call.text).toBe(200);
    expect(call.result).toMatchObject({ resultType: 'complete' });
    expect(call.result!.isError, call.text).toBeFalsy();
    const info = (call.result!._meta as Record<string, { icons?: { src: string }[] }>)['io.modelcontextprotocol/serverInfo'];
    expect(info?.icons).toEqual([{ src: `${h.url}/mcp/icons/server.svg`, mimeType: 'image/svg+xml', sizes: ['any'] }]);
    expect(call.text).not.toContain('data:');
    const icon = await fetchIcon(info!.icons![0]!.src);
    expect(icon.status).toBe(200);
    expect(icon.headers.get('content-type')).toBe('image/svg+xml');
    expect(icon.body).toBe(svgOf(DATA_ICONS.server[0]!.src));

    const discover = await post2026('/mcp/x402', 'server/discover', {});
    expect(discover.status, discover.text).toBe(200);
    expect((discover.result!._meta as Record<string, { icons?: unknown }>)['io.modelcontextprotocol/serverInfo']?.icons).toEqual(info!.icons);
  });

  it('an icon is revalidated by its ETag (304, no body); an unknown one is a 404', async () => {
    const first = await fetch(`${h.url}/mcp/icons/tables.svg`);
    const etag = first.headers.get('etag');
    expect(etag).toMatch(/^"[\w-]{16}"$/);
    const again = await fetch(`${h.url}/mcp/icons/tables.svg`, { headers: { 'if-none-match': etag! } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    for (const path of ['/mcp/icons/nothing.svg', '/mcp/icons/tables.png', '/mcp/icons/..%2Fserver.svg']) {
      expect((await fetch(`${h.url}${path}`)).status, path).toBe(404);
    }
  });
});
