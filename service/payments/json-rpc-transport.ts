import http from 'node:http';
import https from 'node:https';
import { createTransport, HttpRequestError, RpcRequestError, stringify, TimeoutError, type EIP1193RequestFn, type Transport } from 'viem';

/** What viem's `http` transport accepts by default before it gives up on a response. */
const MAX_RESPONSE_BYTES = 10_485_760;

type RpcError = { code: number; message: string; data?: unknown };
type JsonRpcAnswer = { result?: unknown; error?: RpcError };
type RpcBody = { method: string; params?: unknown };
type Queued = { body: RpcBody; id: number; resolve: (a: JsonRpcAnswer) => void; reject: (e: Error) => void };
/** Requests in one JSON-RPC batch at most (viem's default is 1,000; nodes commonly accept 100 or more). */
const MAX_BATCH = 100;
const isRpcError = (e: unknown): e is RpcError => typeof e === 'object' && e !== null && 'code' in e && 'message' in e;

export interface JsonRpcTransport {
  transport: Transport;
  /** Closes the kept-alive connections (the facilitator's `close()`). */
  close(): void;
}

/**
 * viem's transport for a JSON-RPC node over HTTP(S), on node:http with kept-alive connections. viem's
 * own `http` transport goes through `fetch`, and builds three `Headers`, an abort signal, a timeout
 * race and a stream reader for every request: 0.75–1.3 ms of CPU per request on this machine against
 * 0.2–0.4 ms here (docs/performance.md, "Paid calls"), and a paid call makes about eight. Errors are
 * viem's own (RpcRequestError, HttpRequestError, TimeoutError), raised where its `http` transport
 * raises them, so every action maps them as before (a revert's reason, a nonce taken).
 */
export function jsonRpcTransport(rpcUrl: string, { timeoutMs = 10_000, batch = false }: { timeoutMs?: number; batch?: boolean } = {}): JsonRpcTransport {
  const target = new URL(rpcUrl);
  // Credentials in the URL go in a header, and never into an error message.
  const authorization = target.username
    ? `Basic ${Buffer.from(`${decodeURIComponent(target.username)}:${decodeURIComponent(target.password)}`).toString('base64')}`
    : undefined;
  target.username = '';
  target.password = '';
  const url = target.toString();
  const client = target.protocol === 'https:' ? https : http;
  const agent = new client.Agent({ keepAlive: true });
  let nextId = 0;

  /** One HTTP exchange: the parsed JSON of a 2xx answer, or the error viem's `http` transport raises. */
  const exchange = (body: RpcBody | RpcBody[], payload: string): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) };
      if (authorization) headers.authorization = authorization;
      // The whole exchange within timeoutMs, as viem's: a node that trickles its answer times out too.
      const timer = setTimeout(() => req.destroy(new TimeoutError({ body, url })), timeoutMs);
      // A timeout is ours (req.destroy above); anything else the socket says is viem's HttpRequestError.
      const fail = (cause: Error) => {
        clearTimeout(timer);
        reject(cause instanceof TimeoutError ? cause : new HttpRequestError({ body, cause, url }));
      };
      const req = client.request(target, { method: 'POST', agent, headers }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_RESPONSE_BYTES) req.destroy(new Error(`response larger than ${MAX_RESPONSE_BYTES} bytes`));
          else chunks.push(chunk);
        });
        res.on('error', fail);
        res.on('end', () => {
          clearTimeout(timer);
          const answer = answerOf(body, res, Buffer.concat(chunks).toString('utf8'));
          if (answer instanceof Error) reject(answer);
          else resolve(answer);
        });
      });
      req.on('error', fail);
      req.end(payload);
    });

  const single = (body: RpcBody, id = ++nextId) => exchange(body, stringify({ jsonrpc: '2.0', id, ...body })) as Promise<JsonRpcAnswer>;

  // Batching: the requests made in one turn of the event loop go as one JSON-RPC batch (one HTTP
  // exchange); a turn with one request sends it alone, exactly as without batching.
  let queue: Queued[] = [];
  const flush = () => {
    const items = queue;
    queue = [];
    if (items.length === 1) {
      const [only] = items as [Queued];
      single(only.body, only.id).then(only.resolve, only.reject);
      return;
    }
    for (let i = 0; i < items.length; i += MAX_BATCH) sendBatch(items.slice(i, i + MAX_BATCH));
  };
  const sendBatch = (items: Queued[]) => {
    const bodies = items.map((q) => q.body);
    exchange(bodies, stringify(items.map((q) => ({ jsonrpc: '2.0', id: q.id, ...q.body })))).then(
      (data) => {
        if (!Array.isArray(data)) {
          // A node that refuses the whole batch answers one error (viem reads it the same way).
          const one = (data as { error?: unknown } | null)?.error;
          const err = isRpcError(one)
            ? new RpcRequestError({ body: bodies, error: one, url })
            : new HttpRequestError({ body: bodies, details: 'the node did not answer the batch', url });
          for (const q of items) q.reject(err);
          return;
        }
        const byId = new Map((data as (JsonRpcAnswer & { id?: number })[]).map((a) => [a.id, a]));
        for (const q of items) {
          const answer = byId.get(q.id);
          if (answer) q.resolve(answer);
          else q.reject(new HttpRequestError({ body: q.body, details: 'the node left this request out of its batch answer', url }));
        }
      },
      (err: Error) => {
        for (const q of items) q.reject(err);
      },
    );
  };
  const post = (body: RpcBody): Promise<JsonRpcAnswer> => {
    if (!batch) return single(body);
    return new Promise((resolve, reject) => {
      queue.push({ body, id: ++nextId, resolve, reject });
      if (queue.length === 1) setImmediate(flush);
    });
  };

  /** A response as viem's `http` transport reads it: the JSON-RPC answer, or the error it raises. */
  const answerOf = (body: RpcBody | RpcBody[], res: http.IncomingMessage, text: string): JsonRpcAnswer | Error => {
    const status = res.statusCode ?? 0;
    const ok = status >= 200 && status < 300;
    let data: { result?: unknown; error?: unknown };
    try {
      data = JSON.parse(text || '{}');
    } catch (cause) {
      if (ok) return new HttpRequestError({ body, cause: cause as Error, status, url });
      data = { error: text };
    }
    if (ok) return data as JsonRpcAnswer;
    if (isRpcError(data.error)) return new RpcRequestError({ body, error: data.error, status, url });
    return new HttpRequestError({ body, details: stringify(data.error) || res.statusMessage, status, url });
  };

  const transport: Transport = () =>
    createTransport({
      key: 'http',
      name: 'HTTP JSON-RPC',
      type: 'http',
      retryCount: 0,
      timeout: timeoutMs,
      request: (async ({ method, params }: { method: string; params?: unknown }) => {
        const body = { method, params };
        const { result, error } = await post(body);
        if (error) throw new RpcRequestError({ body, error, url });
        return result;
      }) as EIP1193RequestFn,
    });
  return { transport, close: () => agent.destroy() };
}
