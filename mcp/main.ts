import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { loadMcpConfig } from './config.js';
import { startMcpHttp } from './http.js';
import { buildMcpServer, createMcpContext } from './server.js';

const USAGE = `svc-mcp — MCP server for svc (tools for every Agent API action, Tables, wallet, deploy_site)

  npx svc-mcp                      stdio (for Claude Desktop / Claude Code)
  npx svc-mcp --http [--port N] [--host H]
                                   streamable HTTP at http://H:N/mcp (default 127.0.0.1:8788)

Environment: SVC_URL, SVC_WALLET_PRIVATE_KEY | SVC_WALLET_KEY_FILE, SVC_MAX_USDC_PER_CALL,
SVC_MAX_USDC_PER_SESSION, SVC_MAX_USDC_PER_DAY, SVC_MAX_USDC_TOTAL, SVC_SPEND_LEDGER,
SVC_ALLOWED_ORIGINS, SVC_API_KEY, SVC_TABLE_WRITE_KEY, SVC_READ_ONLY=1 (see docs/mcp.md).`;

function arg(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

export async function main(args: string[] = process.argv.slice(2)): Promise<void> {
  if (args.includes('--help') || args.includes('-h')) {
    console.error(USAGE);
    return;
  }
  let config;
  try {
    config = loadMcpConfig(process.env);
  } catch (e) {
    // stdout carries the protocol: every message goes to stderr.
    console.error((e as Error).message);
    process.exit(2);
  }
  const ctx = await createMcpContext(config);
  const who = ctx.wallet.address ? `wallet ${ctx.wallet.address}` : 'no wallet (paid tools refuse)';
  if (args.includes('--http')) {
    const port = Number(arg(args, '--port') ?? 8788);
    const host = arg(args, '--host') ?? '127.0.0.1';
    const http = await startMcpHttp(ctx, port, host);
    console.error(`svc-mcp: streamable HTTP at ${http.url} → ${config.serviceUrl}; ${who}; prices from ${ctx.pricesSource}`);
    const stop = () => void http.close().then(() => process.exit(0));
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    return;
  }
  const server = buildMcpServer(ctx);
  await server.connect(new StdioServerTransport());
  console.error(`svc-mcp: stdio → ${config.serviceUrl}; ${who}; prices from ${ctx.pricesSource}`);
}

await main();
