import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mountHostedMcp } from '../../cli/hosted-mcp.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { interopBin } from '../interop/clients.js';
import { BIN } from './helpers.js';

// Two MCP clients other people wrote, driven as their users run them (their own commands, from the
// interop package test/interop): mcp-remote 0.15.1, the stdio-to-remote proxy that local-only hosts
// (Claude Desktop and its kin) put in front of a hosted server, a 2025-11-25 client; and the MCP
// Inspector 2.12.0's CLI (`mcp-inspector --cli`), on the official v2 client, which negotiates the
// revision itself (2026-07-28 where the server offers it). Process suite: both run as processes.

const run = promisify(execFile);
let h: Harness;
let key: string;
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-third-party-'));

beforeAll(async () => {
  h = await startHarness('pglite', {}, { mount: (app, deps) => mountHostedMcp(app, deps) });
  key = (await h.account()).key;
  // The interop package's first install (npm ci, 1–3 min) happens here, not inside a test's time.
  await interopBin('mcp-remote');
}, 600_000);
afterAll(async () => {
  await h?.close();
  fs.rmSync(home, { recursive: true, force: true });
});

const textOf = (r: unknown) => ((r as { content?: { type: string; text?: string }[] }).content ?? []).map((c) => c.text ?? '').join('\n');

describe('mcp-remote 0.15.1 in front of the hosted endpoints (MCP 2025-11-25)', () => {
  /** A host's stdio connection to mcp-remote, which connects to `url` with `headers`. */
  async function throughMcpRemote(url: string, headers: string[] = []): Promise<Client> {
    const mcpRemote = await interopBin('mcp-remote');
    const client = new Client({ name: 'host-behind-mcp-remote', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [mcpRemote, url, ...headers.flatMap((h) => ['--header', h]), '--transport', 'http-only'],
        // Its OAuth state (none used: a personal key in a header) goes to a folder of the test's.
        env: { PATH: process.env.PATH ?? '', HOME: home, MCP_REMOTE_CONFIG_DIR: path.join(home, '.mcp-auth') },
        stderr: 'ignore',
      }),
    );
    return client;
  }

  it('hosted /mcp with a personal key: the account tools listed and called', async () => {
    const client = await throughMcpRemote(`${h.url}/mcp`, [`Authorization:Bearer ${key}`]);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['account_publish_app', 'account_list_apps', 'table_query']));
      const published = await client.callTool({
        name: 'account_publish_app',
        arguments: { requestId: 'mcp-remote-1', html: '<h1>through mcp-remote</h1>', appName: 'via-mcp-remote' },
      });
      expect(published.isError, textOf(published)).toBeFalsy();
      const listed = await client.callTool({ name: 'account_list_apps', arguments: {} });
      expect(textOf(listed)).toContain('via-mcp-remote');
      expect(await (await fetch(`${h.url}/s/via-mcp-remote/`)).text()).toContain('through mcp-remote');
    } finally {
      await client.close();
    }
  }, 60_000);

  it('/mcp/x402 without a credential: the paid tools listed, a free one called', async () => {
    const client = await throughMcpRemote(`${h.url}/mcp/x402?toolsets=default,advanced`);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain('create_app_from_html');
      const priced = await client.callTool({ name: 'list_pricing', arguments: {} });
      expect(JSON.parse(textOf(priced))).toHaveProperty('pricing');
    } finally {
      await client.close();
    }
  }, 60_000);
});

// The Inspector 2.12.0 needs Node ≥ 22.19 (its engines); CI's full tier runs on Node 24.
const [major, minor] = process.versions.node.split('.').map(Number) as [number, number];
const inspectorRuns = major > 22 || (major === 22 && minor >= 19);

describe.skipIf(!inspectorRuns)(`the MCP Inspector 2.12.0 CLI${inspectorRuns ? '' : ' (skipped: needs Node ≥ 22.19)'}`, () => {
  /** `mcp-inspector --cli …` as a user types it; its JSON output. */
  async function inspector(args: string[]): Promise<Record<string, unknown>> {
    const bin = await interopBin('mcp-inspector');
    const { stdout } = await run(process.execPath, [bin, '--cli', ...args], {
      env: { PATH: process.env.PATH ?? '', HOME: home, MCP_CATALOG_PATH: path.join(home, 'mcp.json') },
      timeout: 60_000,
    });
    return JSON.parse(stdout) as Record<string, unknown>;
  }

  it('hosted /mcp with a personal key: tools/list and a tools/call', async () => {
    const url = `${h.url}/mcp`;
    const header = ['--header', `Authorization: Bearer ${key}`];
    const listed = await inspector([url, ...header, '--method', 'tools/list']);
    expect((listed.tools as { name: string }[]).map((t) => t.name)).toEqual(expect.arrayContaining(['account_publish_app', 'table_query']));
    const called = await inspector([url, ...header, '--method', 'tools/call', '--tool-name', 'account_list_apps']);
    expect(called.isError).toBeFalsy();
  }, 90_000);

  it('svc-mcp over stdio: tools/list and a tools/call', async () => {
    const args = [
      process.execPath,
      BIN,
      '-e',
      `SVC_URL=${h.url}`,
      '-e',
      `SVC_API_KEY=${key}`,
      '-e',
      `SVC_SPEND_LEDGER=${path.join(home, 'ledger.json')}`,
      '-e',
      'SVC_TABLE_KEYS_FILE=off',
    ];
    const listed = await inspector([...args, '--method', 'tools/list']);
    expect((listed.tools as { name: string }[]).map((t) => t.name)).toEqual(expect.arrayContaining(['deploy_site', 'upload_dataset']));
    const called = await inspector([
      ...args,
      '--method',
      'tools/call',
      '--tool-name',
      'deploy_site',
      '--tool-arg',
      'appName=via-inspector',
      '--tool-arg',
      'files=[{"path":"index.html","content":"<h1>inspector</h1>"}]',
    ]);
    expect(called.isError, JSON.stringify(called)).toBeFalsy();
    expect(await (await fetch(`${h.url}/s/via-inspector/`)).text()).toContain('inspector');
  }, 90_000);
});
