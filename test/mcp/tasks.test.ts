import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createTaskSessionFromClient, resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mountHostedMcp } from '../../cli/hosted-mcp.js';
import { loadMcpConfig } from '../../mcp/config.js';
import { startMcpHttp } from '../../mcp/http.js';
import type { McpContext } from '../../mcp/context.js';
import { createMcpContext } from '../../mcp/server.js';
import { tasksInMemory } from '../../mcp/tasks/store.js';
import { MAX_RUNNING_TASKS_PER_CALLER, ownerOfCredential, TASK_TTL_MS } from '../../mcp/tasks/extension.js';
import { taskStoreInDb } from '../../service/mcp-tasks/task-store.js';
import type { DevFacilitator } from '../../service/payments/facilitator.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { type Rpc2026Options, rpc2026 } from './rpc-2026.js';

// The MCP Tasks extension (io.modelcontextprotocol/tasks, MCP 2026-07-28) on the faces that have long
// tools: svc-mcp (tasks in its process) and the hosted /mcp (tasks in the service's database), spoken
// on the wire as a client that advertises the extension per request does.

const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } };

let h: Harness;
let key: string;
let chain: DevFacilitator;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-mcp-tasks-'));
const wallet = generatePrivateKey();
const payer = privateKeyToAccount(wallet).address;

