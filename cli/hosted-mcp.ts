import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Context, Hono } from 'hono';
import { loadMcpConfig } from '../mcp/config.js';
import type { HostedCaller, McpContext } from '../mcp/context.js';
import { buildMcpServer, createMcpContext } from '../mcp/server.js';
import { McpServerPool } from '../mcp/stateless.js';
import { parseToolsets } from '../mcp/toolsets.js';
import { authenticate } from '../service/auth/require-scope.js';
import { MCP_GATEWAY_ENV, mcpResource, mcpResourceMetadataUrl } from '../service/auth/resources.js';
import type { Deps } from '../service/deps.js';
import { AppError } from '../service/http/app-error.js';
import type { AppEnv } from '../service/http/env.js';

/** What a signed-in caller gets without `?toolsets=`: everything the hosted endpoint can do for them. */
export const HOSTED_DEFAULT_TOOLSETS = 'account,functions,apps,tables';
/** What a wallet (`/mcp/x402`, no sign-in) gets without `?toolsets=`: the Agent API and the Table API. */
export const WALLET_DEFAULT_TOOLSETS = 'apps,tables,datasets';
/** Kinds of caller (toolsets × scopes) whose idle servers are kept. */
const MAX_POOLS = 32;

/**
 * The hosted MCP endpoints on the service's own app and port, streamable HTTP and stateless (each
 * POST is answered by a server that serves no other request meanwhile; servers are reused,
 * mcp/stateless.ts):
 *   - `{SVC_BASE_URL}/mcp`: the caller signs in (OAuth access token or personal key) and gets the
 *     Account API tools its scopes allow, beside the Agent API tools;
 *   - `{SVC_BASE_URL}/mcp/x402`: no sign-in; the caller's wallet is its identity, as on `/api/x402`.
 * The tools call the service's routes **in process** (`app.request`) with the caller's credential, so
 * scopes, ownership, prices, money rules and errors have one implementation for HTTP and MCP callers.
 * Paid Agent API tools are paid by the caller's own wallet through `_meta["x402/payment"]`; these
 * endpoints have no wallet and never pay for anyone.
 */
export async function mountHostedMcp(app: Hono<AppEnv>, deps: Deps): Promise<void> {
  const base = deps.config.baseUrl;
  // In process, marked as coming through this endpoint (tokens bound to {base}/mcp are accepted there only).
  const inProcess = ((input: string | URL | Request, init?: RequestInit) =>
    app.request(input instanceof Request ? input : String(input), init, MCP_GATEWAY_ENV)) as typeof fetch;
  // Built on the first request, not here: the first in-process request builds Hono's matcher, after
  // which no route can be added.
  let shared: Promise<McpContext> | undefined;
  const contexts = new WeakMap<McpServer, McpContext>();
  const pools = new Map<string, McpServerPool>();
  const poolFor = (key: string, build: () => McpServer) => {
    let pool = pools.get(key);
    if (!pool) {
      if (pools.size >= MAX_POOLS) pools.delete(pools.keys().next().value!);
      pool = new McpServerPool(build, true, 4, deps.config.limits.maxJsonBodyBytes);
      pools.set(key, pool);
    }
    return pool;
  };

  /** Answers one POST for a caller: a pooled server of the caller's kind, given this caller's credential. */
  async function answer(c: Context<AppEnv>, hosted: HostedCaller, authorization: string | undefined, defaultToolsets: string): Promise<Response> {
    let toolsets: McpContext['toolsets'];
    try {
      toolsets = parseToolsets(c.req.query('toolsets') ?? defaultToolsets);
    } catch (e) {
      throw new AppError('validation_failed', `toolsets: ${(e as Error).message}`);
    }
    // Stateless: a toolset enabled in one request would be gone in the next, so dynamic mode is refused.
    if (toolsets.dynamic)
      throw new AppError(
        'validation_failed',
        'toolsets: dynamic needs a session, which this endpoint does not keep; name the toolsets instead (?toolsets=apps,tables)',
      );
    const forward = (
      authorization
        ? (input: string | URL | Request, init?: RequestInit) => {
            const headers = new Headers(init?.headers);
            headers.set('authorization', authorization);
            return inProcess(input, { ...init, headers });
          }
        : inProcess
    ) as typeof fetch;
    // Operator variables (wallet key, API key, write key) must never reach a remote caller: the
    // config is built from nothing but the service's address. Prices are read once, in process.
    shared ??= createMcpContext(loadMcpConfig({ SVC_URL: base }), { fetch: inProcess });
    const common = await shared;
    // Servers are reused by callers whose tools are the same (toolsets, scopes, kind of credential);
    // each request hands its server the caller's credential.
    const key = `${[...toolsets.enabled].sort().join(',')}|${[...hosted.scopes].sort().join(' ')}|${hosted.credentialKind}`;
    const pool = poolFor(key, () => {
      const ctx: McpContext = { ...common, fetch: forward, toolsets, hosted };
      const server = buildMcpServer(ctx);
      contexts.set(server, ctx);
      return server;
    });
    return pool.handle(c.req.raw, (server) => Object.assign(contexts.get(server)!, { fetch: forward, hosted }));
  }

  const onlyPost = (c: Context<AppEnv>, path: string) =>
    c.json({ jsonrpc: '2.0', error: { code: -32000, message: `Method not allowed: POST JSON-RPC messages to ${path}` }, id: null }, 405, { Allow: 'POST' });

  app.all('/mcp', async (c) => {
    if (c.req.method !== 'POST') return onlyPost(c, '/mcp');
    const authorization = c.req.header('authorization');
    const principal = await authenticate(deps, authorization, mcpResource(deps), mcpResourceMetadataUrl(deps));
    const hosted: HostedCaller = {
      scopes: principal.scopes,
      credential: authorization!.replace(/^Bearer\s+/i, '').trim(),
      credentialKind: principal.credential.kind,
    };
    return answer(c, hosted, authorization, HOSTED_DEFAULT_TOOLSETS);
  });

  // No sign-in, so no 401 (an MCP client meeting a 401 starts OAuth); a credential sent here is
  // refused rather than silently ignored: it belongs at /mcp.
  app.all('/mcp/x402', async (c) => {
    if (c.req.method !== 'POST') return onlyPost(c, '/mcp/x402');
    if (c.req.header('authorization'))
      throw new AppError(
        'validation_failed',
        '/mcp/x402 takes no credential: the wallet that signs each payment is the caller. To act as an account, connect to /mcp instead.',
      );
    return answer(c, { scopes: [], credentialKind: 'wallet' }, undefined, WALLET_DEFAULT_TOOLSETS);
  });
}
