import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, describe, expect, it } from 'vitest';
import { AGENT_ACTIONS, toolNameOf } from '../../shared/agent-api/catalogue.js';
import { defaultToolsets, toolsetOf } from '../../mcp/toolsets.js';
import { freePort } from '../helpers/ports.js';

describe('npm start serves the MCP server beside the service', { timeout: 180_000 }, () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-serve-mcp-'));
  let child: ChildProcess | undefined;
  afterAll(() => {
    child?.kill('SIGTERM');
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('announces the MCP URL, which lists every catalogue tool and answers a free call', async () => {
    const [port, mcpPort] = [await freePort(), await freePort()];
    child = spawn(process.execPath, ['bin/svc.mjs', 'serve'], {
      env: {
        ...process.env,
        SVC_DATA_DIR: dataDir,
        PORT: String(port),
        SVC_BASE_URL: `http://127.0.0.1:${port}`,
        SVC_MCP_PORT: String(mcpPort),
        SVC_LOG_LEVEL: 'warn',
        SVC_WALLET_PRIVATE_KEY: '',
        SVC_WALLET_KEY_FILE: '',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let banner = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no banner:\n${banner}`)), 150_000);
      child!.stderr!.on('data', (d: Buffer) => {
        banner += d.toString();
        if (banner.includes('Next steps')) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    expect(banner).toContain(`MCP:      http://127.0.0.1:${mcpPort}/mcp (streamable HTTP, loopback; no wallet: free tools only)`);

    const client = new Client({ name: 'test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${mcpPort}/mcp`)));
    const names = (await client.listTools()).tools.map((t) => t.name);
    // Every catalogue tool of the default toolsets (a wallet's: advanced and versions are asked for by name).
    const listedByDefault = defaultToolsets({ wallet: false, apiKey: false });
    for (const action of AGENT_ACTIONS) if (listedByDefault.includes(toolsetOf(toolNameOf(action)))) expect(names).toContain(toolNameOf(action));
    const suggestion = await client.callTool({ name: 'suggest_site_name', arguments: {} });
    expect(suggestion.isError).toBeFalsy();
    expect((suggestion.structuredContent as { name: string }).name).toMatch(/^[a-z0-9-]+$/);
    const paid = await client.callTool({ name: 'create_app_from_html', arguments: { appName: 'nope', html: '<p/>' } });
    expect(paid.isError).toBe(true);
    expect(JSON.stringify(paid.content)).toContain('no wallet is configured; nothing was paid');
    // What to change is named as this endpoint is configured: the service's environment, not svc-mcp's.
    const advanced = await client.callTool({ name: 'list_pricing', arguments: {} });
    expect(advanced.isError).toBe(true);
    expect(JSON.stringify(advanced.content)).toContain(
      'ask the user to start the service (npm start, svc serve) with SVC_TOOLSETS=apps,tables,datasets,wallet,advanced',
    );
    await client.close();

    // The hosted endpoint on the service's own port asks remote clients to sign in.
    const base = banner.match(/svc is running at (\S+)/)![1];
    expect(banner).toContain(`hosted:   ${base}/mcp`);
    const hosted = await fetch(`${base}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(hosted.status).toBe(401);
    expect(hosted.headers.get('www-authenticate')).toContain(`resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`);
  });
});
