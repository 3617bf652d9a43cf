import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { BIN } from './helpers.js';

// The MCP Tasks extension over svc-mcp's stdio (a process suite: it spawns svc-mcp), spoken as raw
// JSON-RPC lines of the 2026-07-28 revision. test/mcp/tasks.test.ts has the rest.

const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
type Rpc = { result?: Record<string, unknown>; error?: { code: number; message: string } };

let h: Harness;
let key: string;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-mcp-tasks-stdio-'));

beforeAll(async () => {
  h = await startHarness('pglite');
  key = (await h.account()).key;
}, 120_000);
afterAll(async () => {
  await h?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('svc-mcp over stdio', () => {
  it('a pinned 2026-07-28 client gets deploy_site as a task and polls it on the same pipe', async () => {
    const child = spawn(process.execPath, [BIN], {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        SVC_URL: h.url,
        SVC_API_KEY: key,
        SVC_SPEND_LEDGER: path.join(dir, 'stdio-ledger.json'),
        SVC_TABLE_KEYS_FILE: 'off',
      },
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    const answers = new Map<number, (r: Rpc) => void>();
    let buffered = '';
    child.stdout!.on('data', (d: Buffer) => {
      buffered += d.toString();
      for (let nl = buffered.indexOf('\n'); nl !== -1; nl = buffered.indexOf('\n')) {
        const message = JSON.parse(buffered.slice(0, nl)) as Rpc & { id?: number };
        buffered = buffered.slice(nl + 1);
        if (message.id !== undefined) answers.get(message.id)?.(message);
      }
    });
    let id = 0;
    const request = (method: string, params: Record<string, unknown>) =>
      new Promise<Rpc>((resolve) => {
        answers.set(++id, resolve);
        const _meta = {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': TASKS,
          'io.modelcontextprotocol/clientInfo': { name: 'stdio-tasks', version: '1.0.0' },
        };
        child.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta } })}\n`);
      });
    try {
      const discovered = await request('server/discover', {});
      expect((discovered.result!.capabilities as { extensions?: object }).extensions).toHaveProperty(['io.modelcontextprotocol/tasks']);
      const { result } = await request('tools/call', {
        name: 'deploy_site',
        arguments: { appName: 'tasks-stdio', files: [{ path: 'index.html', content: '<h1>stdio task</h1>' }] },
      });
      expect(result).toMatchObject({ resultType: 'task', status: 'working' });
      let task: Record<string, unknown> | undefined;
      for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
        task = (await request('tasks/get', { taskId: result!.taskId })).result;
        if (task?.status !== 'working') break;
      }
      expect(task).toMatchObject({ status: 'completed', resultType: 'complete' });
      const { pathUrl } = (task!.result as { structuredContent: { pathUrl: string } }).structuredContent;
      expect(await (await fetch(pathUrl)).text()).toContain('stdio task');
    } finally {
      child.kill();
    }
  }, 60_000);
});
