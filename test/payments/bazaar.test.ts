import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { type DiscoveryExtension, extractDiscoveryInfoV1, validateDiscoveryExtension, validateDiscoveryExtensionSpec } from '@x402/extensions/bazaar';
import {
  type EIP712SignedOffer,
  extractOffersFromPaymentRequired,
  findAcceptsObjectFromSignedOffer,
  verifyOfferSignatureEIP712,
} from '@x402/extensions/offer-receipt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mountHostedMcp } from '../../cli/hosted-mcp.js';
import { exampleOf, httpDiscoveryOf } from '../../service/payments/bazaar.js';
import type { AgentAction } from '../../shared/agent-api/action.js';
import { AGENT_ACTIONS, toolNameOf } from '../../shared/agent-api/catalogue.js';
import { startHarness, type Harness } from '../helpers/harness.js';

// Bazaar discovery (x402 `bazaar` extension) on every 402, generated from the action catalogue: each
// declaration is accepted by the extension's own validators, and its example input is a request the
// route takes (it gets as far as asking for payment, not a 400).
let h: Harness;
const decode = (header: string | null) => JSON.parse(Buffer.from(header ?? '', 'base64').toString('utf8'));
const walletActions = (AGENT_ACTIONS as readonly AgentAction[]).filter((a) => a.identity);

let receiptSigner: string;

beforeAll(async () => {
  h = await startHarness('pglite', { SVC_X402_MODE: 'dev' }, { mount: (app, deps) => mountHostedMcp(app, deps) });
  receiptSigner = ((await (await fetch(`${h.url}/api/x402`)).json()) as { receiptSigner: string }).receiptSigner;
}, 120_000);
afterAll(async () => {
  await h?.close();
});

/**
 * The offer-receipt extension's signed offers (service/payments/offer-receipt.ts): a paid action's
 * PaymentRequired signs its one `accepts` entry, with the published receiptSigner's key; a free
 * identity call's (a sign-in challenge) offers nothing.
 */
async function expectOffers(required: { accepts: { amount: string }[] }, what: string): Promise<void> {
  const offers = extractOffersFromPaymentRequired(required as never);
  if (required.accepts[0]!.amount === '0') {
    expect(offers, what).toEqual([]);
    return;
  }
  expect(offers, what).toHaveLength(1);
  const { signer, payload } = await verifyOfferSignatureEIP712(offers[0] as EIP712SignedOffer);
  expect(signer.toLowerCase(), what).toBe(receiptSigner);
  expect(findAcceptsObjectFromSignedOffer(offers[0]!, required.accepts as never), what).toEqual(required.accepts[0]);
  expect(payload.amount, what).toBe(required.accepts[0]!.amount);
}

function expectValid(extension: DiscoveryExtension | undefined, what: string): void {
  expect(extension, what).toBeDefined();
  expect(validateDiscoveryExtension(extension!), what).toEqual({ valid: true });
  expect(validateDiscoveryExtensionSpec(extension as never), what).toEqual({ valid: true });
}

describe('Bazaar discovery (and signed offers) on every 402', () => {
  it(`HTTP: each of the ${walletActions.length} wallet actions' 402 declares a valid bazaar extension (v2) and a v1 discovery outputSchema`, async () => {
    expect(walletActions.length).toBeGreaterThan(10);
    for (const action of walletActions) {
      const path = action.path.replace(/:(\w+)/g, 'a-param');
      // The declared example body is one the route accepts: the call gets to payment, not to a 400.
      const example = (httpDiscoveryOf(action, {}).bazaar!.info.input as { body?: unknown }).body;
      const body = example === undefined ? undefined : JSON.stringify(example);
      const res = await fetch(`${h.url}${path}`, { method: action.method, headers: { 'content-type': 'application/json' }, body });
      expect(res.status, `${action.name}: ${body}`).toBe(402);
      const required = decode(res.headers.get('payment-required'));
      const extension = required.extensions?.bazaar as DiscoveryExtension;
      expectValid(extension, action.name);
      await expectOffers(required, action.name);
      const input = extension.info.input as { method?: string; body?: unknown; pathParams?: Record<string, string> };
      expect(input.method, action.name).toBe(action.method);
      expect(input.body, action.name).toEqual(example);
      if (action.path.includes(':')) expect(Object.values(input.pathParams ?? {}), action.name).toContain('a-param');
      const v1 = (await res.json()) as { accepts: Parameters<typeof extractDiscoveryInfoV1>[0][] };
      expect(extractDiscoveryInfoV1(v1.accepts[0]!), action.name).toMatchObject({ input: { type: 'http', method: action.method } });
      expect(extension.info.output, action.name).toMatchObject({ type: 'json', example: expect.objectContaining({ ok: true }) });
    }
  });

  it("MCP: each paid tool's PaymentRequired on /mcp/x402 declares the tool (name, input schema, output hint), valid", async () => {
    const client = new Client({ name: 'bazaar-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${h.url}/mcp/x402?toolsets=apps,tables,datasets,advanced`)));
    const listed = new Map((await client.listTools()).tools.map((t) => [t.name, t]));
    let checked = 0;
    for (const action of walletActions) {
      const tool = listed.get(toolNameOf(action));
      if (!tool) continue;
      const args = exampleOf(tool.inputSchema as Record<string, unknown>) as Record<string, unknown>;
      const result = (await client.callTool({ name: tool.name, arguments: args })) as CallToolResult;
      expect(result.isError, tool.name).toBe(true);
      expect(result.structuredContent, `${tool.name} ${JSON.stringify(args)}: ${JSON.stringify(result.content)}`).toBeDefined();
      const extension = (result.structuredContent as { extensions?: { bazaar?: DiscoveryExtension } }).extensions?.bazaar;
      expectValid(extension, tool.name);
      await expectOffers(result.structuredContent as never, tool.name);
      expect(extension!.info.input).toMatchObject({ type: 'mcp', toolName: tool.name, transport: 'streamable-http', inputSchema: { type: 'object' } });
      expect((extension!.info.input as { description?: string }).description, tool.name).toContain(action.description);
      checked++;
    }
    expect(checked).toBeGreaterThan(10);
    await client.close();
  });
});
