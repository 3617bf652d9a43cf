import fs from 'node:fs';
import nodeHttp from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { spawnSync } from 'node:child_process';
import { x402Client } from '@x402/core/client';
import { registerExactEvmScheme } from '@x402/evm/exact/client';
import { wrapFetchWithPayment } from '@x402/fetch';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { gzipSync } from 'node:zlib';
import { UI_EXTENSION, VIEW_MIME_TYPE, VIEWS } from '../mcp/views/views.js';
import { freePort, profileFlags, spawnService, UNREACHED_LIMITS, waitForHttp } from './lib.js';

/**
 * MCP overhead: the same free action (x402.list_pricing, GET /api/x402/pricing) called
 *   1. directly over HTTP with fetch (the reference),
 *   2. as the MCP tool `list_pricing` through the real SDK client over stdio (spawned svc-mcp),
 *   3. the same tool over streamable HTTP (svc-mcp --http).
 * Sequential calls, one at a time, as an agent makes them. Prints p50/p95/mean and the ratio to direct.
 */
const CALLS = 300;
const WARMUP = 20;

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

interface Figures {
  p50: number;
  p95: number;
  mean: number;
  perSec: number;
}

/**
 * Interleaved rounds (direct, stdio, http, direct, …) so machine load and JIT warm-up hit every path
 * alike; figures are over all calls of a path.
 */
async function measureInterleaved(paths: (() => Promise<void>)[], rounds = 6): Promise<Figures[]> {
  return measureInterleavedN(paths, CALLS, rounds, WARMUP);
}

async function measureInterleavedN(paths: (() => Promise<void>)[], calls: number, rounds = 6, warmup = 3): Promise<Figures[]> {
  for (const fn of paths) for (let i = 0; i < warmup; i++) await fn();
  const times: number[][] = paths.map(() => []);
  const busy: number[] = paths.map(() => 0);
  const per = Math.ceil(calls / rounds);
  for (let r = 0; r < rounds; r++) {
    for (const [i, fn] of paths.entries()) {
      const start = performance.now();
      for (let k = 0; k < per; k++) {
        const s = performance.now();
        await fn();
        times[i]!.push(performance.now() - s);
      }
      busy[i]! += performance.now() - start;
    }
  }
  return times.map((t, i) => {
    t.sort((a, b) => a - b);
    return { p50: pct(t, 50), p95: pct(t, 95), mean: t.reduce((a, b) => a + b, 0) / t.length, perSec: (t.length / busy[i]!) * 1000 };
  });
}

const size = (tools: unknown[]) => tools.reduce<number>((n, t) => n + JSON.stringify(t).length, 0);

async function listOver(transport: StdioClientTransport | StreamableHTTPClientTransport, options: { rendersViews?: boolean } = {}) {
  const capabilities = options.rendersViews ? { extensions: { [UI_EXTENSION]: { mimeTypes: [VIEW_MIME_TYPE] } } } : {};
  const client = new Client({ name: 'bench', version: '1' }, { capabilities });
  await client.connect(transport);
  const { tools } = await client.listTools();
  await client.close();
  return tools;
}

