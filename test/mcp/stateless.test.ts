import { LATEST_PROTOCOL_VERSION, McpServer, WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { McpServerPool } from '../../mcp/stateless.js';

/**
 * The pool answers a POST on a transport of its own that stays connected (mcp/stateless.ts). Every
 * answer here is compared with the SDK's stateless transport (JSON mode) answering the same POST with a
 * fresh server: the same status, content type and body, refusals included.
 */
function buildServer(): McpServer {
  const server = new McpServer({ name: 'stateless-test', version: '1' });
  server.registerTool('echo', { description: 'Echoes', inputSchema: { text: z.string() } }, async ({ text }) => ({
    content: [{ type: 'text', text }],
    structuredContent: { text },
  }));
  server.registerTool('slow', { description: 'Answers after a while', inputSchema: { ms: z.number() } }, async ({ ms }) => {
    await new Promise((r) => setTimeout(r, ms));
    return { content: [{ type: 'text', text: `after ${ms}` }] };
  });
  server.registerTool('fails', { description: 'Throws' }, async () => {
    throw new Error('broken on purpose');
  });
  return server;
}

const URL_ = 'http://127.0.0.1/mcp';
const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': LATEST_PROTOCOL_VERSION };
const rpc = (id: number | string, method: string, params: Record<string, unknown> = {}) => ({ jsonrpc: '2.0', id, method, params });
const INIT = rpc(1, 'initialize', { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 't', version: '1' } });
const post = (body: unknown, headers: Record<string, string> = HEADERS) =>
  new Request(URL_, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });

async function reference(req: Request): Promise<Response> {
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await buildServer().connect(transport);
  return transport.handleRequest(req);
}

async function seen(res: Response) {
  const text = await res.text();
  return { status: res.status, type: res.headers.get('content-type'), body: text ? JSON.parse(text) : null };
}

const CASES: [string, () => Request][] = [
  ['initialize', () => post(INIT)],
  ['a tool call', () => post(rpc(7, 'tools/call', { name: 'echo', arguments: { text: 'hi' } }))],
  ['a tool that throws', () => post(rpc('a', 'tools/call', { name: 'fails', arguments: {} }))],
  ['arguments of the wrong shape', () => post(rpc(2, 'tools/call', { name: 'echo', arguments: { text: 3 } }))],
  ['an unknown method', () => post(rpc(3, 'no/such/method'))],
  ['tools/list', () => post(rpc(4, 'tools/list'))],
  ['a batch of two requests', () => post([rpc(5, 'ping'), rpc(6, 'tools/call', { name: 'echo', arguments: { text: 'b' } })])],
  ['a notification alone (202)', () => post({ jsonrpc: '2.0', method: 'notifications/initialized' })],
  ['no Accept (406)', () => post(rpc(1, 'ping'), { 'content-type': 'application/json' })],
  ['Accept without event streams (406)', () => post(rpc(1, 'ping'), { ...HEADERS, accept: 'application/json' })],
  ['a body that is not JSON by its type (415)', () => post(rpc(1, 'ping'), { ...HEADERS, 'content-type': 'text/plain' })],
  ['a media type that only contains application/json (415)', () => post(rpc(1, 'ping'), { ...HEADERS, 'content-type': 'text/plain; a=application/json' })],
  ['a body that is no JSON', () => post('{"jsonrpc": "2.0", "id": 1, "method": ')],
  ['JSON that is no JSON-RPC', () => post({ hello: 'world' })],
  ['null', () => post('null')],
  ['a batch past the limit', () => post(Array.from({ length: 101 }, (_, i) => rpc(i, 'ping')))],
  ['initialize with another message', () => post([INIT, rpc(2, 'ping')])],
  ['an unsupported protocol version', () => post(rpc(1, 'ping'), { ...HEADERS, 'mcp-protocol-version': '1999-01-01' })],
  ['no protocol version header', () => post(rpc(1, 'ping'), { 'content-type': 'application/json', accept: 'application/json, text/event-stream' })],
];

describe('the pooled stateless transport', () => {
  it.each(CASES)('answers %s as the SDK transport does', async (_, request) => {
    const pool = new McpServerPool(buildServer, true);
    const ours = await seen(await pool.handle(request()));
    expect(ours).toEqual(await seen(await reference(request())));
    // The same server answers the next request as a new one would.
    expect(await seen(await pool.handle(request()))).toEqual(ours);
  });

  it('builds a server once for sequential requests and one more for each request in flight at once', async () => {
    let built = 0;
    const pool = new McpServerPool(() => {
      built++;
      return buildServer();
    }, true);
    for (let i = 0; i < 5; i++) await pool.handle(post(rpc(i, 'ping')));
    expect(built).toBe(1);
    const answers = await Promise.all([40, 10, 30].map((ms, i) => pool.handle(post(rpc(i, 'tools/call', { name: 'slow', arguments: { ms } }))).then(seen)));
    expect(answers.map((a) => a.body.result.content[0].text)).toEqual(['after 40', 'after 10', 'after 30']);
    expect(built).toBe(3);
    await pool.handle(post(rpc(9, 'ping')));
    expect(built).toBe(3);
  });

  it('answers a batch that repeats an id with both responses, in order, and stays usable', async () => {
    const pool = new McpServerPool(buildServer, true);
    const batch = [rpc(1, 'tools/call', { name: 'slow', arguments: { ms: 30 } }), rpc(1, 'tools/call', { name: 'echo', arguments: { text: 'second' } })];
    const { status, body } = await seen(await pool.handle(post(batch)));
    expect(status).toBe(200);
    expect(body.map((m: { id: number }) => m.id)).toEqual([1, 1]);
    expect(body.map((m: { result: { content: { text: string }[] } }) => m.result.content[0]!.text).sort()).toEqual(['after 30', 'second']);
    expect((await seen(await pool.handle(post(rpc(2, 'ping'))))).body).toEqual({ jsonrpc: '2.0', id: 2, result: {} });
  });

  it('answers a request that asks for progress as an event stream', async () => {
    const pool = new McpServerPool(buildServer, true);
    const res = await pool.handle(post(rpc(1, 'tools/call', { name: 'echo', arguments: { text: 'p' }, _meta: { progressToken: 'tok' } })));
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(await res.text()).toContain('"text":"p"');
  });

  it('refuses a body past its limit with 413 without reading it', async () => {
    const pool = new McpServerPool(buildServer, true, 4, 1000);
    const res = await pool.handle(post(rpc(1, 'tools/call', { name: 'echo', arguments: { text: 'x'.repeat(2000) } })));
    expect(await seen(res)).toEqual({
      status: 413,
      type: 'application/json',
      body: { jsonrpc: '2.0', error: { code: -32600, message: 'Request body exceeds 1000 bytes' }, id: null },
    });
  });
});
