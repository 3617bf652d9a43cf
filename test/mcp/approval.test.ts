import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMcpConfig } from '../../mcp/config.js';
import { startMcpHttp } from '../../mcp/http.js';
import { createMcpContext } from '../../mcp/server.js';
import type { DevFacilitator } from '../../service/payments/facilitator.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { answeringClient, BIN } from './helpers.js';

// Approval above a line (SVC_APPROVAL_ABOVE), with the official v2 client answering the person's
// part: over stdio on MCP 2025 (an elicitation/create request) and on 2026-07-28 (input_required, on
// stdio and on svc-mcp's streamable HTTP), on the dev chain with exact balance deltas.
const PRICE = 7000n; // create_app_from_html, atomic USDC
type Answer = 'accept' | 'accept-unticked' | 'decline' | 'cancel';
type Mode = { mode: 'legacy' } | { mode: { pin: '2026-07-28' } };
const LEGACY: Mode = { mode: 'legacy' };
const PINNED: Mode = { mode: { pin: '2026-07-28' } };

let h: Harness;
let chain: DevFacilitator;
let dir: string;
const key = generatePrivateKey();
const payer = privateKeyToAccount(key).address;
let n = 0;
const unique = (p: string) => `${p}-${Date.now().toString(36)}-${++n}`;
const balance = () => chain.balanceOf(payer);
const textOf = (r: { content?: unknown }) => ((r.content ?? []) as { text?: string }[]).map((c) => c.text ?? '').join('\n');

const envWith = (extra: Record<string, string>): Record<string, string> => ({
  SVC_URL: h.url,
  SVC_WALLET_PRIVATE_KEY: key,
  SVC_RPC_URL: chain.rpcUrl,
  SVC_SPEND_LEDGER: path.join(dir, `${unique('ledger')}.json`),
  SVC_TABLE_KEYS_FILE: 'off',
  SVC_APPROVAL_ABOVE: '0.005',
  ...extra,
});

/** A v2 client that answers every question with `answer` (none: it declares no elicitation), and the questions it got. */
const clientAnswering = (mode: Mode, answer?: Answer) =>
  answeringClient(
    'approval-test',
    mode,
    answer &&
      (() => (answer === 'accept' || answer === 'accept-unticked' ? { action: 'accept', content: { approve: answer === 'accept' } } : { action: answer })),
  );

/** Spawns svc-mcp (bin/svc-mcp.mjs) with the test's settings and `env`, and connects `client` to it over stdio. */
const spawnFor = (client: Client, env: Record<string, string> = {}) =>
  client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [BIN],
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...envWith(env) },
      stderr: 'ignore',
    }),
  );

async function overStdio(mode: Mode, answer?: Answer, env: Record<string, string> = {}) {
  const { client, asked } = clientAnswering(mode, answer);
  await spawnFor(client, env);
  return { client, asked, close: () => client.close() };
}

async function overHttp(mode: Mode, answer?: Answer) {
  const ctx = await createMcpContext(loadMcpConfig(envWith({})));
  const server = await startMcpHttp(ctx, 0);
  const { client, asked } = clientAnswering(mode, answer);
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
  const close = async () => {
    await client.close();
    await server.close();
  };
  return { client, asked, close };
}

const createApp = (client: Client, appName: string) =>
  client.callTool({ name: 'create_app_from_html', arguments: { appName, html: '<p>approved</p>' } }) as Promise<{ isError?: boolean; content?: unknown }>;
