import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mountHostedMcp } from '../../cli/hosted-mcp.js';
import { builtSvcMcpPackage } from '../../cli/svc-mcp-package.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { call, text } from '../mcp/helpers.js';

// A user of a hosted svc runs the local MCP server (a wallet with caps, the tools that read their
// disk) with the one command the hosted endpoint gives: npx, from the service itself, no registry.
// The package is made by the build (bin/pack-svc-mcp.mjs); `npm install` / `npm ci` build.
let h: Harness;
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-mcp-package-'));
beforeAll(async () => {
  h = await startHarness('pglite', {}, { mount: (app, deps) => mountHostedMcp(app, deps) });
}, 60_000);
afterAll(async () => {
  await h?.close();
  fs.rmSync(work, { recursive: true, force: true });
});

describe('the svc-mcp package a running svc serves', () => {
  it('/mcp/svc-mcp.tgz names the current build, whose bytes match the digest in its name; another name is a 404', async () => {
    const pkg = builtSvcMcpPackage();
    expect(pkg, 'dist/ has no svc-mcp package: run npm run build').not.toBeNull();
    const moved = await fetch(`${h.url}/mcp/svc-mcp.tgz`, { redirect: 'manual' });
    expect(moved.status).toBe(302);
    expect(moved.headers.get('location')).toBe(`/mcp/${pkg!.file}`);
    const res = await fetch(`${h.url}/mcp/${pkg!.file}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/gzip');
    expect(res.headers.get('cache-control')).toContain('immutable');
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.length).toBe(pkg!.bytes);
    const digest = createHash('sha256').update(bytes).digest('hex');
    expect(pkg!.file).toBe(`svc-mcp-${pkg!.file.split('-')[2]}-${digest.slice(0, 12)}.tgz`);
    const stale = await fetch(`${h.url}/mcp/svc-mcp-0.0.1-000000000000.tgz`);
    expect(stale.status).toBe(404);
    expect(((await stale.json()) as { error: { message: string } }).error.message).toContain('/mcp/svc-mcp.tgz names the current one');
  });

  it("the hosted endpoint's refusal of deploy_site gives the command, and that command runs svc-mcp against this service", async () => {
    const hosted = new Client({ name: 'package-test', version: '1.0.0' });
    const { key } = await h.account();
    await hosted.connect(new StreamableHTTPClientTransport(new URL(`${h.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
    let command: string;
    try {
      const refused = text(await call(hosted, 'deploy_site', {}));
      const base = h.config.baseUrl;
      const said = refused.match(/the local MCP server with a wallet: (SVC_URL=\S+ npx -y -p \S+ svc-mcp)\)/);
      expect(said, refused).not.toBeNull();
      command = said![1]!;
      expect(command).toBe(`SVC_URL=${base} npx -y -p ${base}/mcp/${builtSvcMcpPackage()!.file} svc-mcp`);
    } finally {
      await hosted.close();
    }
    // Run it as said (the harness listens on h.url; the config's base URL may name another host),
    // with an npm cache of its own, so the package comes from this service and nowhere else.
    const [, env, ...args] = command.match(/^SVC_URL=(\S+) npx (.+)$/)!;
    expect(env).toBe(h.config.baseUrl);
    const transport = new StdioClientTransport({
      command: 'npx',
      args: args[0]!.split(' ').map((a) => a.replace(h.config.baseUrl, h.url)),
      env: {
        PATH: process.env.PATH ?? '',
        HOME: work,
        SVC_URL: h.url,
        npm_config_cache: path.join(work, 'npm-cache'),
        npm_config_update_notifier: 'false',
        npm_config_offline: 'false',
      },
      stderr: 'pipe',
    });
    const local = new Client({ name: 'package-test', version: '1.0.0' });
    await local.connect(transport);
    try {
      expect(local.getServerVersion()?.name).toBe('svc');
      const tools = (await local.listTools()).tools.map((t) => t.name);
      expect(tools).toEqual(expect.arrayContaining(['deploy_site', 'upload_dataset', 'wallet_status']));
      // A free call answered by this service.
      const suggested = await call(local, 'suggest_site_name', {});
      expect(suggested.isError, text(suggested)).toBeFalsy();
      expect((suggested.structuredContent as { name: string }).name).toMatch(/^[a-z0-9]+(-[a-z0-9]+)*$/);
    } finally {
      await local.close();
    }
    // npx installed the package this service served (in the cache given above), with nothing beside it.
    const npx = path.join(work, 'npm-cache', '_npx');
    const installs = fs.readdirSync(npx).map((d) => path.join(npx, d, 'node_modules'));
    expect(installs.map((m) => fs.readdirSync(m).filter((n) => !n.startsWith('.')))).toEqual([['svc-agent-host-mcp']]);
    const manifest = JSON.parse(fs.readFileSync(path.join(installs[0]!, 'svc-agent-host-mcp', 'package.json'), 'utf8'));
    expect(manifest).toMatchObject({ bin: { 'svc-mcp': 'svc-mcp.mjs' } });
    expect(manifest.dependencies).toBeUndefined();
  }, 180_000);
});
