import {
  createMcpHandler,
  isInitializeRequest,
  isJSONRPCErrorResponse,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  isJsonContentType,
  type JSONRPCMessage,
  type McpHttpHandler,
  type McpServer,
  PROTOCOL_VERSION_META_KEY,
  parseJSONRPCMessage,
  type RequestId,
  SUPPORTED_PROTOCOL_VERSIONS,
  type Transport,
  WebStandardStreamableHTTPServerTransport,
} from '@modelcontextprotocol/server';
import { runsDetachedWork } from './tasks/extension.js';
import { inTraceOf } from './trace-context.js';

/** The SDK's own limit on a batch (server/requestBody.js), kept so both paths refuse the same POSTs. */
const MAX_BATCH_SIZE = 100;

/**
 * Stateless streamable HTTP: each POST is answered by a server that serves nothing else meanwhile.
 * Building a server (every tool and its schemas) costs about 1 ms, so finished servers wait here for
 * the next request (at most `maxIdle` of them). A server holds no state of a caller between requests:
 * the pool is only for servers whose tools never change (not with dynamic toolsets), and a caller's
 * credential, where there is one, is handed to the server for each request (`prepare`).
 *
 * A pooled server stays connected to one `JsonResponses` transport for its whole life, and each POST
 * is handed to it as messages and answered as one JSON response: no transport is built, connected and
 * closed per request (the SDK's stateless transport cannot be reused, and its close aborts each
 * finished request's controller: a fifth of an MCP request's CPU in a profile, docs/performance.md).
 * The HTTP checks before the messages are the SDK transport's own, in its words (a test holds the two
 * equal, test/mcp/stateless.test.ts).
 *
 * A request whose messages ask for progress (`_meta.progressToken`) is answered as a stream (SSE) by a
 * server of its own on the SDK's transport, which is not reused (its stream may outlive the handler);
 * so is every request of a pool whose servers are not reused.
 */
export class McpServerPool {
  private readonly idle: Connected[] = [];
  /**
   * The 2026-07-28 era (a request that carries the per-request `_meta` envelope): the SDK's own entry
   * (docs/mcp.md, "Eras"). It checks what that revision adds (the envelope, the
   * MCP-Protocol-Version, Mcp-Method and Mcp-Name headers against the body) and answers
   * `server/discover`. 2025-era requests never reach it: they are answered below, as before. Its
   * servers are reused like the 2025 ones (#modernServer).
   */
  private readonly modern: McpHttpHandler;
  /** Servers of the 2026-era entry between requests (#modernServer). */
  private readonly modernIdle: McpServer[] = [];
  /** The `prepare` of each request the modern entry is answering, for the server it builds. */
  private readonly preparing = new WeakMap<Request, (server: McpServer) => void>();

  constructor(
    private readonly build: () => McpServer,
    private readonly reuse: boolean,
    private readonly maxIdle = 16,
    /** Largest request body read; a bigger one is answered 413 without reading the rest. */
    private readonly maxBodyBytes = 1024 * 1024,
  ) {
    this.modern = createMcpHandler(
      ({ requestInfo }) => {
        const server = this.#modernServer();
        if (requestInfo) this.preparing.get(requestInfo)?.(server);
        return server;
      },
      { legacy: 'reject', maxRequestBodySize: maxBodyBytes },
    );
  }

