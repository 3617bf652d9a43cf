import path from 'node:path';
import { Client as V2Client } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { loadMcpConfig } from '../../mcp/config.js';
import type { McpContext } from '../../mcp/context.js';
import { startMcpHttp } from '../../mcp/http.js';
import { createMcpContext } from '../../mcp/server.js';

export const BIN = path.resolve(import.meta.dirname, '../../bin/svc-mcp.mjs');

/** The real SDK client over stdio, spawning `bin/svc-mcp.mjs` with exactly `env` (+ PATH/HOME). */
export async function connectStdio(env: Record<string, string>): Promise<Client & { stderrText: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN],
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const client = new Client({ name: 'svc-test', version: '1.0.0' });
  await client.connect(transport);
  return Object.assign(client, { stderrText: () => stderr });
}

/** An in-process MCP context + streamable HTTP server, and the real SDK client connected to it. */
export async function connectHttp(env: Record<string, string>, options: { fetch?: typeof fetch; tweak?: (ctx: McpContext) => void } = {}) {
  const ctx = await createMcpContext(loadMcpConfig(env), { fetch: options.fetch });
  await ctx.ready;
  options.tweak?.(ctx);
  const http = await startMcpHttp(ctx, 0);
  const client = new Client({ name: 'svc-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(http.url)));
  return {
    ctx,
    client,
    url: http.url,
    async close() {
      await client.close();
      await http.close();
    },
  };
}

export function text(r: unknown): string {
  return ((r as CallToolResult).content ?? []).map((c) => (c.type === 'text' ? c.text : '')).join('\n');
}

export async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

/**
 * A tool as a model is shown it: its name, description and input schema (and any other `_meta`).
 * Hosts give a model a tool's name, description and schema; what they read for the person and for
 * themselves is not in the model's context: `_meta.ui` (the view a host renders, MCP Apps),
 * `_meta.x402` (a hosted paid tool's accepts, which the client's wallet budgets and signs from; the
 * price is in the description too), `annotations` (whether to confirm a call) and `icons` (what to
 * draw beside it). The tool-list budgets count the rest (transport.test.ts bounds what the hints and
 * icons add to the wire, tool-prices.test.ts what the prices add).
 */
export function asModelSees(tool: { _meta?: Record<string, unknown>; annotations?: unknown; icons?: unknown }): unknown {
  const { _meta, annotations: _annotations, icons: _icons, ...rest } = tool;
  const { ui: _ui, x402: _x402, ...other } = _meta ?? {};
  return Object.keys(other).length ? { ...rest, _meta: other } : rest;
}

/** Characters of a tool list as a model is shown it (asModelSees). */
export function modelSize(tools: { _meta?: Record<string, unknown> }[]): number {
  return tools.reduce<number>((n, t) => n + JSON.stringify(asModelSees(t)).length, 0);
}

/**
 * The official v2 client (@modelcontextprotocol/client) negotiating as `versionNegotiation` says and
 * answering each form elicitation with `answer(message)`, and the messages it was asked; without
 * `answer` it declares no elicitation (a client that cannot ask the person).
 */
export function answeringClient(
  name: string,
  versionNegotiation: { mode: 'legacy' | 'auto' | { pin: string } },
  answer?: (message: string) => { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, string | number | boolean> },
  /** The elicitation capability it declares when it answers: `{form: {}}`, or a bare `{}` (form, before modes). */
  elicitation: Record<string, unknown> = { form: {} },
): { client: V2Client; asked: string[] } {
  const client = new V2Client({ name, version: '1.0.0' }, { versionNegotiation, capabilities: answer ? { elicitation } : {} } as never);
  const asked: string[] = [];
  if (answer)
    client.setRequestHandler('elicitation/create', async (req: { params: { message: string } }) => {
      asked.push(req.params.message);
      return answer(req.params.message);
    });
  return { client, asked };
}
