import type { McpServer, ServerContext } from '@modelcontextprotocol/server';
import type { CallToolResult, Tool } from '@modelcontextprotocol/server';
import { ACCOUNT_OPERATIONS } from '../shared/account-api/operations.js';
import { atomicToUsdc, usdcToAtomic } from '../shared/money.js';
import { approvePayment, namedArguments } from './approval.js';
import { callPaidTool } from '../wallet/mcp-payer.js';
import { priceOf, type McpContext, type Upstream } from './context.js';
import { addForwardedTool } from './register.js';
import { guarded } from './results.js';
import { TOOLSET_OF, type Toolset } from './toolsets.js';
import { findAction } from './tools/wallet-tools.js';

/*
 * svc-mcp in front of a hosted svc (SVC_TRANSPORT=mcp): the remote server's tools, forwarded and paid
 * by the local wallet. The connection is upstream-client.ts, loaded only in that mode.
 */

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
      const approval = await approvePayment(ctx, extra, {
        tool: tool.name,
        args,
        what: namedArguments(args),
        amount: usdcToAtomic(quote),
        precheck: action ? () => ctx.wallet.precheck(action.name, quote) : undefined,
      });
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