  /**
   * A server for one 2026-era request: an idle one whose last exchange has closed (the SDK's entry
   * takes any instance that is not serving, and sets the revision, the client's identity and the
   * modern-only handlers on each request), else a new one that comes back here when its exchange
   * closes. Building a server with every tool is most of a request's cost (about 1 ms quiet; a
   * reference server with one tool builds in a fraction of it: `npm run bench mcp`, "the same SDK line").
   */
  #modernServer(): McpServer {
    if (!this.reuse) return this.build();
    // A server whose task still runs is never given to another request (its context holds its caller).
    for (let server = this.modernIdle.pop(); server; server = this.modernIdle.pop())
      if (server.server.transport === undefined && !runsDetachedWork(server)) return server;
    const server = this.build();
    // The entry chains its own close handler in front of this one for each exchange.
    server.server.onclose = () => {
      if (this.modernIdle.length < this.maxIdle) this.modernIdle.push(server);
    };
    return server;
  }

  /** `prepare` gives the server this request's caller (the hosted endpoint) before it answers. */
  handle(req: Request, prepare?: (server: McpServer) => void): Promise<Response> {
    // The POST's trace headers: the trace of the service requests its tool calls make (a call's own
    // `_meta.traceparent` overrides it, mcp/register.ts).
    const headers = { traceparent: req.headers.get('traceparent'), tracestate: req.headers.get('tracestate') };
    return inTraceOf(headers, () => this.#handle(req, prepare));
  }

  async #handle(req: Request, prepare?: (server: McpServer) => void): Promise<Response> {
    const text = await readBody(req, this.maxBodyBytes);
    if (text === null) return jsonError(413, -32600, `Request body exceeds ${this.maxBodyBytes} bytes`, { connection: 'close' });
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined; // answered below, after the header checks, as the SDK's transport answers it
    }
    if (parsed !== undefined && claimsModernEra(req, parsed)) return this.#modern(req, parsed, prepare);
    if (parsed !== undefined && (asksForProgress(parsed) || !this.reuse)) return this.#stream(req, parsed, prepare);
    const messages = messagesOf(req, parsed);
    if (!Array.isArray(messages)) return messages;
    const connected = this.idle.pop() ?? (await connect(this.build()));
    prepare?.(connected.server);
    const answers = await connected.transport.exchange(messages);
    // Answered: the server is free for the next request (a failed exchange would drop it instead).
    if (this.idle.length < this.maxIdle) this.idle.push(connected);
    if (answers.length === 0) return new Response(null, { status: 202 });
    return new Response(JSON.stringify(answers.length === 1 ? answers[0] : answers), { status: 200, headers: { 'content-type': 'application/json' } });
  }

  /** A 2026-07-28 request, by the SDK's entry (it reads the parsed body and the request's headers). */
  async #modern(req: Request, parsed: unknown, prepare?: (server: McpServer) => void): Promise<Response> {
    if (prepare) this.preparing.set(req, prepare);
    return this.modern.fetch(req, { parsedBody: parsed });
  }

  /** On the SDK's transport, by a server of its own, answered as a stream. */
  async #stream(req: Request, parsed: unknown, prepare?: (server: McpServer) => void): Promise<Response> {
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    const server = this.build();
    prepare?.(server);
    await server.connect(transport);
    // The transport takes the parsed body; it reads the request's headers only.
    const request = new Request(req.url, { method: req.method, headers: req.headers });
    // Nothing to close afterwards: the transport and server hold no timers or sockets of their own and
    // are garbage once the response stream ends.
    return transport.handleRequest(request, { parsedBody: parsed });
  }
}

interface Connected {
  server: McpServer;
  transport: JsonResponses;
}

async function connect(server: McpServer): Promise<Connected> {
  const transport = new JsonResponses();
  await server.connect(transport);
  return { server, transport };
}

/**
 * A server's connection to the POSTs it answers one at a time, each with one JSON response: the
 * responses to the POST's requests, in their order. Notifications a tool sends (and requests to the
 * client) have no way to a client that asked for no stream, and are dropped, as the SDK's transport
 * drops them in its JSON mode.
 */
class JsonResponses implements Transport {
  onmessage?: Transport['onmessage'];
  onclose?: () => void;
  onerror?: (error: Error) => void;
  /** The responses awaited, by request id (a list: a batch may repeat an id). */
  readonly #awaited = new Map<RequestId, ((answer: JSONRPCMessage) => void)[]>();

  async start(): Promise<void> {}