/** What a client pays in context for the tool list: default, with a key and no wallet, everything, the hosted endpoint for a full-scope key and for a wallet. */
async function toolListSizes(svcUrl: string, env: Record<string, string>, dir: string): Promise<void> {
  cli(dir, svcUrl, ['account', 'create', '--email', 'bench@example.com']);
  const key = cli(dir, svcUrl, ['key', 'create', '--email', 'bench@example.com', '--all-scopes']).trim().split('\n').pop()!;
  const rows: [string, unknown[]][] = [
    [
      'svc-mcp, default toolsets',
      await listOver(new StdioClientTransport({ command: process.execPath, args: ['bin/svc-mcp.mjs'], env: { ...env, SVC_TOOLSETS: '' }, stderr: 'ignore' })),
    ],
    [
      'svc-mcp, default, a client with views',
      await listOver(new StdioClientTransport({ command: process.execPath, args: ['bin/svc-mcp.mjs'], env: { ...env, SVC_TOOLSETS: '' }, stderr: 'ignore' }), {
        rendersViews: true,
      }),
    ],
    [
      'svc-mcp, SVC_API_KEY, no wallet (default)',
      await listOver(
        new StdioClientTransport({
          command: process.execPath,
          args: ['bin/svc-mcp.mjs'],
          env: { ...env, SVC_TOOLSETS: '', SVC_API_KEY: key },
          stderr: 'ignore',
        }),
      ),
    ],
    [
      'svc-mcp, SVC_TOOLSETS=all + key + wallet',
      await listOver(
        new StdioClientTransport({
          command: process.execPath,
          args: ['bin/svc-mcp.mjs'],
          env: { ...env, SVC_API_KEY: key, SVC_WALLET_PRIVATE_KEY: generatePrivateKey() },
          stderr: 'ignore',
        }),
      ),
    ],
    [
      'hosted /mcp, full-scope key (default)',
      await listOver(new StreamableHTTPClientTransport(new URL(`${svcUrl}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } })),
    ],
    ['hosted /mcp/x402, wallet only (default)', await listOver(new StreamableHTTPClientTransport(new URL(`${svcUrl}/mcp/x402`)))],
  ];
  console.log(
    `\ntools/list size (characters of the JSON a client receives; tokens ≈ characters / 4; budget: default ≤ 16,000, one tool ≤ 1,600, all ≤ 48,000)`,
  );
  console.log(`${'list'.padEnd(42)} ${'tools'.padStart(6)} ${'chars'.padStart(8)} ${'≈tokens'.padStart(8)} ${'largest'.padStart(8)}`);
  for (const [label, tools] of rows) {
    const largest = Math.max(...tools.map((t) => JSON.stringify(t).length));
    console.log(
      `${label.padEnd(42)} ${String(tools.length).padStart(6)} ${String(size(tools)).padStart(8)} ${String(Math.round(size(tools) / 4)).padStart(8)} ${String(largest).padStart(8)}`,
    );
  }
  viewSizes();
}

/** The size of each MCP Apps view (mcp/views/): the document a host reads with resources/read, and gzipped. */
function viewSizes(): void {
  console.log(`\nMCP Apps views (resources/read text; one self-contained document each)`);
  console.log(`${'view'.padEnd(42)} ${'bytes'.padStart(8)} ${'gzip'.padStart(8)}  tools`);
  for (const v of VIEWS) {
    const bytes = Buffer.byteLength(v.html);
    console.log(`${v.uri.padEnd(42)} ${String(bytes).padStart(8)} ${String(gzipSync(v.html).length).padStart(8)}  ${v.tools.join(', ')}`);
  }
}

/**
 * The hosted endpoint's own cost, without an SDK client: the same JSON-RPC POSTs a client sends and
 * the direct GET, each over one kept-alive node:http connection (the SDK client's fetch and its
 * parsing of the result are ~1.5 ms of every MCP row above, and none of the reference's).
 */
async function serverSideOnly(svcUrl: string, key: string): Promise<void> {
  const agent = new nodeHttp.Agent({ keepAlive: true, maxSockets: 1 });
  const send = (method: string, pathname: string, headers: Record<string, string>, body?: string) =>
    new Promise<void>((resolve, reject) => {
      const all = body ? { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } : headers;
      const req = nodeHttp.request(`${svcUrl}${pathname}`, { method, headers: all, agent }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`${pathname}: HTTP ${res.statusCode}`))));
      });
      req.on('error', reject);
      req.end(body);
    });
  const mcp = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };
  const rpc = (method: string, params: unknown = {}) => JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
  const listPricing = rpc('tools/call', { name: 'list_pricing', arguments: {} });
  const signedIn = { ...mcp, authorization: `Bearer ${key}` };
  const rows: [string, () => Promise<void>][] = [
    ['GET /api/x402/pricing (ref)', () => send('GET', '/api/x402/pricing', {})],
    ['POST /mcp/x402 ping', () => send('POST', '/mcp/x402', mcp, rpc('ping'))],
    ['POST /mcp/x402 tools/call list_pricing', () => send('POST', '/mcp/x402?toolsets=advanced', mcp, listPricing)],
    ['POST /mcp ping, personal key', () => send('POST', '/mcp', signedIn, rpc('ping'))],
    ['POST /mcp tools/call list_pricing, personal key', () => send('POST', '/mcp?toolsets=advanced', signedIn, listPricing)],
  ];
  const figures = await measureInterleavedN(
    rows.map(([, fn]) => fn),
    1000,
    5,
    50,
  );
  agent.destroy();
  printVsHttp(
    'server side only: raw JSON-RPC POSTs without an SDK client, 1,000 per path in 5 interleaved rounds, one kept-alive node:http connection',
    rows.map(([label], i) => [label, figures[i]!]),
  );
}

/**
 * svc's hosted `/mcp/x402` beside a reference MCP server on the same SDK line (the v2
 * `@modelcontextprotocol/server`, `createMcpHandler` as its docs show, one tool `list_pricing` that
 * GETs the same pricing over a kept-alive HTTP connection and answers it as text), both on
 * @hono/node-server, raw JSON-RPC POSTs in each era: 2025 (no envelope; the reference in the SDK's
 * stateless mode) and 2026-07-28 (the per-request envelope, MCP-Protocol-Version, Mcp-Method, Mcp-Name).
 */
async function sameSdkLine(svcUrl: string): Promise<void> {
  const { createMcpHandler, McpServer } = await import('@modelcontextprotocol/server');
  const { serve } = await import('@hono/node-server');
  const { z } = await import('zod');
  const upstream = new nodeHttp.Agent({ keepAlive: true });
  const pricing = () =>
    new Promise<string>((resolve, reject) => {
      nodeHttp
        .get(`${svcUrl}/api/x402/pricing`, { agent: upstream }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (d) => (text += d));
          res.on('end', () => resolve(text));
        })
        .on('error', reject);
    });
  const build = () => {
    const server = new McpServer({ name: 'reference', version: '1.0.0' });
    server.registerTool('list_pricing', { description: 'Prices of the paid actions.', inputSchema: z.object({}) }, async () => ({
      content: [{ type: 'text', text: await pricing() }],
    }));
    return server;
  };
  // Both eras on one entry: 2025 requests by its stateless legacy leg (its default).
  const handler = createMcpHandler(build);
  const port = await freePort();
  const reference = serve({
    fetch: (req: Request) => handler.fetch(req),
    port,
    hostname: '127.0.0.1',
  });
  const refUrl = `http://127.0.0.1:${port}`;
  const agent = new nodeHttp.Agent({ keepAlive: true, maxSockets: 1 });
  const post = (url: string, headers: Record<string, string>, body: string) =>
    new Promise<void>((resolve, reject) => {
      const req = nodeHttp.request(
        url,
        { method: 'POST', headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) }, agent },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (d) => (text += d));
          res.on('end', () =>
            res.statusCode === 200 && text.includes('x402.create_app_from_html')
              ? resolve()
              : reject(new Error(`${url}: HTTP ${res.statusCode} ${text.slice(0, 200)}`)),
          );
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const call2025 = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_pricing', arguments: {} } });
  const call2026 = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: {
      name: 'list_pricing',
      arguments: {},
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': {},
        'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
      },
    },
  });
  const h2025 = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
  const h2026 = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'list_pricing' };
  const rows: [string, () => Promise<void>][] = [
    ['reference v2 server, 2025 (ref)', () => post(`${refUrl}/mcp`, h2025, call2025)],
    ['svc /mcp/x402, 2025', () => post(`${svcUrl}/mcp/x402?toolsets=advanced`, h2025, call2025)],
    ['reference v2 server, 2026-07-28', () => post(`${refUrl}/mcp`, h2026, call2026)],
    ['svc /mcp/x402, 2026-07-28', () => post(`${svcUrl}/mcp/x402?toolsets=advanced`, h2026, call2026)],
  ];
  try {
    const figures = await measureInterleavedN(
      rows.map(([, fn]) => fn),
      1000,
      5,
      50,
    );
    printVsHttp(
      `the same SDK line: tools/call list_pricing as raw JSON-RPC POSTs, 1,000 per path in 5 interleaved rounds, one kept-alive connection; load ${os.loadavg()[0]!.toFixed(1)} (the ratio of each era's svc row to the reference row above it is what counts)`,
      rows.map(([label], i) => [label, figures[i]!]),
    );
  } finally {
    agent.destroy();
    upstream.destroy();
    await new Promise((r) => reference.close(r));
  }
}

/** The CLI against the running service (same data dir: it goes through the admin endpoint). */
function cli(dir: string, svcUrl: string, args: string[]): string {
  const r = spawnSync(process.execPath, ['bin/svc.mjs', ...args], {
    env: { ...process.env, SVC_DATA_DIR: path.join(dir, 'data'), SVC_BASE_URL: svcUrl },
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`svc ${args.join(' ')}: ${r.stderr}`);
  return r.stdout + r.stderr;
}

/** Rows of p50/p95/mean beside the first row (the HTTP reference). */
function printVsHttp(title: string, rows: [string, Figures][]): void {
  const ref = rows[0]![1];
  console.log(`\n${title}`);
  console.log(`${'path'.padEnd(52)} ${'p50 ms'.padStart(8)} ${'p95 ms'.padStart(8)} ${'mean ms'.padStart(8)} ${'vs HTTP'.padStart(8)}`);
  for (const [label, m] of rows)
    console.log(
      `${label.padEnd(52)} ${m.p50.toFixed(2).padStart(8)} ${m.p95.toFixed(2).padStart(8)} ${m.mean.toFixed(2).padStart(8)} ${(m.p50 / ref.p50).toFixed(2).padStart(7)}x`,
    );
}

/**
 * A signed-in call through the hosted endpoint (account_usage with a personal key) against the same
 * Account API request over HTTP (GET /api/v1/usage): what the endpoint adds to a call that is
 * authenticated, counted against the rate limit and answered from the database.
 */
async function hostedAccountCalls(svcUrl: string, key: string): Promise<void> {
  const hosted = new Client({ name: 'bench', version: '1' });
  await hosted.connect(
    new StreamableHTTPClientTransport(new URL(`${svcUrl}/mcp?toolsets=account`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }),
  );
  const [viaHttp, viaMcp] = await measureInterleaved([
    async () => {
      const r = await fetch(`${svcUrl}/api/v1/usage`, { headers: { authorization: `Bearer ${key}` } });
      if (!r.ok) throw new Error(`usage ${r.status}`);
      await r.json();
    },
    async () => {
      const r = await hosted.callTool({ name: 'account_usage', arguments: {} });
      if (r.isError) throw new Error(JSON.stringify(r.content));
    },
  ]);
  await hosted.close();
  printVsHttp(`signed-in call (personal key), ${CALLS} sequential calls per path in 6 interleaved rounds; load ${os.loadavg()[0]!.toFixed(1)}`, [
    ['HTTP GET /api/v1/usage (ref)', viaHttp!],
    ['hosted /mcp account_usage', viaMcp!],
  ]);
}

/**
 * A paid call through the hosted endpoint (tool → PaymentRequired → sign → tool with _meta) against the
 * same call on the HTTP Agent API through @x402/fetch (402 → sign → retry): update_app_meta on one app.
 */
async function hostedPaidCalls(svcUrl: string, dir: string): Promise<void> {
  const CALLS_PAID = 30;
  const account = privateKeyToAccount(generatePrivateKey());
  cli(dir, svcUrl, ['faucet', account.address, '100']);
  const x402 = new x402Client();
  registerExactEvmScheme(x402, { signer: account as never });
  const payFetch = wrapFetchWithPayment(fetch, x402) as typeof fetch;
  const created = await payFetch(`${svcUrl}/api/x402/apps`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: `bench-${Date.now()}`, html: '<p>bench</p>' }),
  });
  const appId = ((await created.json()) as { app: { appId: string } }).app.appId;
  const key = cli(dir, svcUrl, ['key', 'create', '--email', 'bench@example.com', '--all-scopes']).trim().split('\n').pop()!;
  const hosted = new Client({ name: 'bench', version: '1' });
  await hosted.connect(
    new StreamableHTTPClientTransport(new URL(`${svcUrl}/mcp?toolsets=apps`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }),
  );
  const [viaHttp, viaMcp] = await measureInterleavedN(
    [
      async () => {
        const r = await payFetch(`${svcUrl}/api/x402/apps/${appId}`, {
          method: 'PATCH',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ visibility: 'public' }),
        });
        if (!r.ok) throw new Error(`HTTP paid call ${r.status}: ${await r.text()}`);
      },
      async () => {
        const args = { appId, visibility: 'public' };
        const first = await hosted.callTool({ name: 'update_app_meta', arguments: args });
        const payment = await x402.createPaymentPayload(first.structuredContent as never);
        const paid = await hosted.callTool({ name: 'update_app_meta', arguments: args, _meta: { 'x402/payment': payment } });
        if (paid.isError) throw new Error(JSON.stringify(paid.content));
      },
    ],
    CALLS_PAID,
  );
  await hosted.close();
  printVsHttp(
    `paid call (update_app_meta, 0.001 USDC, settled on the dev chain), ${CALLS_PAID} sequential calls per path, interleaved; load ${os.loadavg()[0]!.toFixed(1)}`,
    [
      ['HTTP Agent API via @x402/fetch (ref)', viaHttp!],
      ['hosted /mcp tool, paid via _meta["x402/payment"]', viaMcp!],
    ],
  );
}

