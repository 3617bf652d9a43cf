import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';

/**
 * Stateless streamable HTTP: each POST is answered by a server that serves nothing else meanwhile.
 * Building a server (every tool and its schemas) costs about 1 ms, so finished servers wait here for
 * the next request (at most `maxIdle` of them). A server holds no state of a caller between requests:
 * the pool is only for servers whose tools never change (not with dynamic toolsets), and a caller's
 * credential, where there is one, is handed to the server for each request (`prepare`).
 *
 * A request whose messages ask for progress (`_meta.progressToken`) is answered as a stream (SSE) by a
 * server of its own, which is not reused (its stream may outlive the handler); every other request
 * gets one JSON response, after which its server is free again.
 */
export class McpServerPool {
  private readonly idle: McpServer[] = [];

  constructor(
    private readonly build: () => McpServer,
    private readonly reuse: boolean,
    private readonly maxIdle = 16,
    /** Largest request body read; a bigger one is answered 413 without reading the rest. */
    private readonly maxBodyBytes = 1024 * 1024,
  ) {}

  /** `prepare` gives the server this request's caller (the hosted endpoint) before it answers. */
  async handle(req: Request, prepare?: (server: McpServer) => void): Promise<Response> {
    const text = await readBody(req, this.maxBodyBytes);
    if (text === null)
      return Response.json(
        { jsonrpc: '2.0', error: { code: -32600, message: `Request body exceeds ${this.maxBodyBytes} bytes` }, id: null },
        { status: 413, headers: { connection: 'close' } },
      );
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined; // the transport answers the parse error
    }
    // The transport reads the body only when it was not parsed here (to answer the parse error).
    const request = new Request(req.url, { method: req.method, headers: req.headers, ...(parsed === undefined ? { body: text } : {}) });
    const options = parsed === undefined ? undefined : { parsedBody: parsed };
    if (asksForProgress(parsed) || !this.reuse) {
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      const server = this.build();
      prepare?.(server);
      await server.connect(transport);
      // Nothing to close afterwards: the transport and server hold no timers or sockets of their
      // own and are garbage once the response stream ends.
      return transport.handleRequest(request, options);
    }
    const server = this.idle.pop() ?? this.build();
    prepare?.(server);
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await server.connect(transport);
    let reusable = false;
    try {
      const res = await transport.handleRequest(request, options);
      reusable = true;
      return res;
    } finally {
      await server.close(); // detaches the transport; the server can connect to the next one
      if (reusable && this.idle.length < this.maxIdle) this.idle.push(server);
    }
  }
}

/**
 * The body as text, or null past `maxBytes` (the rest is never read). With a declared length within
 * the limit, `text()`: @hono/node-server then reads the socket directly instead of building a web
 * stream for the body (a tenth of a hosted tool call's CPU in a profile); Node's parser holds the body to the
 * declared length. Without one (chunked), the stream is read and counted.
 */
async function readBody(req: Request, maxBytes: number): Promise<string | null> {
  const declared = Number(req.headers.get('content-length') ?? Number.NaN);
  if (declared > maxBytes) return null;
  if (declared <= maxBytes) return req.text();
  if (!req.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = req.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function asksForProgress(body: unknown): boolean {
  const messages = Array.isArray(body) ? body : [body];
  return messages.some((m) => {
    const meta = (m as { params?: { _meta?: { progressToken?: unknown } } } | null)?.params?._meta;
    return meta?.progressToken !== undefined;
  });
}
