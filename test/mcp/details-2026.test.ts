import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMcpConfig } from '../../mcp/config.js';
import { startMcpHttp } from '../../mcp/http.js';
import { DATA_ICONS } from '../../mcp/icons.js';
import { createMcpContext } from '../../mcp/server.js';
import { annotationsOf } from '../../mcp/toolsets.js';

// The 2026-07-28 details on svc-mcp's streamable HTTP face, as raw requests: the list's cache hint,
// the server's icons, and the Mcp-Method / Mcp-Name headers checked against the body. No service
// behind it (SVC_URL is a closed port): nothing here reaches it.
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-mcp-2026-'));
let http: { url: string; close(): Promise<void> };

beforeAll(async () => {
  const ctx = await createMcpContext(loadMcpConfig({ SVC_URL: 'http://127.0.0.1:9', SVC_SPEND_LEDGER: path.join(dir, 'ledger.json') }));
  await ctx.ready;
  http = await startMcpHttp(ctx, 0);
});
afterAll(async () => {
  await http?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const ENVELOPE = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

/** One 2026-07-28 request; `headers` replace the ones a conforming client sends. */
async function post(method: string, params: Record<string, unknown>, headers: Record<string, string | undefined> = {}) {
  const name = typeof params.name === 'string' ? params.name : undefined;
  const sent: Record<string, string> = {};
  const all = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': method,
    ...(name ? { 'mcp-name': name } : {}),
    ...headers,
  };
  for (const [k, v] of Object.entries(all)) if (v !== undefined) sent[k] = v;
  const res = await fetch(http.url, {
    method: 'POST',
    headers: sent,
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: ENVELOPE } }),
  });
  return { status: res.status, body: (await res.json()) as { result?: Record<string, unknown>; error?: { code: number; message: string } } };
}

describe('MCP 2026-07-28 details (svc-mcp over streamable HTTP)', () => {
  it('tools/list carries its cache hint (a minute, this client only), each tool its four hints and icon; server/discover the server icon', async () => {
    const { status, body } = await post('tools/list', {});
    expect(status).toBe(200);
    expect(body.result).toMatchObject({ resultType: 'complete', ttlMs: 60_000, cacheScope: 'private' });
    const tools = body.result!.tools as { name: string; annotations: unknown; icons: unknown[] }[];
    expect(tools.length).toBeGreaterThan(10);
    for (const t of tools) {
      expect(t.annotations, t.name).toEqual(annotationsOf(t.name));
      expect(t.icons, t.name).toHaveLength(1);
    }
    const discover = await post('server/discover', {});
    expect(discover.status).toBe(200);
    expect((discover.body.result!._meta as Record<string, unknown>)['io.modelcontextprotocol/serverInfo']).toMatchObject({
      name: 'svc',
      icons: DATA_ICONS.server,
    });
  });

  it('refuses a request whose Mcp-Method or Mcp-Name header says other than its body, or lacks one, before anything runs', async () => {
    const ok = await post('tools/call', { name: 'quote', arguments: { tool: 'publish_app' } });
    expect(ok.status).toBe(200);
    expect(ok.body.result).toMatchObject({ resultType: 'complete' });
    for (const headers of [{ 'mcp-method': 'tools/list' }, { 'mcp-name': 'list_receipts' }, { 'mcp-name': undefined }, { 'mcp-method': undefined }]) {
      const refused = await post('tools/call', { name: 'quote', arguments: { tool: 'publish_app' } }, headers);
      expect(refused.status, JSON.stringify(headers)).toBe(400);
      expect(refused.body.result, JSON.stringify(headers)).toBeUndefined();
      expect(refused.body.error?.code, JSON.stringify(headers)).toBe(-32020);
    }
  });
});
