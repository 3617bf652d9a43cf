import type { PersonAsker } from './ask-person.js';
import type { TaskStore } from '../shared/mcp-tasks.js';
import type { TableWriteKeys } from './table-write-keys.js';
import { AGENT_ACTIONS, actionByName } from '../shared/agent-api/catalogue.js';
import { PricingResponseSchema } from '../shared/agent-api/actions/apps.js';
import type { Wallet } from '../wallet/wallet.js';
import type { AgentAction } from '../shared/agent-api/action.js';
import type { PaymentRequirementV2 } from '../shared/agent-api/payment-requirements.js';
import type { Scope } from '../shared/scopes.js';
import type { McpConfig } from './config.js';
import type { ToolsetChoice } from './toolsets.js';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Tool } from '@modelcontextprotocol/server';

/** Everything a tool needs; built once per process and shared by every MCP session. */
export interface McpContext {
  config: McpConfig;
  wallet: Wallet;
  /**
   * Action name → the price this server advertises and quotes (decimal USDC): the catalogue's until
   * `ready`, then the service's (filled in place).
   */
  prices: Map<string, string>;
  /** Where the prices came from: the service's pricing endpoint at start, or the built-in catalogue. */
  pricesSource: 'service' | 'catalogue';
  /**
   * Settles when the service's prices are in `prices` (or it could not be asked). `initialize` is
   * answered without it; tools/list and every tool call wait for it, so no description or quote
   * shows a price the service does not charge.
   */
  ready: Promise<void>;
  /** Reaches the service: plain fetch, or (hosted endpoint) the service's routes in process with the caller's credential. */
  fetch: typeof fetch;
  /** Which toolsets this session lists. */
  toolsets: ToolsetChoice;
  /** Set on the hosted endpoint: a signed-in caller whose own wallet pays (x402 over MCP `_meta`). */
  hosted?: HostedCaller;
  /** Hosted endpoint: the command that runs svc-mcp against this service (its own package: cli/svc-mcp-package.ts). */
  svcMcpCommand?: string;
  /**
   * Hosted endpoint: the x402 extensions a paid tool's PaymentRequired declares for the tool (Bazaar
   * discovery of the MCP tool: service/payments/bazaar.ts), replacing the HTTP route's.
   */
  paymentDiscovery?: (action: AgentAction, tool: { name: string; description: string; inputSchema: Record<string, unknown> }) => Record<string, unknown>;
  /**
   * Hosted endpoint: the `accepts` a paid action's PaymentRequired carries (the service's 402, built
   * from the deployment's prices: service/payments/payment-required.ts), listed in its tool's
   * `_meta.x402` so a client budgets and signs before the call; undefined for a free action.
   */
  paymentAccepts?: (action: AgentAction) => PaymentRequirementV2[] | undefined;
  /** SVC_TRANSPORT=mcp: the remote /mcp whose tools this server forwards, paying from the local wallet. */
  upstream?: Upstream;
  /** The write keys of Tables this server's wallet created (table-write-keys.ts; unused when hosted). */
  tableWriteKeys: TableWriteKeys;
  /**
   * Asks the person before a destructive tool acts (hosted endpoint: `input_required`, mcp/ask-person.ts);
   * absent, or a client that cannot be asked: the tool acts as before.
   */
  askPerson?: PersonAsker;
  /**
   * svc-mcp over stdio: one client on a session, so a 2025-era call can ask the person with an
   * `elicitation/create` request (mcp/approval.ts). Stateless HTTP has no way back on 2025.
   */
  askOverSession?: boolean;
  /**
   * Where this face keeps the tasks of long tool calls (MCP Tasks extension, mcp/tasks/extension.ts):
   * svc-mcp in its process, the hosted endpoints in the service's database. Absent: no tasks.
   */
  tasks?: TaskStore;
}

/** A hosted svc's /mcp that this server forwards tools to (mcp/upstream.ts). */
export interface Upstream {
  client: Client;
  /** The remote tool list, read once at connect (the hosted endpoint's list depends only on the key). */
  tools: Tool[];
  close(): Promise<void>;
}

/** The caller of the hosted endpoint, as its credential says. */
export interface HostedCaller {
  /** Scopes the credential grants: the Account API tools listed are those they allow (none for a wallet). */
  scopes: readonly Scope[];
  /** The caller's own credential, sent as the Table API's x-svc-api-key by the table tools (none for a wallet). */
  credential?: string;
  /**
   * Personal keys can do everything their scopes allow; OAuth tokens cannot invoke Functions (spec
   * §8); a wallet (`/mcp/x402`, no sign-in) has only the Agent API, paid and owned by its signatures.
   */
  credentialKind: 'personal_key' | 'oauth_token' | 'wallet';
  /**
   * How this caller reads "payment required": a tool result (the x402 MCP transport; default), or a
   * JSON-RPC error with code 402 and the PaymentRequired in `error.data` (the earlier transport draft:
   * mcp-go-x402 and its kin), asked for with `?x402_errors=jsonrpc` on the endpoint's URL.
   */
  x402Errors?: 'result' | 'jsonrpc';
}

export function cataloguePrices(): Map<string, string> {
  return new Map(AGENT_ACTIONS.map((a) => [a.name, a.price]));
}

/**
 * Current prices from `GET /api/x402/pricing` (a deployment may override the catalogue's); the
 * catalogue when the service cannot be reached. Tool descriptions and quotes use these.
 */
export async function loadPrices(
  serviceUrl: string,
  fetchImpl: typeof fetch = fetch,
): Promise<{ prices: Map<string, string>; source: 'service' | 'catalogue' }> {
  const prices = cataloguePrices();
  try {
    const res = await fetchImpl(`${serviceUrl}/api/x402/pricing`, { signal: AbortSignal.timeout(3000) });
    const parsed = PricingResponseSchema.safeParse(await res.json());
    if (!res.ok || !parsed.success) return { prices, source: 'catalogue' };
    for (const p of parsed.data.pricing) if (actionByName(p.action)) prices.set(p.action, p.price);
    return { prices, source: 'service' };
  } catch {
    return { prices, source: 'catalogue' };
  }
}

export function priceOf(ctx: McpContext, actionName: string): string {
  return ctx.prices.get(actionName) ?? actionByName(actionName)?.price ?? '0';
}
