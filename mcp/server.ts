import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { createWallet } from '../wallet/wallet.js';
import type { McpConfig } from './config.js';
import { loadPrices, type McpContext } from './context.js';
import { registerResources } from './resources.js';
import { registerActionTools } from './tools/action-tools.js';
import { registerDeploySite } from './tools/deploy-site.js';
import { registerTableTools } from './tools/table-tools.js';
import { registerUploadDataset } from './tools/upload-dataset.js';
import { registerWalletTools } from './tools/wallet-tools.js';

export const MCP_SERVER_NAME = 'svc';
export const MCP_SERVER_VERSION = '0.1.0';

const INSTRUCTIONS = `Tools for svc, a site-hosting service for AI agents. Paid tools pay in USDC from the configured wallet, automatically and only within the user's spend caps (per call, per session, per 24 h, optional lifetime); every paid tool accepts dryRun: true to see the price without paying. Start with suggest_site_name + create_app_from_html, or deploy_site for several files. wallet_status shows the balance, spending and caps; list_receipts shows every payment.`;

/** Builds the shared context once per process: config, wallet, and the prices the tools quote. */
export async function createMcpContext(config: McpConfig, options: { fetch?: typeof fetch; now?: () => number } = {}): Promise<McpContext> {
  const fetchImpl = options.fetch ?? fetch;
  const { prices, source } = await loadPrices(config.serviceUrl, fetchImpl);
  return { config, wallet: createWallet(config.wallet, { fetch: fetchImpl, now: options.now }), prices, pricesSource: source, fetch: fetchImpl };
}

/** One MCP server (per session/connection) over the shared context. */
export function buildMcpServer(ctx: McpContext): McpServer {
  const server = new McpServer(
    { name: MCP_SERVER_NAME, version: MCP_SERVER_VERSION },
    { capabilities: { tools: {}, resources: {} }, instructions: INSTRUCTIONS },
  );
  registerActionTools(server, ctx);
  registerTableTools(server, ctx);
  registerWalletTools(server, ctx);
  registerDeploySite(server, ctx);
  registerUploadDataset(server, ctx);
  registerResources(server, ctx);
  return server;
}