  async close(): Promise<void> {
    this.onclose?.();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if ((!isJSONRPCResultResponse(message) && !isJSONRPCErrorResponse(message)) || message.id === undefined) return;
    const waiting = this.#awaited.get(message.id);
    const settle = waiting?.shift();
    if (waiting?.length === 0) this.#awaited.delete(message.id);
    settle?.(message);
  }

  /** Hands one POST's messages to the server; resolves with the responses to its requests. */
  exchange(messages: JSONRPCMessage[]): Promise<JSONRPCMessage[]> {
    const answers: Promise<JSONRPCMessage>[] = [];
    for (const message of messages) {
      if (!isJSONRPCRequest(message)) continue;
      const waiting = this.#awaited.get(message.id) ?? [];
      this.#awaited.set(message.id, waiting);
      answers.push(new Promise((resolve) => waiting.push(resolve)));
    }
    for (const message of messages) this.onmessage?.(message);
    return Promise.all(answers);
  }
}

/**
 * What the SDK's stateless transport refuses before any message is handled, in its words: the Accept
 * and Content-Type headers, a body that is no JSON or no JSON-RPC, a batch past its limit or with more
 * than the initialization, an unsupported MCP-Protocol-Version. Otherwise its messages.
 */
function messagesOf(req: Request, parsed: unknown): JSONRPCMessage[] | Response {
  const refuse = (status: number, code: number, message: string) => jsonError(status, code, message);
  const accept = req.headers.get('accept');
  if (!accept?.includes('application/json') || !accept.includes('text/event-stream'))
    return refuse(406, -32000, 'Not Acceptable: Client must accept both application/json and text/event-stream');
  if (!isJsonContentType(req.headers.get('content-type'))) return refuse(415, -32000, 'Unsupported Media Type: Content-Type must be application/json');
  if (parsed === undefined) return refuse(400, -32700, 'Parse error: Invalid JSON');
  if (Array.isArray(parsed) && parsed.length > MAX_BATCH_SIZE) return refuse(400, -32600, `Invalid Request: Batch must not exceed ${MAX_BATCH_SIZE} messages`);
  const messages: JSONRPCMessage[] = [];
  for (const raw of Array.isArray(parsed) ? parsed : [parsed]) {
    try {
      messages.push(parseJSONRPCMessage(raw));
    } catch {
      return refuse(400, -32700, 'Parse error: Invalid JSON-RPC message');
    }
  }
  if (messages.some(isInitializeRequest)) {
    if (messages.length > 1) return refuse(400, -32600, 'Invalid Request: Only one initialization request is allowed');
  } else {
    const version = req.headers.get('mcp-protocol-version');
    if (version !== null && !SUPPORTED_PROTOCOL_VERSIONS.includes(version))
      return refuse(400, -32000, `Bad Request: Unsupported protocol version: ${version} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`);
  }
  return messages;
}

function jsonError(status: number, code: number, message: string, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });
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

/**
 * Whether a POST speaks the 2026-07-28 era: a message carries the per-request `_meta` envelope's
 * protocol version, or the MCP-Protocol-Version header names a modern revision (the SDK's entry then
 * answers what is missing). Everything else, refusals of malformed bodies included, is answered as
 * the 2025 transport answers it.
 */
function claimsModernEra(req: Request, body: unknown): boolean {
  const header = req.headers.get('mcp-protocol-version');
  if (header !== null && header >= MODERN_ERA) return true;
  const messages = Array.isArray(body) ? body : [body];
  return messages.some((m) => {
    const meta = (m as { params?: { _meta?: Record<string, unknown> } } | null)?.params?._meta;
    return meta?.[PROTOCOL_VERSION_META_KEY] !== undefined;
  });
}

/** The first revision of the modern era (revisions are dates: later ones sort after it). */
const MODERN_ERA = '2026-07-28';

function asksForProgress(body: unknown): boolean {
  const messages = Array.isArray(body) ? body : [body];
  return messages.some((m) => {
    const meta = (m as { params?: { _meta?: { progressToken?: unknown } } } | null)?.params?._meta;
    return meta?.progressToken !== undefined;
  });
}