export async function run(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-mcp-'));
  const port = await freePort();
  const svcUrl = `http://127.0.0.1:${port}`;
  const service = spawnService({
    PORT: String(port),
    SVC_DATA_DIR: path.join(dir, 'data'),
    SVC_BASE_URL: svcUrl,
    SVC_LOG_LEVEL: 'silent',
    ...UNREACHED_LIMITS,
  });
  const mcpPort = await freePort();
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    SVC_URL: svcUrl,
    SVC_SPEND_LEDGER: path.join(dir, 'ledger.json'),
    SVC_TOOLSETS: 'all',
  };
  const { spawn } = await import('node:child_process');
  const httpMcp = spawn(process.execPath, [...profileFlags(), 'bin/svc-mcp.mjs', '--http', '--port', String(mcpPort)], {
    env,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  let stdio: Client | undefined;
  let http: Client | undefined;
  let hosted: Client | undefined;
  try {
    await waitForHttp(`${svcUrl}/healthz`);
    await waitForHttp(`http://127.0.0.1:${mcpPort}/healthz`);
    const coldStart = performance.now();
    stdio = new Client({ name: 'bench', version: '1' });
    await stdio.connect(new StdioClientTransport({ command: process.execPath, args: [...profileFlags(), 'bin/svc-mcp.mjs'], env, stderr: 'ignore' }));
    const cold = performance.now() - coldStart;
    http = new Client({ name: 'bench', version: '1' });
    await http.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${mcpPort}/mcp`)));
    cli(dir, svcUrl, ['account', 'create', '--email', 'bench-free@example.com']);
    const key = cli(dir, svcUrl, ['key', 'create', '--email', 'bench-free@example.com', '--all-scopes']).trim().split('\n').pop()!;
    hosted = new Client({ name: 'bench', version: '1' });
    await hosted.connect(
      new StreamableHTTPClientTransport(new URL(`${svcUrl}/mcp?toolsets=advanced`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }),
    );

    const [direct, viaStdio, viaHttp, viaHosted] = await measureInterleaved([
      async () => {
        const r = await fetch(`${svcUrl}/api/x402/pricing`);
        if (!r.ok) throw new Error(`pricing ${r.status}`);
        await r.json();
      },
      async () => {
        const r = await stdio!.callTool({ name: 'list_pricing', arguments: {} });
        if (r.isError) throw new Error(JSON.stringify(r.content));
      },
      async () => {
        const r = await http!.callTool({ name: 'list_pricing', arguments: {} });
        if (r.isError) throw new Error(JSON.stringify(r.content));
      },
      async () => {
        const r = await hosted!.callTool({ name: 'list_pricing', arguments: {} });
        if (r.isError) throw new Error(JSON.stringify(r.content));
      },
    ]);
    console.log(
      `list_pricing, ${CALLS} sequential calls per path in 6 interleaved rounds after ${WARMUP} warm-up; load average ${os.loadavg()[0]!.toFixed(1)} on ${os.cpus().length} cores (loopback; svc-mcp stdio start-up incl. tsx: ${cold.toFixed(0)} ms)`,
    );
    console.log(
      `${'path'.padEnd(40)} ${'p50 ms'.padStart(8)} ${'p95 ms'.padStart(8)} ${'mean ms'.padStart(8)} ${'calls/s'.padStart(8)} ${'vs direct'.padStart(10)}`,
    );
    for (const [label, m] of [
      ['direct HTTP GET /api/x402/pricing (ref)', direct],
      ['MCP tool list_pricing over stdio', viaStdio],
      ['MCP tool list_pricing over streamable HTTP', viaHttp],
      ['hosted /mcp list_pricing (in the service)', viaHosted],
    ] as const) {
      console.log(
        `${label.padEnd(40)} ${m!.p50.toFixed(2).padStart(8)} ${m!.p95.toFixed(2).padStart(8)} ${m!.mean.toFixed(2).padStart(8)} ${m!.perSec.toFixed(0).padStart(8)} ${(m!.p50 / direct!.p50).toFixed(2).padStart(9)}x`,
      );
    }
    await serverSideOnly(svcUrl, key);
    await sameSdkLine(svcUrl);
    await toolListSizes(svcUrl, env, dir);
    await hostedAccountCalls(svcUrl, key);
    await hostedPaidCalls(svcUrl, dir);
  } finally {
    await stdio?.close().catch(() => undefined);
    await http?.close().catch(() => undefined);
    await hosted?.close().catch(() => undefined);
    httpMcp.kill('SIGTERM');
    service.kill('SIGTERM');
    await new Promise((r) => service.once('exit', r));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
