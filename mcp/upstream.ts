import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { McpServer, ServerContext } from '@modelcontextprotocol/server';
import type { CallToolResult, Tool } from '@modelcontextprotocol/server';
import { ACCOUNT_OPERATIONS } from '../shared/account-api/operations.js';
import { atomicToUsdc, usdcToAtomic } from '../shared/money.js';
import { approvePayment, namedArguments } from './approval.js';
import { WalletError } from '../wallet/errors.js';
import { callPaidTool } from '../wallet/mcp-payer.js';
import { priceOf, type McpContext, type Upstream } from './context.js';
import { addForwardedTool } from './register.js';
import { guarded } from './results.js';
import { TOOLSET_OF, type Toolset } from './toolsets.js';
import { findAction } from './tools/wallet-tools.js';

/**
 * svc-mcp in front of a hosted svc (SVC_TRANSPORT=mcp): the remote server's tools beside the local
 * wallet tools. With SVC_API_KEY it signs in at `/mcp` (the tools the key's scopes allow, Account API
 * included); without one it uses `/mcp/x402`, where the wallet alone is the caller (Agent API and
 * Table tools). A paid tool is paid by the local wallet through x402 over MCP
 * (`_meta["x402/payment"]`, wallet/mcp-payer.ts): the same caps, ledger and receipts as payments over
 * HTTP, and the remote endpoint never holds a wallet of ours.
 */
/**
 * The fetch of the connection to the hosted endpoint: it never follows a redirect, since a paid
 * call's payment rides in the request (`_meta["x402/payment"]`) and would go wherever the redirect
 * points. A redirect is refused, naming SVC_URL; a paid call met by one counts its payment as spent
 * until the chain tells (mcp-payer.ts), as over HTTP.
 */
export function withoutRedirects(fetchImpl: typeof fetch = fetch): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const res = await fetchImpl(input, { ...init, redirect: 'manual' });
    if (res.status < 300 || res.status >= 400) return res;
    throw new WalletError(
      'redirect_refused',
      `The hosted MCP endpoint answered with a redirect (HTTP ${res.status} to ${res.headers.get('location') ?? 'nowhere'}); svc-mcp never follows one, as a paid call's payment rides in the request. Check SVC_URL (the service's own address, e.g. https rather than http); tell the user.`,
    );
  }) as typeof fetch;
}

/** Connects to the hosted endpoint (signed in with the personal key, or as a wallet) and reads its tool list. */
export async function connectUpstream(serviceUrl: string, apiKey: string | undefined, fetchImpl?: typeof fetch): Promise<Upstream> {
  const client = new Client({ name: 'svc-mcp', version: '0.1.0' });
  const url = new URL(`${serviceUrl}${apiKey ? '/mcp' : '/mcp/x402'}?toolsets=all`);
  const requestInit = apiKey ? { headers: { authorization: `Bearer ${apiKey}` } } : undefined;
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit, fetch: withoutRedirects(fetchImpl) }));
  const tools: Tool[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor ? { cursor } : undefined);
    tools.push(...(page.tools as Tool[]));
    cursor = page.nextCursor;
  } while (cursor);
  return { client, tools, close: () => client.close() };
}

/** The local toolset of a remote tool (its name is one of ours): what SVC_TOOLSETS filters on. */
function toolsetOfRemote(name: string): Toolset {
  return TOOLSET_OF[name] ?? ACCOUNT_OPERATIONS.find((o) => o.tool === name)?.toolset ?? 'advanced';
}

/** One remote tool, forwarded: the wallet pays when the result asks for payment, at most the advertised price. */
function forward(ctx: McpContext, upstream: Upstream, tool: Tool): (args: Record<string, unknown>, extra: ServerContext) => Promise<CallToolResult> {
  const action = findAction(tool.name);
  return (args, extra) =>
    guarded(async () => {
      const quote = action ? priceOf(ctx, action.name) : '0';
      // The most this call may sign: above the person's line, they are asked first (mcp/approval.ts).
      const approval = await approvePayment(ctx, extra, { tool: tool.name, args, what: namedArguments(args), amount: usdcToAtomic(quote) });
      if (approval.kind === 'ask') return approval.result as never;
      const { result, entry } = await callPaidTool(ctx.wallet, upstream.client, { name: tool.name, arguments: args, quote, approved: approval.approved });
      const out = result as CallToolResult;
      if (entry?.status !== 'committed') return out;
      const paid = `Paid ${atomicToUsdc(BigInt(entry.amount))} USDC from the wallet${entry.txHash ? ` (tx ${entry.txHash})` : ''}.`;
      return { ...out, content: [{ type: 'text', text: paid }, ...(out.content ?? [])] };
    });
}

export function registerUpstreamTools(server: McpServer, ctx: McpContext, upstream: Upstream): void {
  for (const tool of upstream.tools) {
    if (ctx.config.readOnly && !tool.annotations?.readOnlyHint) continue;
    addForwardedTool(server, ctx, tool, forward(ctx, upstream, tool), toolsetOfRemote(tool.name));
  }
}
