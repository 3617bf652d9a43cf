import http from 'node:http';
import https from 'node:https';

/** Statuses whose response has no body (the Response constructor refuses one). */
const NULL_BODY = new Set([101, 204, 205, 304]);

/**
 * The fetch svc-mcp reaches its service with: requests to `serviceUrl`'s origin go over node:http(s)
 * with kept-alive connections, everything else (another origin: a presigned upload to S3; a body
 * that is not a string or bytes; a `Request` object) through the global fetch. undici's fetch
 * costs ~0.35 ms of CPU and ~0.48 ms p50 for a small GET on loopback on this project's machine,
 * this path ~0.22 ms and ~0.32 ms with the `Response` built; a whole svc-mcp tool call gains
 * 0.04–0.10 ms of its ~1.4 ms (docs/performance.md, "MCP tool calls").
 *
 * What fetch does that this keeps: the `Response` (status, every header, the body), an
 * `AbortSignal` (a timeout rejects with the signal's reason and ends the request), and redirects of
 * GET and HEAD, which it hands to the global fetch to follow; another method's redirect is answered
 * as it came, since sending its body again could do its work twice. A request that meets a kept-alive
 * socket the server closed while idle (ECONNRESET on a reused socket: it never reached the server)
 * is sent once more on a new one, as Node's documentation advises for keep-alive agents.
 */
export function serviceFetch(serviceUrl: string): typeof fetch {
  const origin = new URL(serviceUrl).origin;
  const client = origin.startsWith('https:') ? https : http;
  const agent = new client.Agent({ keepAlive: true });
  return (async (input: string | URL | Request, init: RequestInit = {}) => {
    const url = typeof input === 'string' ? new URL(input) : input instanceof URL ? input : undefined;
    const body = init.body;
    const plainBody = body === undefined || body === null || typeof body === 'string' || body instanceof Uint8Array;
    // `manual` (paid calls: never followed) is what this path does for every method but GET and HEAD.
    const follow = init.redirect === undefined || init.redirect === 'follow';
    if (!url || url.origin !== origin || !plainBody || !(follow || init.redirect === 'manual')) return fetch(input, init);
    const method = (init.method ?? 'GET').toUpperCase();
    const response = await exchange(client, agent, url, method, init, body as string | Uint8Array | undefined);
    if (response.status >= 300 && response.status < 400 && response.headers.has('location') && follow && (method === 'GET' || method === 'HEAD')) {
      return fetch(input, init);
    }
    return response;
  }) as typeof fetch;
}

/** Errors of a kept-alive socket the server closed while it was idle: the request never reached it. */
const STALE_SOCKET = new Set(['ECONNRESET', 'EPIPE']);

function exchange(
  client: typeof http | typeof https,
  agent: http.Agent,
  url: URL,
  method: string,
  init: RequestInit,
  body: string | Uint8Array | undefined,
  attempt = 1,
): Promise<Response> {
  const signal = init.signal ?? undefined;
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const headers = new Headers(init.headers);
    const outgoing: Record<string, string> = {};
    headers.forEach((value, name) => {
      outgoing[name] = value;
    });
    if (body !== undefined) outgoing['content-length'] = String(typeof body === 'string' ? Buffer.byteLength(body) : body.length);
    const onAbort = () => req.destroy(signal!.reason);
    const req = client.request(url, { method, agent, headers: outgoing }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        signal?.removeEventListener('abort', onAbort);
        const status = res.statusCode ?? 0;
        const received = new Headers();
        for (let i = 0; i < res.rawHeaders.length; i += 2) received.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
        const content = NULL_BODY.has(status) || method === 'HEAD' ? null : Buffer.concat(chunks);
        resolve(new Response(content, { status, statusText: res.statusMessage, headers: received }));
      });
    });
    req.on('error', (e: NodeJS.ErrnoException) => {
      signal?.removeEventListener('abort', onAbort);
      if (signal?.aborted) return reject(signal.reason);
      // A kept-alive socket the server had just closed (its keep-alive timeout): once more on a new one.
      if (req.reusedSocket && attempt === 1 && STALE_SOCKET.has(e.code ?? '')) return resolve(exchange(client, agent, url, method, init, body, 2));
      // fetch's own failure shape: a TypeError with the cause (callers say "the service did not answer").
      reject(new TypeError('fetch failed', { cause: e }));
    });
    signal?.addEventListener('abort', onAbort, { once: true });
    req.end(body);
  });
}