const served = async (appName: string) => (await fetch(`${h.url}/s/${appName}/`)).status === 200;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-mcp-approval-'));
  h = await startHarness('pglite', { SVC_X402_MODE: 'dev' });
  chain = h.deps.facilitator as DevFacilitator;
  await chain.mint(payer, 1_000_000n);
}, 120_000);
afterAll(async () => {
  await h?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe.each([
  ['stdio, MCP 2025 (elicitation/create)', (answer?: Answer) => overStdio(LEGACY, answer)],
  ['stdio, MCP 2026-07-28 (input_required)', (answer?: Answer) => overStdio(PINNED, answer)],
  ['streamable HTTP, MCP 2026-07-28 (input_required)', (answer?: Answer) => overHttp(PINNED, answer)],
] as const)('%s', (_face, open) => {
  it('accepted: the person is asked once, naming the tool, the app, the price and the caps left; paid exactly once', async () => {
    const { client, asked, close } = await open('accept');
    try {
      const appName = unique('approved');
      const before = await balance();
      const r = await createApp(client, appName);
      expect(r.isError, textOf(r)).toBeFalsy();
      expect(asked).toHaveLength(1);
      expect(asked[0]).toContain('Pay 0.007 USDC');
      expect(asked[0]).toContain('create_app_from_html');
      expect(asked[0]).toContain(appName);
      expect(asked[0]).toMatch(/caps leave after it: this session 0\.993, today 4\.993 USDC/);
      expect(before - (await balance())).toBe(PRICE);
      expect(await served(appName)).toBe(true);
    } finally {
      await close();
    }
  }, 60_000);

  it.each(['decline', 'cancel', 'accept-unticked'] as const)(
    '%s: nothing is signed, nothing runs, the tool says so',
    async (answer) => {
      const { client, asked, close } = await open(answer);
      try {
        const appName = unique(answer);
        const before = await balance();
        const r = await createApp(client, appName);
        expect(r.isError).toBe(true);
        expect(textOf(r)).toContain('Nothing was signed or paid');
        expect(textOf(r)).toContain('SVC_APPROVAL_ABOVE');
        expect(asked).toHaveLength(1);
        expect(await balance()).toBe(before);
        expect(await served(appName)).toBe(false);
      } finally {
        await close();
      }
    },
    60_000,
  );

  it('a client that cannot be asked is refused above the line, with nothing signed', async () => {
    const { client, close } = await open();
    try {
      const before = await balance();
      const r = await createApp(client, unique('unasked'));
      expect(r.isError).toBe(true);
      expect(textOf(r)).toMatch(/cannot ask the person.*Nothing was signed or paid.*SVC_APPROVAL_ABOVE, their setting/s);
      expect(await balance()).toBe(before);
    } finally {
      await close();
    }
  }, 60_000);
});

describe('the line itself', () => {
  it('a payment at the line is not asked; wallet_status and quote show the line', async () => {
    const { client, asked } = await overStdio(LEGACY, 'decline', { SVC_APPROVAL_ABOVE: '0.007' });
    try {
      const before = await balance();
      const r = await createApp(client, unique('at-line'));
      expect(r.isError, textOf(r)).toBeFalsy();
      expect(asked).toHaveLength(0);
      expect(before - (await balance())).toBe(PRICE);
      const status = (await client.callTool({ name: 'wallet_status', arguments: {} })).structuredContent as { approvalAbove: string };
      expect(status.approvalAbove).toBe('0.007');
      const quote = (
        await client.callTool({ name: 'quote', arguments: { tool: 'deploy_site', args: { appName: 'q', files: [{ path: 'index.html', content: 'x' }] } } })
      ).structuredContent as { quotes: { asksPerson: boolean }[] };
      expect(quote.quotes[0]!.asksPerson).toBe(true);
    } finally {
      await client.close();
    }
  }, 60_000);

  it('a 2025 client declaring a bare elicitation capability (form, before modes) is asked over stdio', async () => {
    const { client, asked } = answeringClient('approval-bare', LEGACY, () => ({ action: 'accept', content: { approve: true } }), {});
    await spawnFor(client);
    try {
      const before = await balance();
      const r = await createApp(client, unique('bare'));
      expect(r.isError, textOf(r)).toBeFalsy();
      expect(asked).toHaveLength(1);
      expect(before - (await balance())).toBe(PRICE);
    } finally {
      await client.close();
    }
  }, 60_000);

  it('a payment the caps refuse anyway is refused before the person is asked', async () => {
    const { client, asked } = await overStdio(LEGACY, 'accept', { SVC_MAX_USDC_PER_CALL: '0.006' });
    try {
      const before = await balance();
      const r = await createApp(client, unique('capped'));
      expect(r.isError).toBe(true);
      expect(textOf(r)).toContain('per-call cap');
      expect(asked).toHaveLength(0);
      expect(await balance()).toBe(before);
    } finally {
      await client.close();
    }
  }, 60_000);

  it('a 2025 client over stateless HTTP cannot be asked: refused, nothing signed', async () => {
    const { client, asked, close } = await overHttp(LEGACY, 'accept');
    try {
      const before = await balance();
      const r = await createApp(client, unique('http-2025'));
      expect(textOf(r)).toContain('has no way back to the person');
      expect(asked).toHaveLength(0);
      expect(await balance()).toBe(before);
    } finally {
      await close();
    }
  }, 60_000);

  it('deploy_site asks once for its whole quoted total, then pays each step', async () => {
    const { client, asked } = await overStdio(LEGACY, 'accept');
    try {
      const before = await balance();
      const appName = unique('deploy');
      const r = await client.callTool({
        name: 'deploy_site',
        arguments: {
          appName,
          files: [
            { path: 'index.html', content: '<h1>deployed</h1>' },
            { path: 'app.css', content: 'h1{}' },
          ],
        },
      });
      expect(r.isError, textOf(r)).toBeFalsy();
      expect(asked).toHaveLength(1);
      const total = /Pay (\d+\.\d+) USDC/.exec(asked[0]!)?.[1];
      expect(asked[0]).toContain('deploy_site: creates an app');
      expect(asked[0]).toContain('with 2 files');
      const paid = before - (await balance());
      expect(paid).toBeGreaterThan(PRICE);
      expect(Number(total) * 1e6).toBeGreaterThanOrEqual(Number(paid));
      expect(await served(appName)).toBe(true);
    } finally {
      await client.close();
    }
  }, 60_000);
});
