import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { x402Client } from '@x402/core/client';
import { registerExactEvmScheme } from '@x402/evm/exact/client';
import type { PrivateKeyAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mountHostedMcp } from '../../cli/hosted-mcp.js';
import { loadMcpConfig } from '../../mcp/config.js';
import { startMcpHttp } from '../../mcp/http.js';
import { createMcpContext } from '../../mcp/server.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { devChain, fundedWallet } from '../payments/helpers.js';
import { answeringClient, BIN } from './helpers.js';
import { type Rpc2026Options, type RpcAnswer, rpc2026 as rawRpc2026 } from './rpc-2026.js';

// Both MCP eras on every face, driven by the official v2 client (@modelcontextprotocol/client) in each
// of its modes: `legacy` (the 2025 initialize handshake), `auto` (server/discover, falling back) and
// pinned to 2026-07-28 (no fallback). The 2025 clients' own tests are the other test files, unchanged.
const MODES = [
  ['legacy', { mode: 'legacy' }, 'legacy'],
  ['auto', { mode: 'auto' }, 'modern'],
  ['pinned 2026-07-28', { mode: { pin: '2026-07-28' } }, 'modern'],
] as const;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-mcp-eras-'));
let h: Harness;
let key: string;
let payer: PrivateKeyAccount;
let svcMcpHttp: { url: string; close(): Promise<void> };

