import type { McpServer } from '@modelcontextprotocol/server';
import { AGENT_ACTIONS, toolNameOf } from '../shared/agent-api/catalogue.js';
import type { AgentAction } from '../shared/agent-api/action.js';
import { loadPrices, type McpContext } from './context.js';

const json = (uri: string, value: unknown) => ({ contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(value, null, 1) }] });

/** svc://pricing (live), svc://receipts (the spend ledger), svc://wallet (status and caps). */
export function registerResources(server: McpServer, ctx: McpContext): void {
  server.registerResource(
    'pricing',
    'svc://pricing',
    {
      title: 'Agent API prices',
      description: 'Current price of every action in USDC, read from the service (the built-in catalogue when it cannot be reached).',
      mimeType: 'application/json',
    },
    async (uri) => {
      const { prices, source } = await loadPrices(ctx.config.serviceUrl, ctx.fetch);
      return json(uri.href, {
        source,
        currency: 'USDC',
        pricing: (AGENT_ACTIONS as readonly AgentAction[]).map((a) => ({
          action: a.name,
          tool: toolNameOf(a),
          price: prices.get(a.name) ?? a.price,
          quotedByThisServer: ctx.prices.get(a.name) ?? a.price,
        })),
      });
    },
  );
  server.registerResource(
    'receipts',
    'svc://receipts',
    { title: 'Spend ledger', description: 'Every payment this wallet made, newest first.', mimeType: 'application/json' },
    async (uri) => json(uri.href, { receipts: (await ctx.wallet.ledger.entries()).reverse() }),
  );
  server.registerResource(
    'wallet',
    'svc://wallet',
    { title: 'Wallet', description: 'Address, balance, spending and caps of the paying wallet.', mimeType: 'application/json' },
    async (uri) => json(uri.href, await ctx.wallet.status()),
  );
}
