import type { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { AgentAction } from '../../shared/agent-api/action.js';
import { AGENT_ACTIONS, actionByName, toolNameOf } from '../../shared/agent-api/catalogue.js';
import { atomicToUsdc, usdcToAtomic } from '../../shared/money.js';
import type { LedgerEntry } from '../../wallet/ledger.js';
import { quoteAction, quoteAmount, type Quote } from '../agent-call.js';
import { priceOf, type McpContext } from '../context.js';
import { addTool } from '../register.js';
import { ToolFailure, guarded, okResult } from '../results.js';
import type { DeployInput } from './deploy-files.js';
import { composesForAccount } from './account-tools.js';
import { deployPlan } from './deploy-site.js';
import { assertPlanWithinCaps } from './paid-steps.js';
import { datasetPlan } from './upload-dataset.js';

/** Resolves a tool or action name (`create_app_from_html` or `x402.create_app_from_html`). */
export function findAction(name: string): AgentAction | undefined {
  return actionByName(name.startsWith('x402.') ? name : `x402.${name}`);
}

/** One receipt line as a model reads it: what, how much, its state and where to look it up. */
function receiptLine(e: LedgerEntry) {
  return {
    at: new Date(e.reservedAt).toISOString(),
    tool: e.action.replace(/^x402\./, ''),
    price: atomicToUsdc(BigInt(e.amount)),
    status: e.status,
    receiptId: e.receiptId ?? null,
    txHash: e.txHash ?? null,
  };
}

export async function listReceipts(ctx: McpContext, limit: number, action?: string) {
  const all = await ctx.wallet.ledger.entries();
  const matching = all.filter((e) => !action || e.action === action || e.action === `x402.${action}`);
  const page = matching.slice(-limit).reverse();
  const spent = matching.filter((e) => e.status !== 'released').reduce((s, e) => s + BigInt(e.amount), 0n);
  return { count: matching.length, shown: page.length, totalSpent: atomicToUsdc(spent), receipts: page.map(receiptLine) };
}

/** quote for a composite tool: its whole plan priced from the same arguments the tool takes. */
async function quoteComposite(ctx: McpContext, tool: string, args: Record<string, unknown>): Promise<Quote & { steps: string[] }> {
  // Publishing and converting for the account (a personal key, no wallet) pay nothing.
  if (composesForAccount(ctx))
    return {
      ...(await quoteAmount(ctx, tool, tool, 0n)),
      steps: tool === 'deploy_site' ? ['account_publish_app', 'account_write_app_files'] : ['account_create_dataset'],
    };
  const { plan, planned } =
    tool === 'deploy_site'
      ? deployPlan(ctx, Object.keys(args).length ? (args as DeployInput) : { appName: 'x', files: [{ path: 'index.html', content: '<p>' }] })
      : datasetPlan(ctx);
  const q = await quoteAmount(ctx, tool, tool, planned, (totals) => assertPlanWithinCaps(ctx, tool, plan, planned, totals));
  return { ...q, steps: plan.map((a) => toolNameOf(a)) };
}

/** The tools quote prices: the composites and every action with a price (free ones are not paid tools). */
function paidToolNames(ctx: McpContext): string[] {
  const paid = (AGENT_ACTIONS as readonly AgentAction[]).filter((a) => usdcToAtomic(priceOf(ctx, a.name)) > 0n);
  return ['deploy_site', 'upload_dataset', ...paid.map((a) => toolNameOf(a))];
}

export function registerWalletTools(server: McpServer, ctx: McpContext): void {
  addTool(
    server,
    ctx,
    'wallet_status',
    {
      description:
        'The paying wallet: address, USDC balance, spending (session, 24 h, total, per tool, paid calls this hour), the caps and the headroom left, and the payee pinned per service. Caps are set by the user in the MCP configuration; no tool can change them. Free.',
      inputSchema: {},
    },
    () => guarded(async () => okResult({ ...(await ctx.wallet.status()) })),
  );
  addTool(
    server,
    ctx,
    'quote',
    {
      description:
        'Price of a paid tool (composites too: pass the args you would give deploy_site to price its plan) and whether the caps allow it now. Without tool: every paid tool. Free; nothing is sent.',
      inputSchema: {
        tool: z.string().optional().describe('Tool name, e.g. "deploy_site" or "create_app_from_html"; omit for all'),
        args: z.record(z.string(), z.unknown()).optional().describe('For deploy_site: its arguments (files or folder, appId or appName)'),
      },
    },
    ({ tool, args }: { tool?: string; args?: Record<string, unknown> }) =>
      guarded(async () => {
        if (tool === 'deploy_site' || tool === 'upload_dataset') return okResult({ quotes: [await quoteComposite(ctx, tool, args ?? {})] });
        const actions = tool ? [findAction(tool)] : (AGENT_ACTIONS as readonly AgentAction[]);
        if (actions.some((a) => !a)) throw new ToolFailure(`Unknown tool "${tool}". Paid tools: ${paidToolNames(ctx).join(', ')}.`);
        const quotes = [];
        for (const a of actions as AgentAction[]) quotes.push(await quoteAction(ctx, a));
        return okResult({ quotes: tool ? quotes : quotes.filter((q) => q.price !== '0') });
      }),
  );
  addTool(
    server,
    ctx,
    'list_receipts',
    {
      description:
        'Payments of this wallet, newest first (status: committed; released = refused, not charged; unknown/reserved = counted as spent). Default 10; the full ledger is the resource svc://receipts. Free.',
      inputSchema: {
        limit: z.number().int().min(1).max(200).optional().describe('How many (default 10)'),
        tool: z.string().optional().describe('Only this tool'),
      },
    },
    ({ limit, tool }: { limit?: number; tool?: string }) => guarded(async () => okResult(await listReceipts(ctx, limit ?? 10, tool))),
  );
}
