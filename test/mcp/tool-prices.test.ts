import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mountHostedMcp } from '../../cli/hosted-mcp.js';
import { exampleOf } from '../../service/payments/bazaar.js';
import type { AgentAction } from '../../shared/agent-api/action.js';
import { AGENT_ACTIONS, toolNameOf } from '../../shared/agent-api/catalogue.js';
import { USDC_ADDRESS } from '../../shared/agent-api/network.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { connectHttp, modelSize } from './helpers.js';

// Prices before the call: every paid tool of the hosted endpoints lists, in tools/list, the accepts
// its PaymentRequired will carry (`_meta.x402`, as Apify's mcpc reads it to budget and pre-sign), in
// step with /api/x402/pricing; free tools list none. The deployment overrides two prices, so the
// listed price is the service's, not the catalogue's.
let h: Harness;
const OVERRIDES = { 'x402.create_app_from_html': '0.0123', 'x402.publish_app': '0' };

interface Pricing {
  recipient: string;
  network: string;
  pricing: { action: string; price: string; amount: string; network: string }[];
}
let pricing: Pricing;

beforeAll(async () => {
  h = await startHarness(
    'pglite',
    { SVC_X402_MODE: 'dev', SVC_X402_PRICES: JSON.stringify(OVERRIDES), SVC_X402_PRICES_UPDATED_AT: '2026-12-01T00:00:00Z' },
    { mount: (app, deps) => mountHostedMcp(app, deps) },
  );
  pricing = (await (await fetch(`${h.url}/api/x402/pricing`)).json()) as Pricing;
}, 120_000);
afterAll(async () => {
  await h?.close();
});

const actionOf = (tool: string) => (AGENT_ACTIONS as readonly AgentAction[]).find((a) => toolNameOf(a) === tool);
const priceEntry = (action: AgentAction) => pricing.pricing.find((p) => p.action === action.name)!;

async function connect(path: string, key?: string): Promise<Client> {
  const client = new Client({ name: 'prices-test', version: '1.0.0' });
  const requestInit = key ? { headers: { authorization: `Bearer ${key}` } } : undefined;
  await client.connect(new StreamableHTTPClientTransport(new URL(`${h.url}${path}`), { requestInit }));
  return client;
}

/** Each Agent API tool listed, paid (by the service's pricing) or free, with its `_meta.x402`. */
function agentTools(tools: Tool[]): { tool: Tool; action: AgentAction; paid: boolean; x402: unknown }[] {
  return tools.flatMap((tool) => {
    const action = actionOf(tool.name);
    if (!action) return [];
    return [{ tool, action, paid: priceEntry(action).amount !== '0', x402: tool._meta?.x402 }];
  });
}

describe('a paid tool lists its price before the call', () => {
  it("/mcp/x402: each paid tool's _meta.x402 is what /api/x402/pricing says and what an unpaid call asks for; free tools list none", async () => {
    expect(pricing.pricing.find((p) => p.action === 'x402.create_app_from_html')?.amount).toBe('12300');
    const client = await connect('/mcp/x402?toolsets=all');
    try {
      const listed = agentTools((await client.listTools()).tools as Tool[]);
      const paid = listed.filter((t) => t.paid);
      const free = listed.filter((t) => !t.paid);
      expect(paid.length).toBeGreaterThan(10);
      // Free by the catalogue (list_apps, describe_api, …) and by this deployment (publish_app).
      expect(free.map((t) => t.tool.name)).toEqual(expect.arrayContaining(['list_apps', 'describe_api', 'publish_app']));
      for (const { tool, x402 } of free) expect(x402, tool.name).toBeUndefined();
      for (const { tool, action, x402 } of paid) {
        const entry = priceEntry(action);
        expect(x402, tool.name).toEqual({
          paymentRequired: true,
          accepts: [
            {
              scheme: 'exact',
              network: entry.network,
              amount: entry.amount,
              asset: USDC_ADDRESS,
              payTo: pricing.recipient,
              maxTimeoutSeconds: expect.any(Number),
              extra: { name: 'USD Coin', version: '2' },
            },
          ],
        });
        // The call without payment asks for exactly what was listed.
        const args = exampleOf(tool.inputSchema as Record<string, unknown>) as Record<string, unknown>;
        const result = (await client.callTool({ name: tool.name, arguments: args })) as CallToolResult;
        const required = result.structuredContent as { x402Version?: number; accepts?: unknown } | undefined;
        expect(required?.x402Version, `${tool.name}: ${JSON.stringify(result.content)}`).toBe(2);
        expect(required?.accepts, tool.name).toEqual((x402 as { accepts: unknown }).accepts);
      }
      // The views' _meta is kept beside the price.
      expect(paid.find((t) => t.tool.name === 'create_app_from_html')?.tool._meta).toMatchObject({ ui: { resourceUri: 'ui://svc/site' } });
    } finally {
      await client.close();
    }
  });

  it("/mcp/x402's default list stays within the 16,000 characters a model is shown; each price adds at most 300 on the wire", async () => {
    const client = await connect('/mcp/x402');
    try {
      const { tools } = await client.listTools();
      const priced = tools.filter((t) => t._meta?.x402);
      expect(priced.length).toBeGreaterThan(5);
      // The model is shown name, description and schema (asModelSees): the accepts are the wallet's.
      expect(modelSize(tools)).toBeLessThanOrEqual(16_000);
      for (const t of priced) expect(JSON.stringify({ x402: t._meta!.x402 }).length, t.name).toBeLessThanOrEqual(300);
    } finally {
      await client.close();
    }
  });

  it("the signed-in /mcp lists the price on its paid toolset only (the account's tools are free)", async () => {
    const { key } = await h.account();
    const client = await connect('/mcp?toolsets=default,apps', key);
    try {
      const { tools } = await client.listTools();
      const priced = tools.filter((t) => t._meta?.x402).map((t) => t.name);
      const paid = agentTools(tools as Tool[]).filter((t) => t.paid);
      expect(paid.length).toBeGreaterThan(5);
      expect(priced.sort()).toEqual(paid.map((t) => t.tool.name).sort());
      const create = paid.find((t) => t.tool.name === 'create_app_from_html')!;
      expect((create.x402 as { accepts: { amount: string }[] }).accepts[0]!.amount).toBe('12300');
    } finally {
      await client.close();
    }
  });

  it("svc-mcp's paid tools say their price in the description (its wallet pays: no _meta.x402 for a client to sign from)", async () => {
    const s = await connectHttp({ SVC_URL: h.url, SVC_TOOLSETS: 'all', SVC_WALLET_PRIVATE_KEY: `0x${'33'.repeat(32)}` });
    try {
      const listed = agentTools((await s.client.listTools()).tools as Tool[]);
      expect(listed.filter((t) => t.paid).length).toBeGreaterThan(10);
      for (const { tool, action, paid, x402 } of listed) {
        expect(x402, tool.name).toBeUndefined();
        const { price } = priceEntry(action);
        expect(tool.description, tool.name).toContain(paid ? `Costs ${price} USDC from the wallet` : 'Free.');
      }
    } finally {
      await s.close();
    }
  });
});
