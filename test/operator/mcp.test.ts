import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mountHostedMcp } from '../../cli/hosted-mcp.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { ADMIN_TOKEN } from './admin.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('pglite', {}, { adminToken: ADMIN_TOKEN, mount: (app, deps) => mountHostedMcp(app, deps) });
}, 120_000);
afterAll(async () => h?.close());

const text = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

describe('a suspended site in the MCP tools', () => {
  it('its owner reads the suspension and the reason; a change is refused naming it', async () => {
    const { key } = await h.account();
    const published = await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: 'mcp-1', html: '<h1>x</h1>', slug: 'mcp-takedown' } });
    const { site } = await published.json();
    const suspend = await h.fetch('/_admin/site.suspend', {
      method: 'POST',
      json: { site: site.id, reason: 'copyright notice 2026-118' },
      headers: { 'x-svc-admin-token': ADMIN_TOKEN },
    });
    expect(suspend.status).toBe(200);

    const client = new Client({ name: 'operator-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${h.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
    const got = (await client.callTool({ name: 'account_get_app', arguments: { appId: site.id } })) as CallToolResult;
    expect(got.isError).toBeFalsy();
    expect(text(got)).toContain('copyright notice 2026-118');
    expect(text(got)).toContain('"suspension":{"cause":"site"');
    const listed = (await client.callTool({ name: 'account_list_apps', arguments: {} })) as CallToolResult;
    expect(text(listed)).toContain('copyright notice 2026-118');
    const change = (await client.callTool({
      name: 'account_update_app',
      arguments: { appId: site.id, visibility: 'private', password: 'hidden-now' },
    })) as CallToolResult;
    expect(change.isError).toBe(true);
    expect(text(change)).toContain('copyright notice 2026-118');
    await client.close();
  });
});
