import { spawn } from 'node:child_process';
import fs from 'node:fs';
import nodeHttp from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentAction } from '../../shared/agent-api/action.js';
import { AGENT_ACTIONS, toolNameOf } from '../../shared/agent-api/catalogue.js';
import { call, connectHttp, connectStdio, text } from './helpers.js';

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
  it.each(['stdio', 'http'] as const)('lists every catalogue action with annotations, price and output schema (%s)', async (kind) => {
    const client = kind === 'stdio' ? stdio : http.client;
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    for (const a of catalogue) {
      const t = byName.get(toolNameOf(a));
      expect(t, toolNameOf(a)).toBeDefined();
      expect(t!.annotations).toMatchObject({ readOnlyHint: a.readOnly, destructiveHint: a.destructive, idempotentHint: a.idempotent, openWorldHint: true });
      expect(t!._meta).toMatchObject({ 'svc/action': a.name, 'svc/price': a.price, 'svc/currency': 'USDC' });
      expect(t!.outputSchema?.type).toBe('object');
      if (a.price !== '0') {
        expect(t!.description).toContain(`Price: ${a.price} USDC`);
        expect(Object.keys(t!.inputSchema.properties ?? {})).toEqual(expect.arrayContaining(['dryRun', 'maxPrice']));
      }
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
    // table_query takes every Table API GET parameter of the spec.
    const q = Object.keys(byName.get('table_query')!.inputSchema.properties ?? {});
    expect(q).toEqual(
      expect.arrayContaining([
        'limit',
        'offset',
        'includeTotal',
        'field',
        'value',
        'filter',
        'filterValue',
        'sortField',
        'sortDir',
        'q',
        'searchFields',
        'dateField',
        'dateFrom',
        'dateTo',
        'fields',
        'columns',
        'compact',
        'aggregate',
        'aggregateField',
        'groupBy',
        'bbox',
        'longitudeField',
        'latitudeField',
      ]),
    );
    expect(byName.get('table_delete_record')!.annotations).toMatchObject({ destructiveHint: true, readOnlyHint: false });
  });

  it('SVC_READ_ONLY=1 keeps only tools that can neither write nor pay', async () => {
    const ro = await connectHttp({ ...env, SVC_READ_ONLY: '1' });
    try {
      const names = (await ro.client.listTools()).tools.map((t) => t.name).sort();
      expect(names).toEqual([
        'describe_api',
        'list_apps',
        'list_pricing',
        'list_receipts',
        'quote',
        'suggest_site_name',
        'table_get_record',
        'table_query',
        'table_schema',
        'wallet_status',
      ]);
      const r = await call(ro.client, 'create_app_from_html', { name: 'x', html: '<p>x</p>' });
      expect(r.isError).toBe(true);
    } finally {
      await ro.close();
    }
  });

  it('without a wallet a paid tool refuses with an actionable sentence, and dryRun quotes', async () => {
    const r = await call(stdio, 'create_app_from_html', { name: 'x', html: '<p>x</p>' });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/no wallet is configured; nothing was paid\. Set SVC_WALLET_PRIVATE_KEY/);
    const q = await call(stdio, 'publish_app', { siteId: 'abc', dryRun: true });
    expect(q.isError).toBeFalsy();
    expect(q.structuredContent).toMatchObject({ dryRun: true, quote: { action: 'x402.publish_app', price: '0.002', allowed: false, walletConfigured: false } });
  });

  it('bad arguments come back as a tool error naming the field', async () => {
    const r = await call(stdio, 'create_app_from_html', { html: '<p>x</p>' });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/name/);
  });

  it('an unreachable service is an error result, not a crash', async () => {
    const r = await call(http.client, 'suggest_site_name');
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/suggest_site_name|fetch failed|did not answer/);
  });

  it('resources: svc://pricing, svc://receipts and svc://wallet', async () => {
    const { resources } = await http.client.listResources();
    expect(resources.map((r) => r.uri).sort()).toEqual(['svc://pricing', 'svc://receipts', 'svc://wallet']);
    const pricing = JSON.parse(((await http.client.readResource({ uri: 'svc://pricing' })).contents[0] as { text: string }).text);
    expect(pricing.source).toBe('catalogue');
    expect(pricing.pricing).toContainEqual(expect.objectContaining({ action: 'x402.create_app_from_html', price: '0.007' }));
    const wallet = JSON.parse(((await http.client.readResource({ uri: 'svc://wallet' })).contents[0] as { text: string }).text);
    expect(wallet).toMatchObject({ configured: false, caps: { perCall: '0.05', perSession: '1', perDay: '5', total: null } });
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

  it('passes @modelcontextprotocol/conformance 0.1.13: server-initialize, ping, tools-list, dns-rebinding-protection', async () => {
    const bin = path.resolve(import.meta.dirname, '../../node_modules/.bin/conformance');
    const url = http.url.replace('127.0.0.1', 'localhost');
    for (const scenario of ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection']) {
      const out = await new Promise<{ code: number | null; output: string }>((resolve) => {
        const p = spawn(bin, ['server', '--url', url, '--scenario', scenario], { stdio: ['ignore', 'pipe', 'pipe'] });
        let output = '';
        p.stdout.on('data', (d: Buffer) => (output += d));
        p.stderr.on('data', (d: Buffer) => (output += d));
        p.on('close', (code) => resolve({ code, output }));
      });
      expect(out.output, scenario).toMatch(/Passed: (\d+)\/\1, 0 failed/);
      expect(out.code, `${scenario}\n${out.output}`).toBe(0);
    }
  }, 120_000);
});
