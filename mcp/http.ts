import { listen, outliveClientKeepAlive } from '../shared/http-server.js';
import { createAdaptorServer, type ServerType } from '@hono/node-server';
import type { Server } from 'node:http';
import { Hono } from 'hono';
import type { AddressInfo } from 'node:net';
import type { McpContext } from './context.js';
import { buildMcpServer } from './server.js';
import { McpServerPool } from './stateless.js';

/** A request to the operator's own endpoint may carry a deploy_site's inline files: 413 above 64 MiB. */
const LOCAL_MAX_BODY_BYTES = 64 * 1024 * 1024;

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

function hostName(hostHeader: string): string {
  // "[::1]:3000" → "[::1]", "localhost:3000" → "localhost"
  if (hostHeader.startsWith('[')) return hostHeader.slice(0, hostHeader.indexOf(']') + 1).toLowerCase();
  const colon = hostHeader.indexOf(':');
  return (colon === -1 ? hostHeader : hostHeader.slice(0, colon)).toLowerCase();
}

/**
 * DNS-rebinding protection: the Host must be a loopback name (or one configured in
 * SVC_MCP_ALLOWED_HOSTS) and a browser's Origin, when present, a loopback origin (or one in
 * SVC_MCP_ALLOWED_ORIGINS). Otherwise 403 before any MCP handling.
 */
export function isAllowedRequest(req: Request, ctx: McpContext): { ok: true } | { ok: false; reason: string } {
  const host = req.headers.get('host');
  if (!host) return { ok: false, reason: 'missing Host header' };
  const name = hostName(host);
  if (!LOOPBACK.has(name) && !ctx.config.allowedHosts.includes(name) && !ctx.config.allowedHosts.includes(host.toLowerCase()))
    return { ok: false, reason: `Host ${host} is not allowed` };
  const origin = req.headers.get('origin');
  if (origin && origin !== 'null') {
    let o: URL;
    try {
      o = new URL(origin);
    } catch {
      return { ok: false, reason: `Origin ${origin} is not allowed` };
    }
    const loopback = LOOPBACK.has(o.hostname.toLowerCase()) || LOOPBACK.has(`[${o.hostname}]`);
    if (!loopback && !ctx.config.allowedOrigins.includes(o.origin)) return { ok: false, reason: `Origin ${origin} is not allowed` };
  } else if (origin === 'null') return { ok: false, reason: 'Origin null is not allowed' };
  return { ok: true };
}

/**
 * Streamable HTTP at /mcp, stateless: each POST is answered by a server of its own over the shared
 * context (wallet, ledger, prices), so any number of clients can connect and nothing is kept
 * between requests but the spend ledger. Servers are reused between requests (stateless.ts); a
 * request that asks for progress is answered as a stream (SSE), so notifications of long tools reach
 * the client.
 */
export function mcpHttpApp(ctx: McpContext): Hono {
  const app = new Hono();
  // Dynamic toolsets change a server's tools during a request: such servers are never reused.
  const servers = new McpServerPool(() => buildMcpServer(ctx, { views: 'always' }), !ctx.toolsets.dynamic, 16, LOCAL_MAX_BODY_BYTES);
  app.use('*', async (c, next) => {
    const verdict = isAllowedRequest(c.req.raw, ctx);
    if (!verdict.ok) return c.json({ jsonrpc: '2.0', error: { code: -32000, message: `Forbidden: ${verdict.reason}` }, id: null }, 403);
    await next();
  });
  app.all('/mcp', async (c) => {
    if (c.req.method !== 'POST') {
      // Stateless: no server-initiated stream, no sessions to delete.
      return c.json({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: POST JSON-RPC messages to /mcp' }, id: null }, 405, {
        Allow: 'POST',
      });
    }
    return servers.handle(c.req.raw);
  });
  app.get('/healthz', (c) => c.json({ ok: true }));
  return app;
}

/** Listens on `port` (0: any free one); a taken port rejects naming `portVariable`, the setting that chose it. */
export async function startMcpHttp(
  ctx: McpContext,
  port: number,
  hostname = '127.0.0.1',
  portVariable = '--port',
): Promise<{ url: string; server: ServerType; close(): Promise<void> }> {
  const app = mcpHttpApp(ctx);
  const server = createAdaptorServer({ fetch: app.fetch, hostname });
  await listen(server as Server, port, hostname, portVariable);
  outliveClientKeepAlive(server);
  const addr = server.address() as AddressInfo;
  const host = hostname.includes(':') ? `[${hostname}]` : hostname;
  return {
    url: `http://${host}:${addr.port}/mcp`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
      }),
  };
}