beforeAll(async () => {
  h = await startHarness('pglite', { SVC_X402_MODE: 'dev' }, { mount: (app, deps) => mountHostedMcp(app, deps) });
  key = (await h.account()).key;
  chain = h.deps.facilitator as DevFacilitator;
  await chain.mint(payer, 1_000_000n);
}, 120_000);
afterAll(async () => {
  await h?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** One 2026-07-28 request; by default advertising the Tasks extension. */
const rpc = (url: string, method: string, params: Record<string, unknown>, options: Rpc2026Options = {}) =>
  rpc2026(url, method, params, { capabilities: TASKS, ...options });

/** Polls tasks/get until the task ends (as a client honouring pollIntervalMs would, but quicker); every status seen, in order. */
async function settle(url: string, taskId: string, options: { key?: string } = {}): Promise<{ last: Record<string, unknown>; seen: string[] }> {
  const seen: string[] = [];
  const deadline = Date.now() + 60_000;
  for (;;) {
    const { result, error } = await rpc(url, 'tasks/get', { taskId }, options);
    if (error) throw new Error(`tasks/get: ${error.code} ${error.message}`);
    seen.push(String(result!.status));
    if (['completed', 'failed', 'cancelled'].includes(String(result!.status))) return { last: result!, seen };
    if (Date.now() > deadline) throw new Error(`task ${taskId} still ${String(result!.status)} after 60 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const textOf = (r: unknown) => ((r as { content?: { type: string; text?: string }[] }).content ?? []).map((c) => c.text ?? '').join('\n');

let ledgers = 0;

/**
 * svc-mcp over streamable HTTP, in process: with the account's key and no wallet (deploy_site and
 * upload_dataset for the account), or with `env` (a wallet's).
 */
async function svcMcpHttp(fetchImpl?: typeof fetch, env: Record<string, string> = { SVC_API_KEY: key }, tasks?: McpContext['tasks']) {
  const ctx = await createMcpContext(
    loadMcpConfig({ SVC_URL: h.url, SVC_SPEND_LEDGER: path.join(dir, `ledger-${++ledgers}.json`), SVC_TABLE_KEYS_FILE: 'off', ...env }),
    { fetch: fetchImpl },
  );
  await ctx.ready;
  if (tasks) ctx.tasks = tasks;
  return startMcpHttp(ctx, 0);
}

describe('svc-mcp: deploy_site and upload_dataset as tasks', () => {
  let mcp: Awaited<ReturnType<typeof svcMcpHttp>>;
  beforeAll(async () => {
    mcp = await svcMcpHttp();
  });
  afterAll(() => mcp?.close());

  it('server/discover lists the extension', async () => {
    const { result } = await rpc(mcp.url, 'server/discover', {});
    expect((result!.capabilities as { extensions?: Record<string, unknown> }).extensions).toHaveProperty(['io.modelcontextprotocol/tasks']);
  });

  it('deploy_site answers with a task; tasks/get follows it to the deployed site', async () => {
    const files = Array.from({ length: 5 }, (_, i) => ({ path: `page-${i}.html`, content: `<p>page ${i}</p>` }));
    const { result } = await rpc(mcp.url, 'tools/call', {
      name: 'deploy_site',
      arguments: { appName: 'tasks-deploy', files: [{ path: 'index.html', content: '<h1>as a task</h1>' }, ...files] },
    });
    expect(result).toMatchObject({ resultType: 'task', status: 'working', ttlMs: TASK_TTL_MS, pollIntervalMs: expect.any(Number) });
    expect(String(result!.statusMessage)).toMatch(/deploying 6 files/);
    expect(String(result!.taskId)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const { last } = await settle(mcp.url, String(result!.taskId));
    expect(last).toMatchObject({ resultType: 'complete', status: 'completed', taskId: result!.taskId });
    expect(last).not.toHaveProperty('pollIntervalMs');
    const done = last.result as { structuredContent: { pathUrl: string; files: number }; isError?: boolean };
    expect(done.isError, textOf(done)).toBeFalsy();
    expect(done.structuredContent.files).toBe(6);
    const page = await fetch(done.structuredContent.pathUrl);
    expect(await page.text()).toContain('as a task');
  });

  it('without the extension advertised, the same call answers in the call, as before', async () => {
    const { result } = await rpc(
      mcp.url,
      'tools/call',
      { name: 'deploy_site', arguments: { appName: 'tasks-no-ext', files: [{ path: 'index.html', content: '<h1>direct</h1>' }] } },
      { capabilities: {} },
    );
    expect(result).toMatchObject({ resultType: 'complete' });
    expect(result).not.toHaveProperty('taskId');
    expect((result as { structuredContent?: { files?: number } }).structuredContent?.files).toBe(1);
  });

  it('upload_dataset answers with a task whose result is the dataset', async () => {
    const csv = ['name,qty', ...Array.from({ length: 200 }, (_, i) => `item ${i},${i}`)].join('\n');
    const app = await rpc(mcp.url, 'tools/call', {
      name: 'deploy_site',
      arguments: { appName: 'tasks-data', files: [{ path: 'index.html', content: '<h1>data</h1>' }] },
    });
    const appId = ((await settle(mcp.url, String(app.result!.taskId))).last.result as { structuredContent: { appId: string } }).structuredContent.appId;
    const { result } = await rpc(mcp.url, 'tools/call', { name: 'upload_dataset', arguments: { appId, fileName: 'items.csv', content: csv } });
    expect(result).toMatchObject({ resultType: 'task', status: 'working' });
    const { last } = await settle(mcp.url, String(result!.taskId));
    const done = last.result as { structuredContent: { dataset: { pathUrl: string } } };
    const rows = (await (await fetch(`${done.structuredContent.dataset.pathUrl}?limit=1&sortField=qty&sortDir=desc`)).json()) as {
      records: { fields: { qty: number } }[];
    };
    expect(rows.records[0]!.fields.qty).toBe(199);
  });

  it('a task that cannot be recorded (its store fails): the call is answered in the call, the work done once', async () => {
    const failing = { ...tasksInMemory(), create: () => Promise.reject(new Error('the database is unreachable')) };
    const broken = await svcMcpHttp(undefined, { SVC_API_KEY: key }, failing);
    try {
      const { result } = await rpc(broken.url, 'tools/call', {
        name: 'deploy_site',
        arguments: { appName: 'tasks-store-down', files: [{ path: 'index.html', content: '<h1>in the call</h1>' }] },
      });
      expect(result).toMatchObject({ resultType: 'complete', structuredContent: { files: 1 } });
      expect(await (await fetch(`${h.url}/s/tasks-store-down/`)).text()).toContain('in the call');
    } finally {
      await broken.close();
    }
  });

  it('progress that cannot be written stops nothing: the task completes', async () => {
    const store = tasksInMemory();
    const broken = await svcMcpHttp(undefined, { SVC_API_KEY: key }, { ...store, report: () => Promise.reject(new Error('the database is unreachable')) });
    try {
      const files = Array.from({ length: 3 }, (_, i) => ({ path: `p${i}.html`, content: `<p>${i}</p>` }));
      const { result } = await rpc(broken.url, 'tools/call', {
        name: 'deploy_site',
        arguments: { appName: 'tasks-report-down', files: [{ path: 'index.html', content: '<h1>reports lost</h1>' }, ...files] },
      });
      expect(result).toMatchObject({ resultType: 'task' });
      const { last } = await settle(broken.url, String(result!.taskId));
      expect(last).toMatchObject({ status: 'completed', result: { structuredContent: { files: 4 } } });
    } finally {
      await broken.close();
    }
  });

  it('tasks/get: an unknown id is invalid params; a request without the extension is told the capability it lacks', async () => {
    const unknown = await rpc(mcp.url, 'tasks/get', { taskId: 'no-such-task' });
    expect(unknown.error).toMatchObject({ code: -32602, message: expect.stringMatching(/Task not found/) });
    const without = await rpc(mcp.url, 'tasks/get', { taskId: 'no-such-task' }, { capabilities: {} });
    expect(without.error).toMatchObject({ code: -32021, data: { requiredCapabilities: TASKS } });
  });
});

/** The service's answers to requests `matching` are held until the test releases them; the paths of those requests, in order. */
function holding(matching: (url: string, init?: RequestInit) => boolean) {
  const seen: string[] = [];
  let release!: () => void;
  let first!: () => void;
  const firstSeen = new Promise<void>((r) => (first = r));
  const released = new Promise<void>((r) => (release = r));
  const held: typeof fetch = async (input, init) => {
    const url = String(input instanceof Request ? input.url : input);
    if (matching(url, init)) {
      seen.push(new URL(url).pathname);
      first();
      await released;
    }
    return fetch(input, init);
  };
  return { held, seen, firstSeen, release };
}

describe('svc-mcp paying from its wallet: the money rules hold for a task', () => {
  const walletEnv = (extra: Record<string, string> = {}) => ({ SVC_WALLET_PRIVATE_KEY: wallet, SVC_RPC_URL: chain.rpcUrl, ...extra });
  const NEW_SITE = 11_000n; // create_app_from_html 0.007 + upload URLs 0.001 + finalize 0.001 + publish 0.002

  it('above the approval line the person is asked in the call (input_required, nothing paid); approved, the task pays the quote exactly', async () => {
    const mcp = await svcMcpHttp(undefined, walletEnv({ SVC_APPROVAL_ABOVE: '0.005' }));
    try {
      const capabilities = { ...TASKS, elicitation: { form: {} } };
      const call = {
        name: 'deploy_site',
        arguments: { appName: `paid-task-${Date.now().toString(36)}`, files: [{ path: 'index.html', content: '<h1>paid</h1>' }] },
      };
      const before = await chain.balanceOf(payer);
      const asked = await rpc(mcp.url, 'tools/call', call, { capabilities });
      expect(asked.result).toMatchObject({ resultType: 'input_required' });
      expect(asked.result).not.toHaveProperty('taskId');
      expect(await chain.balanceOf(payer)).toBe(before);
      const inputRequests = asked.result!.inputRequests as Record<string, { params: { message: string } }>;
      expect(inputRequests.answer!.params.message).toContain('Pay 0.011 USDC');
      const answer = { inputResponses: { answer: { action: 'accept', content: { approve: true } } }, requestState: asked.result!.requestState };
      const { result } = await rpc(mcp.url, 'tools/call', call, { capabilities, answer });
      expect(result).toMatchObject({ resultType: 'task', status: 'working' });
      const { last } = await settle(mcp.url, String(result!.taskId));
      const done = last.result as { structuredContent: { paid: string; receiptIds: string[]; pathUrl: string } };
      expect(done.structuredContent.paid).toBe('0.011');
      expect(done.structuredContent.receiptIds).toHaveLength(4);
      expect(before - (await chain.balanceOf(payer))).toBe(NEW_SITE);
      expect(await (await fetch(done.structuredContent.pathUrl)).text()).toContain('paid');
    } finally {
      await mcp.close();
    }
  });

  it('cancelled during its first payment: that payment completes, no other is signed, and the task says what was paid', async () => {
    const gate = holding((url, init) => init?.method === 'POST' && url.includes('/api/x402/'));
    const mcp = await svcMcpHttp(gate.held, walletEnv());
    try {
      const appName = `cancelled-task-${Date.now().toString(36)}`;
      const before = await chain.balanceOf(payer);
      const { result } = await rpc(mcp.url, 'tools/call', {
        name: 'deploy_site',
        arguments: {
          appName,
          files: [
            { path: 'index.html', content: '<h1>cancelled</h1>' },
            { path: 'a.css', content: 'p{}' },
          ],
        },
      });
      expect(result).toMatchObject({ resultType: 'task' });
      const taskId = String(result!.taskId);
      await gate.firstSeen;
      expect((await rpc(mcp.url, 'tasks/cancel', { taskId })).result).toMatchObject({ resultType: 'complete' });
      gate.release();
      const { last } = await settle(mcp.url, taskId);
      expect(last.status).toBe('cancelled');
      expect(String(last.statusMessage)).toMatch(
        /Cancelled by the client; the last step done: 1 of \d+: created app .* Paid in this deploy: 0\.007 USDC\. App .* exists; deploy_site with appId finishes it\./,
      );
      // Only create_app_from_html was paid: its request and its paid retry.
      expect(gate.seen.every((p) => p.endsWith('/api/x402/apps'))).toBe(true);
      expect(before - (await chain.balanceOf(payer))).toBe(7_000n);
    } finally {
      gate.release();
      await mcp.close();
    }
  });
});

describe('svc-mcp: cancelling a task stops it between steps', () => {
  it('a cancel while the first request is under way: that request finishes, no other is made, the task says where it stopped', async () => {
    // The service's answers to the deploy's writes are held until the test lets them go.
    const gate = holding((url, init) => init?.method === 'POST' && url.includes('/api/v1/'));
    const mcp = await svcMcpHttp(gate.held);
    try {
      // Three requests' worth: each file is most of one Account API request.
      const big = (i: number) => ({ path: `big-${i}.txt`, content: `${i}`.repeat(700_000) });
      const { result } = await rpc(mcp.url, 'tools/call', {
        name: 'deploy_site',
        arguments: { appName: 'tasks-cancel', files: [{ path: 'index.html', content: '<h1>cancel me</h1>' }, big(1), big(2), big(3)] },
      });
      expect(result).toMatchObject({ resultType: 'task', status: 'working' });
      const taskId = String(result!.taskId);
      await gate.firstSeen;
      const cancel = await rpc(mcp.url, 'tasks/cancel', { taskId });
      expect(cancel.result).toMatchObject({ resultType: 'complete' });
      gate.release();
      const { last } = await settle(mcp.url, taskId);
      expect(last).toMatchObject({ status: 'cancelled' });
      expect(String(last.statusMessage)).toMatch(
        /^deploy_site stopped: Cancelled by the client; the last step done: 1 of \d+: sent \d files\. .*App tasks-cancel exists/,
      );
      expect(gate.seen).toEqual(['/api/v1/sites']);
      // Cancelling again, once it has ended, is acknowledged and changes nothing.
      expect((await rpc(mcp.url, 'tasks/cancel', { taskId })).result).toMatchObject({ resultType: 'complete' });
      expect((await rpc(mcp.url, 'tasks/get', { taskId })).result).toMatchObject({ status: 'cancelled' });
    } finally {
      gate.release();
      await mcp.close();
    }
  });
});

describe('svc-mcp: a caller runs at most MAX_RUNNING_TASKS_PER_CALLER tasks at once', () => {
  it('past them, a call is answered in the call, as for a client without tasks', async () => {
    const gate = holding((url, init) => init?.method === 'POST' && url.includes('/api/v1/'));
    const mcp = await svcMcpHttp(gate.held);
    const deploy = (i: number) =>
      rpc(mcp.url, 'tools/call', {
        name: 'deploy_site',
        arguments: { appName: `tasks-limit-${i}`, files: [{ path: 'index.html', content: `<h1>${i}</h1>` }] },
      });
    try {
      const started = await Promise.all(Array.from({ length: MAX_RUNNING_TASKS_PER_CALLER }, (_, i) => deploy(i)));
      expect(started.map((s) => s.result?.resultType)).toEqual(Array(MAX_RUNNING_TASKS_PER_CALLER).fill('task'));
      const fifth = deploy(MAX_RUNNING_TASKS_PER_CALLER);
      await new Promise((r) => setTimeout(r, 200));
      gate.release();
      expect((await fifth).result).toMatchObject({ resultType: 'complete', structuredContent: { files: 1 } });
      for (const s of started) expect((await settle(mcp.url, String(s.result!.taskId))).last.status).toBe('completed');
      // All ended: the next call is a task again.
      const again = await deploy(99);
      expect(again.result).toMatchObject({ resultType: 'task' });
      await settle(mcp.url, String(again.result!.taskId));
    } finally {
      gate.release();
      await mcp.close();
    }
  });
});

describe('hosted /mcp: tasks in the database, bound to the credential', () => {
  const mcpUrl = () => `${h.url}/mcp?toolsets=default,datasets`;

  it('account_create_dataset runs as a task; another credential cannot see it', async () => {
    const publish = await h.fetch('/api/v1/sites', { key, method: 'POST', json: { html: '<h1>hosted tasks</h1>', requestId: `t-${Date.now()}` } });
    const appId = ((await publish.json()) as { site: { id: string } }).site.id;
    const csv = ['city,pop', 'Lyon,522000', 'Nantes,320000'].join('\n');
    const { result, error } = await rpc(
      mcpUrl(),
      'tools/call',
      { name: 'account_create_dataset', arguments: { appId, fileName: 'cities.csv', content: csv } },
      { key },
    );
    expect(error).toBeUndefined();
    expect(result).toMatchObject({ resultType: 'task', status: 'working', statusMessage: 'converting the data file into a dataset' });
    const taskId = String(result!.taskId);
    const { last } = await settle(mcpUrl(), taskId, { key });
    expect(last.status).toBe('completed');
    expect(JSON.stringify(last.result)).toContain('cities');
    // Stored for this credential only: another account's key is told it does not exist.
    const other = (await h.account()).key;
    const theirs = await rpc(mcpUrl(), 'tasks/get', { taskId }, { key: other });
    expect(theirs.error).toMatchObject({ code: -32602 });
    expect((await rpc(mcpUrl(), 'tasks/cancel', { taskId }, { key: other })).error).toMatchObject({ code: -32602 });
  });

  it('a task whose node stopped renewing its lease is answered as failed', async () => {
    // A task left working by a node that died: its lease lapsed a second ago.
    const store = taskStoreInDb(h.deps.db);
    const now = new Date();
    await store.create(
      {
        taskId: 'lapsed-task-of-a-dead-node',
        owner: ownerOfCredential(key),
        tool: 'account_create_dataset',
        statusMessage: 'converting',
        ttlMs: TASK_TTL_MS,
        leaseUntil: new Date(now.getTime() - 1000),
      },
      new Date(now.getTime() - 60_000),
    );
    const { result } = await rpc(mcpUrl(), 'tasks/get', { taskId: 'lapsed-task-of-a-dead-node' }, { key });
    expect(result).toMatchObject({ status: 'failed', error: { code: -32603, message: expect.stringMatching(/stopped before it finished/) } });
  });

  it('/mcp/x402 (a wallet, paid in the call) offers no tasks', async () => {
    const { result } = await rpc(`${h.url}/mcp/x402`, 'server/discover', {});
    const extensions = (result!.capabilities as { extensions?: Record<string, unknown> }).extensions ?? {};
    expect(extensions).toHaveProperty(['org.x402/payment']);
    expect(extensions).not.toHaveProperty(['io.modelcontextprotocol/tasks']);
  });
});

describe("the Tasks extension's own client (@modelcontextprotocol/ext-tasks 0.2.2) with the official v2 client", () => {
  /** What the package asks of its host for a 2026-07-28 server: a raw request path (here one POST per request) and the envelope's values. */
  async function taskSession(url: string, headers: Record<string, string> = {}) {
    const client = new Client({ name: 'ext-tasks-test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } } as never);
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
    let id = 0;
    const rawDispatch = async (request: unknown) => {
      const { method, params } = request as { method: string; params?: Record<string, unknown> };
      const name = method === 'tools/call' ? params?.name : params?.taskId;
      const res = await fetch(url, {
        method: 'POST',
        headers: {
          ...headers,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': method,
          ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
        },
        body: JSON.stringify({ ...(request as object), jsonrpc: '2.0', id: ++id }),
      });
      const answer = (await res.json()) as { result?: never; error?: never };
      return answer.error ? { kind: 'error' as const, error: answer.error } : { kind: 'result' as const, result: answer.result! };
    };
    const session = createTaskSessionFromClient(client as never, {
      endpointId: url,
      rawDispatch,
      v2RequestFraming: { protocolVersion: '2026-07-28', clientInfo: { name: 'ext-tasks-test', version: '1.0.0' }, clientCapabilities: TASKS },
    });
    return {
      session,
      close: async () => {
        await session.close();
        await client.close();
      },
    };
  }

  it('svc-mcp: deploy_site as a task, polled to its result', async () => {
    const mcp = await svcMcpHttp();
    const { session, close } = await taskSession(mcp.url);
    try {
      const execution = await session.callTool('deploy_site', { appName: 'ext-tasks-deploy', files: [{ path: 'index.html', content: '<h1>ext-tasks</h1>' }] });
      expect(execution.kind).toBe('task');
      const { outcome } = await execution.settle();
      const result = resultFromTaskOutcome(outcome) as unknown as { structuredContent: { pathUrl: string } };
      expect(await (await fetch(result.structuredContent.pathUrl)).text()).toContain('ext-tasks');
    } finally {
      await close();
      await mcp.close();
    }
  });

  it('hosted /mcp: account_create_dataset as a task; a short tool answers at once', async () => {
    const publish = await h.fetch('/api/v1/sites', { key, method: 'POST', json: { html: '<h1>ext-tasks hosted</h1>', requestId: `x-${Date.now()}` } });
    const appId = ((await publish.json()) as { site: { id: string } }).site.id;
    const { session, close } = await taskSession(`${h.url}/mcp?toolsets=default,datasets`, { authorization: `Bearer ${key}` });
    try {
      const execution = await session.callTool('account_create_dataset', { appId, fileName: 'pets.csv', content: 'name,legs\ncat,4\nbird,2' });
      expect(execution.kind).toBe('task');
      const result = resultFromTaskOutcome((await execution.settle()).outcome) as unknown as { structuredContent: { dataset: { pathUrl: string } } };
      const rows = (await (await fetch(`${result.structuredContent.dataset.pathUrl}?sortField=legs`)).json()) as { records: { fields: { name: string } }[] };
      expect(rows.records.map((r) => r.fields.name)).toEqual(['bird', 'cat']);
      const listed = await session.callTool('account_list_apps', {});
      expect(listed.kind).toBe('immediate');
    } finally {
      await close();
    }
  });
});
