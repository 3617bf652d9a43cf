import { createHash } from 'node:crypto';
import type { Context, Hono } from 'hono';
import type { HostedCaller } from '../mcp/context.js';
import { ICON_SVGS, ICONS_PATH, type IconName } from '../mcp/icons.js';
import type { Toolset } from '../mcp/toolsets.js';
import { authenticate, bearerToken } from '../service/auth/require-scope.js';
import { mcpGatewayEnv, mcpResource, mcpResourceMetadataUrl } from '../service/auth/resources.js';
import type { Deps } from '../service/deps.js';
import { AppError, notFound } from '../service/kernel/app-error.js';
import { publicCors } from '../service/http/cors.js';
import type { AppEnv } from '../service/kernel/request-env.js';
import { limitByAddress } from '../service/http/limit-by-address.js';
import type { HostedMcp } from './hosted-mcp-servers.js';
import { builtSvcMcpPackage, mountSvcMcpPackage, svcMcpCommand, type SvcMcpPackage } from './svc-mcp-package.js';

/**
 * What a signed-in caller gets without `?toolsets=` (or with `default` in it): the account's tools,
 * which do for free what the wallet-paid ones do (most clients that sign in cannot sign x402), and the
 * Table tools. `?toolsets=default,apps` (and `datasets`) adds the tools the caller's wallet pays.
 */
export const HOSTED_DEFAULT_TOOLSETS: readonly Toolset[] = ['account', 'functions', 'tables'];
/** What a wallet (`/mcp/x402`, no sign-in) gets without `?toolsets=`: the Agent API and the Table API. */
export const WALLET_DEFAULT_TOOLSETS: readonly Toolset[] = ['apps', 'tables', 'datasets'];
/** CORS of the hosted endpoints: the headers streamable HTTP sends and the ones a client reads. */
const MCP_CORS = publicCors({
  allowMethods: ['POST', 'GET', 'DELETE', 'OPTIONS'],
  allowHeaders: ['Authorization', 'Content-Type', 'Accept', 'Mcp-Protocol-Version', 'Mcp-Session-Id', 'Last-Event-ID', 'X-Request-Id'],
  exposeHeaders: ['WWW-Authenticate', 'Mcp-Session-Id', 'Mcp-Protocol-Version', 'X-Request-Id', 'Retry-After'],
  maxAge: 600,
});

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
 * endpoints have no wallet and never pay for anyone. `svcMcp`: the svc-mcp package it serves and names
 * (svc-mcp-package.ts), read from dist/ unless the caller has read it already.
 */
export async function mountHostedMcp(app: Hono<AppEnv>, deps: Deps, svcMcp: SvcMcpPackage | null = builtSvcMcpPackage()): Promise<void> {
  mountSvcMcpPackage(app, svcMcp);
  // Callers in a browser too (a web agent, the MCP Inspector): the credential is a bearer header, never
  // a cookie, so every origin may call, and read the 401's challenge that starts OAuth.
  app.use('/mcp', MCP_CORS);
  app.use('/mcp/x402', MCP_CORS);
  app.use(
    '/mcp/x402',
    limitByAddress(deps, (c) => (c.req.method === 'POST' ? 'mcp-x402' : null)),
  );
  // The servers (and the MCP SDK) load with the first POST, not with the service: hosted-mcp-servers.ts.
  const command = svcMcpCommand(deps.config.baseUrl, svcMcp);
  let servers: Promise<HostedMcp> | undefined;
  const hosted = () => (servers ??= import('./hosted-mcp-servers.js').then((m) => new m.HostedMcp(app, deps, command)));
  const onlyPost = (c: Context<AppEnv>, path: string) =>
    c.json({ jsonrpc: '2.0', error: { code: -32000, message: `Method not allowed: POST JSON-RPC messages to ${path}` }, id: null }, 405, { Allow: 'POST' });

  mountIcons(app);

  app.all('/mcp', async (c) => {
    if (c.req.method !== 'POST') return onlyPost(c, '/mcp');
    const authorization = c.req.header('authorization');
    const principal = await authenticate(deps, authorization, mcpResource(deps), mcpResourceMetadataUrl(deps));
    // authenticate accepted the header, so it is a Bearer credential.
    const credential = bearerToken(authorization)!;
    const caller: HostedCaller = { scopes: principal.scopes, credential, credentialKind: principal.credential.kind };
    return (await hosted()).answer(c, caller, { authorization: authorization!, env: mcpGatewayEnv({ credential, principal }) }, HOSTED_DEFAULT_TOOLSETS);
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
    return (await hosted()).answer(c, { scopes: [], credentialKind: 'wallet' }, undefined, WALLET_DEFAULT_TOOLSETS);
  });
}

/**
 * The icons the hosted endpoints name by URL (`{base}/mcp/icons/<name>.svg`, mcp/icons.ts): the same
 * SVG documents svc-mcp sends as data: URIs. Public and cacheable (a day, revalidated by ETag); any
 * origin may fetch or embed them (a host's page renders them). An SVG can carry script, so the
 * document is sandboxed by its CSP and never sniffed as anything else.
 */
function mountIcons(app: Hono<AppEnv>): void {
  const files = new Map<string, { body: string; etag: string }>();
  for (const [name, svg] of Object.entries(ICON_SVGS) as [IconName, string][])
    files.set(`${name}.svg`, { body: svg, etag: `"${createHash('sha256').update(svg).digest('base64url').slice(0, 16)}"` });
  app.get(`${ICONS_PATH}:file`, (c) => {
    const file = files.get(c.req.param('file'));
    if (!file) throw notFound(`icon ${c.req.param('file')}`);
    const headers = {
      'content-type': 'image/svg+xml',
      'x-content-type-options': 'nosniff',
      'cache-control': 'public, max-age=86400',
      etag: file.etag,
      'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; sandbox",
      'access-control-allow-origin': '*',
      'cross-origin-resource-policy': 'cross-origin',
    };
    if (c.req.header('if-none-match') === file.etag) return c.body(null, 304, headers);
    return c.body(file.body, 200, headers);
  });
}