beforeAll(async () => {
  h = await startHarness('pglite', { SVC_X402_MODE: 'dev' }, { mount: (app, deps) => mountHostedMcp(app, deps) });
  payer = await fundedWallet(h, 1_000_000n);
  key = (await h.account()).key;
  const ctx = await createMcpContext(loadMcpConfig(svcMcpEnv()));
  svcMcpHttp = await startMcpHttp(ctx, 0);
}, 120_000);
afterAll(async () => {
  await svcMcpHttp?.close();
  await h?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** svc-mcp with the account's key and no wallet: the account's tools, deploy_site with progress. */
const svcMcpEnv = (): Record<string, string> => ({
  SVC_URL: h.url,
  SVC_API_KEY: key,
  SVC_SPEND_LEDGER: path.join(dir, 'ledger.json'),
  SVC_TABLE_KEYS_FILE: 'off',
  SVC_TOOLSETS: 'default,advanced',
});

type Mode = (typeof MODES)[number][1];

async function connect(mode: Mode, transport: StreamableHTTPClientTransport | StdioClientTransport): Promise<Client> {
  const client = new Client({ name: 'eras-test', version: '1.0.0' }, { versionNegotiation: mode } as never);
  await client.connect(transport);
  return client;
}

const FACES = {
  'hosted /mcp (personal key)': (mode: Mode) =>
    connect(
      mode,
      new StreamableHTTPClientTransport(new URL(`${h.url}/mcp?toolsets=default,advanced`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }),
    ),
  'hosted /mcp/x402': (mode: Mode) => connect(mode, new StreamableHTTPClientTransport(new URL(`${h.url}/mcp/x402?toolsets=default,advanced`))),
  'svc-mcp over streamable HTTP': (mode: Mode) => connect(mode, new StreamableHTTPClientTransport(new URL(svcMcpHttp.url))),
  'svc-mcp over stdio': (mode: Mode) =>
    connect(
      mode,
      new StdioClientTransport({
        command: process.execPath,
        args: [BIN],
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...svcMcpEnv() },
        stderr: 'ignore',
      }),
    ),
};

const textOf = (r: { content?: unknown }) => ((r.content ?? []) as { type: string; text?: string }[]).map((c) => c.text ?? '').join('\n');

describe.each(Object.entries(FACES))('%s', (_face, open) => {
  it.each(MODES)(
    'serves the v2 client in %s mode: era, tools, a free call, a view',
    async (_mode, mode, era) => {
      const client = await open(mode);
      try {
        expect(client.getProtocolEra()).toBe(era);
        if (era === 'modern') expect(client.getServerVersion()).toMatchObject({ name: 'svc' });
        const { tools } = await client.listTools();
        expect(tools.map((t) => t.name)).toContain('list_pricing');
        const priced = await client.callTool({ name: 'list_pricing', arguments: {} });
        expect(priced.isError).toBeFalsy();
        expect(JSON.parse(textOf(priced))).toHaveProperty('pricing');
        const { resources } = await client.listResources();
        expect(resources.map((r) => r.uri)).toContain('ui://svc/site');
        const { contents } = await client.readResource({ uri: 'ui://svc/site' });
        expect((contents[0] as { text: string }).text).toMatch(/^<!doctype html>/);
      } finally {
        await client.close();
      }
    },
    60_000,
  );
});

describe('server/discover', () => {
  it.each(['/mcp', '/mcp/x402'])('answers on %s with the 2026-07-28 revision, the server and its capabilities', async (pathname) => {
    const { result } = await rpc2026(pathname, 'server/discover', {}, { signedIn: pathname === '/mcp' });
    expect(result).toMatchObject({
      resultType: 'complete',
      supportedVersions: expect.arrayContaining(['2026-07-28']),
      capabilities: { tools: {}, resources: {} },
    });
    expect(result?._meta?.['io.modelcontextprotocol/serverInfo']).toMatchObject({ name: 'svc' });
  });
});

describe('progress and paid calls on 2026-07-28', () => {
  const PINNED = { mode: { pin: '2026-07-28' } } as const;

  it.each(['svc-mcp over streamable HTTP', 'svc-mcp over stdio'] as const)(
    '%s: deploy_site reports progress to a pinned client',
    async (face) => {
      const client = await FACES[face](PINNED);
      try {
        const seen: number[] = [];
        const r = await client.callTool(
          {
            name: 'deploy_site',
            arguments: {
              appName: `eras-${face.includes('stdio') ? 'stdio' : 'http'}`,
              files: [{ path: 'index.html', content: '<h1>eras</h1>' }],
              visibility: 'public',
            },
          },
          { onprogress: (p: { progress: number }) => seen.push(p.progress) } as never,
        );
        expect(r.isError, textOf(r)).toBeFalsy();
        // Two steps, two notifications. The v2 client handles a notification a tick after a response
        // read with it, so over stdio the last one can come after the call has resolved: one at least.
        expect(seen.length).toBeGreaterThan(0);
        expect(seen).toEqual([...seen].sort((a, b) => a - b));
      } finally {
        await client.close();
      }
    },
    60_000,
  );

  it.each([
    ['/mcp/x402', undefined],
    ['/mcp', 'key'],
  ] as const)(
    '%s: a paid tool asks for payment, is paid once through _meta, and a replay charges nothing',
    async (pathname, signedIn) => {
      const headers = signedIn ? { authorization: `Bearer ${key}` } : undefined;
      const client = await connect(PINNED, new StreamableHTTPClientTransport(new URL(`${h.url}${pathname}?toolsets=apps`), { requestInit: { headers } }));
      try {
        const args = { appName: `eras-paid-${signedIn ? 'key' : 'x402'}`, html: '<p>paid</p>' };
        const unpaid = await client.callTool({ name: 'create_app_from_html', arguments: args });
        expect(unpaid.isError).toBe(true);
        const required = unpaid.structuredContent as { accepts: { amount: string; payTo: string }[] };
        const price = BigInt(required.accepts[0]!.amount);
        const signer = new x402Client();
        registerExactEvmScheme(signer, { signer: payer as never });
        const payment = await signer.createPaymentPayload(required as never);
        const before = await devChain(h).balanceOf(payer.address);
        const paid = await client.callTool({ name: 'create_app_from_html', arguments: args, _meta: { 'x402/payment': payment } });
        expect(paid.isError, textOf(paid)).toBeFalsy();
        expect(paid._meta?.['x402/payment-response']).toMatchObject({ success: true });
        expect(before - (await devChain(h).balanceOf(payer.address))).toBe(price);
        const replay = await client.callTool({
          name: 'create_app_from_html',
          arguments: { ...args, appName: `${args.appName}-again` },
          _meta: { 'x402/payment': payment },
        });
        expect(replay.isError).toBe(true);
        expect(before - (await devChain(h).balanceOf(payer.address))).toBe(price);
      } finally {
        await client.close();
      }
    },
    60_000,
  );
});

describe('input_required: a destructive tool asks the person first (hosted /mcp, 2026-07-28)', () => {
  const open = async (answer?: 'accept' | 'decline') => {
    const { client, asked } = answeringClient(
      'eras-ask',
      { mode: { pin: '2026-07-28' } },
      answer && (() => (answer === 'accept' ? { action: 'accept', content: { confirm: true } } : { action: 'decline' })),
    );
    await client.connect(new StreamableHTTPClientTransport(new URL(`${h.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
    return { client, asked };
  };
  const publish = async (client: Client, appName: string) => {
    const r = await client.callTool({
      name: 'account_publish_app',
      arguments: { appName, requestId: appName, files: [{ path: 'index.html', content: '<p>x</p>' }] },
    });
    expect(r.isError, textOf(r)).toBeFalsy();
  };
  const exists = async (client: Client, appName: string) => !(await client.callTool({ name: 'account_get_app', arguments: { appId: appName } })).isError;

  it('declined: the person was asked, naming the app, and nothing was deleted; accepted: deleted', async () => {
    const { client: declining, asked } = await open('decline');
    await publish(declining, 'eras-keep-me');
    const kept = await declining.callTool({ name: 'account_delete_app', arguments: { appId: 'eras-keep-me' } });
    expect(textOf(kept)).toContain('declined. Nothing was done');
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain('eras-keep-me');
    expect(await exists(declining, 'eras-keep-me')).toBe(true);
    const { client: accepting } = await open('accept');
    const gone = await accepting.callTool({ name: 'account_delete_app', arguments: { appId: 'eras-keep-me' } });
    expect(gone.isError, textOf(gone)).toBeFalsy();
    expect(await exists(accepting, 'eras-keep-me')).toBe(false);
    await declining.close();
    await accepting.close();
  }, 60_000);

  it('a client that cannot be asked gets the tool as before (no question, the app deleted)', async () => {
    const { client } = await open();
    await publish(client, 'eras-no-ask');
    const gone = await client.callTool({ name: 'account_delete_app', arguments: { appId: 'eras-no-ask' } });
    expect(gone.isError, textOf(gone)).toBeFalsy();
    expect(await exists(client, 'eras-no-ask')).toBe(false);
    await client.close();
  }, 60_000);
});

/** One raw 2026-07-28 request to a hosted face (signed in with the account's key when asked): its JSON-RPC answer. */
async function rpc2026(
  pathname: string,
  method: string,
  params: Record<string, unknown> & { _meta?: Record<string, unknown> },
  options: Rpc2026Options & { signedIn?: boolean } = {},
): Promise<RpcAnswer> {
  const answer = await rawRpc2026(`${h.url}${pathname}`, method, params, { ...options, key: options.key ?? (options.signedIn ? key : undefined) });
  expect(answer.status).toBe(200);
  return answer;
}

describe('the x402 extension binding (org.x402/payment, 2026-07-28)', () => {
  const X402_EXT = { extensions: { 'org.x402/payment': {} } };
  const sign = async (required: unknown) => {
    const signer = new x402Client();
    registerExactEvmScheme(signer, { signer: payer as never });
    return signer.createPaymentPayload(required as never);
  };

  it.each(['/mcp/x402', '/mcp'])('%s lists the extension in server/discover', async (pathname) => {
    const { result } = await rpc2026(pathname, 'server/discover', {}, { signedIn: pathname === '/mcp' });
    expect(result?.capabilities).toMatchObject({ extensions: { 'org.x402/payment': {} } });
  });

  it.each([
    ['/mcp/x402', false],
    ['/mcp', true],
  ] as const)(
    '%s: advertised → payment_required with the v2 PaymentRequired and nothing runs; paid once through _meta; a replay charges nothing',
    async (pathname, signedIn) => {
      const call = (appName: string, payment?: unknown) =>
        rpc2026(
          `${pathname}?toolsets=apps`,
          'tools/call',
          { name: 'create_app_from_html', arguments: { appName, html: '<p>ext</p>' }, ...(payment ? { _meta: { 'x402/payment': payment } } : {}) },
          { capabilities: X402_EXT, signedIn },
        );
      const appName = `eras-ext-${signedIn ? 'key' : 'x402'}`;
      const unpaid = await call(appName);
      expect(unpaid.result).toMatchObject({
        resultType: 'payment_required',
        paymentRequired: { x402Version: 2, accepts: [expect.objectContaining({ scheme: 'exact', amount: expect.any(String), payTo: expect.any(String) })] },
      });
      expect(unpaid.result).not.toHaveProperty('isError');
      expect(unpaid.result).not.toHaveProperty('content');
      // Nothing ran: the app does not exist.
      expect((await fetch(`${h.url}/s/${appName}/`)).status).toBe(404);
      const required = unpaid.result!.paymentRequired as { accepts: { amount: string }[] };
      const payment = await sign(required);
      const before = await devChain(h).balanceOf(payer.address);
      const paid = await call(appName, payment);
      expect(paid.result).toMatchObject({ resultType: 'complete', _meta: { 'x402/payment-response': { success: true } } });
      expect(paid.result?.isError).toBeFalsy();
      expect(before - (await devChain(h).balanceOf(payer.address))).toBe(BigInt(required.accepts[0]!.amount));
      const replay = await call(`${appName}-again`, payment);
      expect(replay.result).toMatchObject({ resultType: 'payment_required', paymentRequired: { x402Version: 2 } });
      expect(replay.result?._meta?.['x402/payment-response']).toMatchObject({ success: false });
      expect(before - (await devChain(h).balanceOf(payer.address))).toBe(BigInt(required.accepts[0]!.amount));
    },
    60_000,
  );

  it('not advertised: the tool-result binding, marked complete on 2026-07-28; never payment_required', async () => {
    const { result } = await rpc2026('/mcp/x402?toolsets=apps', 'tools/call', {
      name: 'create_app_from_html',
      arguments: { appName: 'eras-no-ext', html: '<p>x</p>' },
    });
    expect(result).toMatchObject({ resultType: 'complete', isError: true, structuredContent: { x402Version: 2 } });
    expect(result).not.toHaveProperty('paymentRequired');
  });

  it('a free tool answers complete whether or not the extension is advertised', async () => {
    const { result } = await rpc2026('/mcp/x402?toolsets=default,advanced', 'tools/call', { name: 'list_pricing', arguments: {} }, { capabilities: X402_EXT });
    expect(result).toMatchObject({ resultType: 'complete' });
    expect(result?.isError).toBeFalsy();
  });
});

describe('the sealed requestState of a confirmation: neither forged nor replayed', () => {
  const ASKABLE = { elicitation: { form: {} } };
  let published = 0;
  const publish = async (appName: string) => {
    const { result } = await rpc2026(
      '/mcp',
      'tools/call',
      { name: 'account_publish_app', arguments: { appName, requestId: `${appName}-${++published}`, files: [{ path: 'index.html', content: '<p>x</p>' }] } },
      { signedIn: true },
    );
    expect(result?.isError, JSON.stringify(result)).toBeFalsy();
  };
  const remove = (appId: string, retry?: { requestState: string; action?: 'accept' | 'decline' }) =>
    rpc2026(
      '/mcp',
      'tools/call',
      {
        name: 'account_delete_app',
        arguments: { appId },
        ...(retry ? { requestState: retry.requestState, inputResponses: { answer: { action: retry.action ?? 'accept', content: { confirm: true } } } } : {}),
      },
      { capabilities: ASKABLE, signedIn: true },
    );
  const exists = async (appName: string) => {
    const { result } = await rpc2026('/mcp', 'tools/call', { name: 'account_get_app', arguments: { appId: appName } }, { signedIn: true });
    return !result?.isError;
  };
  const textOfResult = (r: Record<string, unknown> | undefined) => textOf(r as { content?: unknown });

  it('the first call asks (input_required, nothing deleted); the answer with its state deletes once; the same state again is refused', async () => {
    await publish('eras-sealed-a');
    const asked = await remove('eras-sealed-a');
    expect(asked.result).toMatchObject({ resultType: 'input_required', requestState: expect.any(String) });
    expect(JSON.stringify(asked.result?.inputRequests)).toContain('eras-sealed-a');
    expect(await exists('eras-sealed-a')).toBe(true);
    const requestState = asked.result!.requestState as string;
    const done = await remove('eras-sealed-a', { requestState });
    expect(done.result?.isError, textOfResult(done.result)).toBeFalsy();
    expect(await exists('eras-sealed-a')).toBe(false);
    await publish('eras-sealed-a');
    const replayed = await remove('eras-sealed-a', { requestState });
    expect(replayed.result?.isError).toBe(true);
    expect(textOfResult(replayed.result)).toContain('used already');
    expect(await exists('eras-sealed-a')).toBe(true);
  }, 60_000);

  it('a forged state, or one given for another app, deletes nothing', async () => {
    await publish('eras-sealed-b');
    await publish('eras-sealed-c');
    const asked = await remove('eras-sealed-b');
    const requestState = asked.result!.requestState as string;
    const [body, mac] = requestState.split('.');
    // The same approval with a later expiry, re-encoded: its MAC no longer matches.
    const sealed = JSON.parse(Buffer.from(body!, 'base64url').toString('utf8')) as { exp: number };
    const forged = `${Buffer.from(JSON.stringify({ ...sealed, exp: sealed.exp + 3_600_000 })).toString('base64url')}.${mac}`;
    const refusedForged = await remove('eras-sealed-b', { requestState: forged });
    expect(textOfResult(refusedForged.result)).toContain('not made by this service');
    const refusedOther = await remove('eras-sealed-c', { requestState });
    expect(textOfResult(refusedOther.result)).toContain('another call');
    expect(await exists('eras-sealed-b')).toBe(true);
    expect(await exists('eras-sealed-c')).toBe(true);
  }, 60_000);
});

describe('2026-07-28 servers are reused between requests, never a caller between them', () => {
  it('two accounts calling in turn each see only their own apps', async () => {
    const other = (await h.account()).key;
    const publish = (as: string, appName: string) =>
      rpc2026(
        '/mcp',
        'tools/call',
        { name: 'account_publish_app', arguments: { appName, requestId: appName, files: [{ path: 'index.html', content: '<p>x</p>' }] } },
        { key: as },
      );
    expect((await publish(key, 'eras-turns-first')).result?.isError).toBeFalsy();
    expect((await publish(other, 'eras-turns-second')).result?.isError).toBeFalsy();
    for (let i = 0; i < 6; i++) {
      const as = i % 2 === 0 ? key : other;
      const { result } = await rpc2026('/mcp', 'tools/call', { name: 'account_list_apps', arguments: {} }, { key: as });
      const listed = JSON.stringify(result?.structuredContent);
      expect(listed).toContain(as === key ? 'eras-turns-first' : 'eras-turns-second');
      expect(listed).not.toContain(as === key ? 'eras-turns-second' : 'eras-turns-first');
    }
  }, 60_000);
});
