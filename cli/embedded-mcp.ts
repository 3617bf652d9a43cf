import { loadMcpConfig } from '../mcp/config.js';
import { startMcpHttp } from '../mcp/http.js';
import { createMcpContext } from '../mcp/server.js';

/**
 * The MCP server started by `svc serve` beside the service: streamable HTTP on loopback, talking to
 * `serviceUrl` (unless SVC_URL says otherwise), paying from the wallet the environment configures
 * (none: free tools only). Stdio clients launch their own `svc-mcp`.
 */
export async function startEmbeddedMcp(
  env: Record<string, string | undefined>,
  serviceUrl: string,
  port: number,
): Promise<{ url: string; wallet: string; close(): Promise<void> }> {
  const config = { ...loadMcpConfig({ ...env, SVC_URL: env.SVC_URL ?? serviceUrl }), program: 'the service (npm start, svc serve)' };
  const ctx = await createMcpContext(config);
  const http = await startMcpHttp(ctx, port, '127.0.0.1', 'SVC_MCP_PORT');
  return { url: http.url, wallet: ctx.wallet.address ? `wallet ${ctx.wallet.address}` : 'no wallet: free tools only', close: http.close };
}
