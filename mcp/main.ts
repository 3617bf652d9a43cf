import fs from 'node:fs';
import path from 'node:path';
// Only node: modules at the top: `--help` and `--new-wallet` answer without loading the server, and
// the rest is imported when it is needed (start-up time is what a client waits for).

const USAGE = `svc-mcp — MCP server for svc (tools for every Agent API action, Tables, wallet, deploy_site)

  svc-mcp                          stdio (for Claude Desktop / Claude Code)
  svc-mcp --http [--port N] [--host H]
                                   streamable HTTP at http://H:N/mcp (default 127.0.0.1:8788)
  svc-mcp --new-wallet FILE        write a new private key to FILE (mode 0600, never overwrites)
                                   and print its address; then set SVC_WALLET_KEY_FILE=FILE
  svc-mcp --accept-payee URL       accept the recipient/network/asset the service at URL names now
                                   as its pinned payee (after it really changed; see docs/mcp.md)

Environment: SVC_URL, SVC_WALLET_PRIVATE_KEY | SVC_WALLET_KEY_FILE, SVC_MAX_USDC_PER_CALL,
SVC_MAX_USDC_PER_SESSION, SVC_MAX_USDC_PER_DAY, SVC_MAX_USDC_TOTAL, SVC_SPEND_LEDGER,
SVC_ALLOWED_ORIGINS, SVC_API_KEY, SVC_TRANSPORT=http|mcp, SVC_TABLE_WRITE_KEY, SVC_TABLE_KEYS_FILE,
SVC_READ_ONLY=1, SVC_TOOLSETS, SVC_PAY_TO, SVC_APPROVAL_ABOVE, SVC_MAX_USDC_PER_TOOL,
SVC_MAX_PAID_CALLS_PER_HOUR (see docs/mcp.md).
Package: svc-agent-host (from the registry: npx -y -p svc-agent-host svc-mcp). A running svc serves
this server too, at its own version: its start banner gives the npx command (<svc>/mcp/svc-mcp.tgz
redirects to the current package).`;

function arg(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

export async function main(args: string[] = process.argv.slice(2)): Promise<void> {
  if (args.includes('--help') || args.includes('-h')) {
    console.error(USAGE);
    return;
  }
  if (args.includes('--accept-payee')) {
    const { acceptPayeeFromCli } = await import('../wallet/accept-payee.js');
    process.exitCode = await acceptPayeeFromCli(arg(args, '--accept-payee') ?? '', process.env);
    return;
  }
  const newWallet = arg(args, '--new-wallet');
  if (newWallet) {
    const { generatePrivateKey, privateKeyToAccount } = await import('../wallet/new-key.js');
    const file = path.resolve(newWallet);
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    const key = generatePrivateKey();
    try {
      fs.writeFileSync(file, `${key}\n`, { mode: 0o600, flag: 'wx' });
    } catch (e) {
      console.error(
        `svc-mcp: cannot create ${file}: ${(e as NodeJS.ErrnoException).code === 'EEXIST' ? 'it already exists (never overwritten)' : (e as Error).message}`,
      );
      process.exit(2);
    }
    console.log(privateKeyToAccount(key).address);
    console.error(`svc-mcp: new wallet key written to ${file}; set SVC_WALLET_KEY_FILE=${file}`);
    return;
  }
  const [{ loadMcpConfig }, { buildMcpServer, createMcpContext }] = await Promise.all([import('./config.js'), import('./server.js')]);
  let config: ReturnType<typeof loadMcpConfig>;
  try {
    config = loadMcpConfig(process.env);
  } catch (e) {
    // stdout carries the protocol: every message goes to stderr.
    console.error((e as Error).message);
    process.exit(2);
  }
  const ctx = await createMcpContext(config);
  const who = [
    ctx.wallet.address
      ? `wallet ${ctx.wallet.address}`
      : config.apiKey
        ? 'no wallet'
        : 'no wallet and no key: paid tools refuse. Free: SVC_API_KEY=svc_pat_… (a personal key) makes the account tools act for that account; to pay: SVC_WALLET_KEY_FILE',
    config.apiKey ? 'personal key (the account tools act as its account)' : '',
  ]
    .filter(Boolean)
    .join(', ');
  // Toolsets asked for by name that nothing here can use: said once, not left to an empty list.
  const needKey = (['account', 'functions'] as const).filter((t) => config.toolsets.enabled.has(t));
  if (!config.apiKey && needKey.length)
    console.error(
      `svc-mcp: the ${needKey.join(' and ')} toolset${needKey.length > 1 ? 's act' : ' acts'} as an account: set SVC_API_KEY (a personal key, svc_pat_…) to list ${needKey.length > 1 ? 'their' : 'its'} tools`,
    );
  if (args.includes('--http')) {
    const port = Number(arg(args, '--port') ?? 8788);
    const host = arg(args, '--host') ?? '127.0.0.1';
    const { startMcpHttp } = await import('./http.js');
    const http = await startMcpHttp(ctx, port, host);
    console.error(`svc-mcp: streamable HTTP at ${http.url} → ${config.serviceUrl}; ${who}`);
    void ctx.ready.then(() => console.error(`svc-mcp: prices from ${ctx.pricesSource}`));
    const stop = () => void http.close().then(() => process.exit(0));
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    return;
  }
  // Both eras on one stdio connection: the opening exchange (initialize or server/discover) picks it,
  // and the connection keeps a server of its own (plus one for a discover probe a 2025 client drops).
  const { serveStdio } = await import('@modelcontextprotocol/server/stdio');
  serveStdio(() => buildMcpServer({ ...ctx, askOverSession: true }));
  console.error(`svc-mcp: stdio → ${config.serviceUrl}; ${who}`);
  void ctx.ready.then(() => console.error(`svc-mcp: prices from ${ctx.pricesSource}`));
}

await main();
