import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { AgentAction } from '../../shared/agent-api/action.js';
import { AGENT_ACTIONS, actionByName, toolNameOf } from '../../shared/agent-api/catalogue.js';
import { atomicToUsdc } from '../../shared/money.js';
import { LedgerEntrySchema } from '../../wallet/ledger.js';
import { quoteAction } from '../agent-call.js';
import type { McpContext } from '../context.js';
import { ToolFailure, guarded, okResult } from '../results.js';
import { QuoteSchema } from '../schemas.js';

const usdcOrNull = z.string().nullable();
export const WalletStatusSchema = z.object({
  configured: z.boolean().describe('Whether a wallet key is configured'),
  address: z.string().nullable(),
  serviceUrl: z.string(),
  network: z.string().nullable(),
  asset: z.string().nullable(),
  recipient: z.string().nullable().describe("The service's receiving wallet"),
  balance: z.string().nullable().describe('On-chain USDC balance (null when unknown)'),
  balanceNote: z.string().optional(),
  spent: z.object({ session: z.string(), day: z.string().describe('Rolling 24 h'), total: z.string() }),
  caps: z.object({ perCall: z.string(), perSession: z.string(), perDay: z.string(), total: usdcOrNull }),
  headroom: z.object({ session: z.string(), day: z.string(), total: usdcOrNull, nextCall: z.string().describe('The most the next paid call may cost') }),
  ledger: z.string().describe('Spend ledger file'),
});

export const ReceiptListSchema = z.object({
  count: z.number().int(),
  totalSpent: z.string().describe('Sum of the listed payments that count as spent (USDC)'),
  receipts: z.array(LedgerEntrySchema.omit({ pid: true, sessionId: true }).extend({ price: z.string().describe('USDC') })),
});

/** Resolves a tool or action name (`create_app_from_html` or `x402.create_app_from_html`). */
export function findAction(name: string): AgentAction | undefined {
  return actionByName(name.startsWith('x402.') ? name : `x402.${name}`);
}

export async function listReceipts(ctx: McpContext, limit = 50, action?: string): Promise<z.infer<typeof ReceiptListSchema>> {
  const all = await ctx.wallet.ledger.entries();
  const filtered = all
    .filter((e) => !action || e.action === action || e.action === `x402.${action}`)
    .slice(-limit)
    .reverse();
  const total = filtered.filter((e) => e.status !== 'released').reduce((s, e) => s + BigInt(e.amount), 0n);
  return {
    count: filtered.length,
    totalSpent: atomicToUsdc(total),
    receipts: filtered.map(({ pid: _p, sessionId: _s, ...e }) => ({ ...e, price: atomicToUsdc(BigInt(e.amount)) })),
  };
}

export function registerWalletTools(server: McpServer, ctx: McpContext): string[] {
  const ro = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
  server.registerTool(
    'wallet_status',
    {
      title: 'wallet status',
      description:
        'The paying wallet: address, on-chain USDC balance, what was spent this session / in the last 24 h / in total, the spend caps and the headroom left. Free; the caps are set by the user in the MCP server configuration and cannot be changed by a tool.',
      inputSchema: {},
      outputSchema: WalletStatusSchema,
      annotations: { title: 'wallet status', ...ro, openWorldHint: true },
      _meta: { 'svc/price': '0' },
    },
    () => guarded(async () => okResult({ ...(await ctx.wallet.status()) })),
  );
  server.registerTool(
    'quote',
    {
      title: 'quote',
      description:
        'Price of any action or tool (e.g. "create_app_from_html") and whether the spend caps allow paying it now. Without a name, quotes every paid action. Free; nothing is sent or paid.',
      inputSchema: { action: z.string().optional().describe('Tool or action name; omit for all') },
      outputSchema: z.object({ quotes: z.array(QuoteSchema) }),
      annotations: { title: 'quote', ...ro },
      _meta: { 'svc/price': '0' },
    },
    ({ action }: { action?: string }) =>
      guarded(async () => {
        const actions = action ? [findAction(action)] : (AGENT_ACTIONS as readonly AgentAction[]);
        if (actions.some((a) => !a))
          throw new ToolFailure(`Unknown action "${action}". Known: ${AGENT_ACTIONS.map((a) => toolNameOf(a as AgentAction)).join(', ')}.`);
        const quotes = [];
        for (const a of actions as AgentAction[]) quotes.push(await quoteAction(ctx, a));
        return okResult({ quotes });
      }),
  );
  server.registerTool(
    'list_receipts',
    {
      title: 'list receipts',
      description:
        'Payments this wallet made (newest first) from the local spend ledger: action, price, status (committed, released = refused and not charged, unknown/reserved = counted as spent), receipt id and transaction hash. Free.',
      inputSchema: {
        limit: z.number().int().min(1).max(1000).optional().describe('How many (default 50)'),
        action: z.string().optional().describe('Only this action'),
      },
      outputSchema: ReceiptListSchema,
      annotations: { title: 'list receipts', ...ro },
      _meta: { 'svc/price': '0' },
    },
    ({ limit, action }: { limit?: number; action?: string }) => guarded(async () => okResult(await listReceipts(ctx, limit ?? 50, action))),
  );
  return ['wallet_status', 'quote', 'list_receipts'];
}
