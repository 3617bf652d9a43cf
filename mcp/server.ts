import { randomBytes } from 'node:crypto';
import { TableWriteKeys } from './table-write-keys.js';
import { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { createWallet } from '../wallet/wallet.js';
import type { McpConfig } from './config.js';
import { cataloguePrices, loadPrices, type McpContext } from './context.js';
import { serviceFetch } from './service-fetch.js';
import { tracedFetch } from './trace-context.js';
import { addTool, addUnavailableTool, hasTool, iconsFor, installCompactToolList, installToolCallHints, toolsOf } from './register.js';
import { PersonAsker, usedStatesInMemory } from './ask-person.js';
import { guarded, okResult, ToolFailure } from './results.js';
import { installX402Bindings, X402_EXTENSION_CAPABILITY } from './x402-bindings.js';
import { installTasks, ownerOfCredential, TASKS_EXTENSION_CAPABILITY } from './tasks/extension.js';
import { tasksInMemory } from './tasks/store.js';
import { registerResources } from './resources.js';
import { accountToolListed, composesForAccount, registerAccountTools } from './tools/account-tools.js';
import { registerActionTools } from './tools/action-tools.js';
import { registerDeploySite } from './tools/deploy-site.js';
import { registerTableTools } from './tools/table-tools.js';
import { registerUploadDataset } from './tools/upload-dataset.js';
import { registerWalletTools } from './tools/wallet-tools.js';
import { TOOLSET_NAMES, TOOLSETS, type Toolset } from './toolsets.js';
import { registerUpstreamTools } from './upstream.js';
import { registerViews } from './views/views.js';

export const MCP_SERVER_NAME = 'svc';
export const MCP_SERVER_VERSION = '0.1.0';

const LOCAL_INSTRUCTIONS = `svc hosts apps (static sites), Tables and datasets for agents. Paid tools pay USDC from the configured wallet, only within the user's spend caps; quote prices any call first. Start with deploy_site (or suggest_site_name + create_app_from_html); wallet_status shows balance and caps.`;
const ACCOUNT_INSTRUCTIONS = `svc hosts apps (static sites), Tables and datasets. No wallet is configured: the tools act as the account of SVC_API_KEY, free, within its scopes. Start with deploy_site (a local folder or inline files); upload_dataset turns a data file into a queryable dataset; account_create_table adds a Table to an app, the table_* tools read and write its records.`;
const WALLET_INSTRUCTIONS = `svc hosts apps (static sites), Tables and datasets for agents. No sign-in here: your wallet is your identity and pays each paid tool over x402 (the result asks for payment; sign it and repeat the call with _meta["x402/payment"]). Apps you create belong to that wallet. Start with suggest_site_name + create_app_from_html.`;
const SIGNED_IN_INSTRUCTIONS = `svc hosts apps (static sites), Tables, datasets and functions. The account tools act as the signed-in account, free, within its scopes: account_publish_app publishes html and files, account_write_app_files changes them, account_create_table and account_create_dataset add data APIs to an app; the table_* tools read and write records.`;
/** Said to a signed-in session that lists tools its wallet pays (?toolsets=…,apps or datasets). */
const PAID_BY_YOUR_WALLET = ` The Agent API tools (create_app_from_html…) are paid by your own wallet over x402: a paid call answers with a PaymentRequired result; sign it and repeat the call with _meta["x402/payment"]. What they create belongs to the paying wallet (list_apps), not to the account (account_list_apps).`;

/**
 * Builds the shared context once per process: config, wallet, and the prices the tools quote. The
 * prices are asked of the service in the background (`ctx.ready`): a client's `initialize` does not
 * wait for that round trip. A remote /mcp (SVC_TRANSPORT=mcp) is connected first: its tool list is
 * what this server registers.
 */
export async function createMcpContext(config: McpConfig, options: { fetch?: typeof fetch; now?: () => number } = {}): Promise<McpContext> {
  // Every request to the service carries the trace of the tool call that made it (mcp/trace-context.ts).
  const fetchImpl = tracedFetch(options.fetch ?? serviceFetch(config.serviceUrl));
  const upstream =
    config.transport === 'mcp' ? await (await import('./upstream-client.js')).connectUpstream(config.serviceUrl, config.apiKey, options.fetch) : undefined;
  const ctx: McpContext = {
    config,
    wallet: createWallet(config.wallet, { fetch: fetchImpl, now: options.now }),
    prices: cataloguePrices(),
    pricesSource: 'catalogue',
    ready: Promise.resolve(),
    fetch: fetchImpl,
    toolsets: config.toolsets,
    upstream,
    tableWriteKeys: new TableWriteKeys(config.tableKeysFile, new URL(config.serviceUrl).origin),
    // One process answers its own questions (stdio, or its HTTP port): a key of its own and its memory
    // of used states are enough; the hosted endpoint replaces it with one every node shares.
    askPerson: new PersonAsker({ key: randomBytes(32), used: usedStatesInMemory() }),
    // Its tasks too: the process that runs a task is the one its client polls.
    tasks: tasksInMemory(),
  };
  ctx.ready = loadPrices(config.serviceUrl, fetchImpl).then(({ prices, source }) => {
    for (const [action, price] of prices) ctx.prices.set(action, price);
    ctx.pricesSource = source;
  });
  return ctx;
}

/**
 * How long a 2026-07-28 client may keep this server's tools/list (`ttlMs`, `cacheScope`): a minute,
 * for this client only. The list depends on the caller's credential (its scopes, on the hosted
 * endpoints) and on configuration; a minute bounds how long a changed price in a description stays
 * unseen. In dynamic mode a call (enable_toolset) changes the list: not cached.
 */
function toolListCacheHint(ctx: McpContext): { ttlMs: number; cacheScope: 'private' } {
  return { ttlMs: ctx.toolsets.dynamic ? 0 : 60_000, cacheScope: 'private' };
}

/** Dynamic mode: the agent lists toolsets and enables one; the client hears notifications/tools/list_changed. */
function registerToolsetTools(server: McpServer, ctx: McpContext): void {
  const state = (t: Toolset) => ({
    toolset: t,
    description: TOOLSETS[t],
    enabled: toolsOf(server, t).some((tool) => tool.enabled),
    tools: toolsOf(server, t).length,
  });
  addTool(
    server,
    ctx,
    'list_toolsets',
    { description: 'Toolsets of this server, whether each is enabled, and what it holds. Free.', inputSchema: {} },
    () => guarded(async () => okResult({ toolsets: TOOLSET_NAMES.filter((t) => toolsOf(server, t).length).map(state) })),
    null,
  );
  addTool(
    server,
    ctx,
    'enable_toolset',
    {
      description: 'Enable a toolset for this session (list_toolsets names them); its tools then appear in the tool list. Free.',
      inputSchema: { toolset: z.enum(TOOLSET_NAMES as [Toolset, ...Toolset[]]) },
    },
    ({ toolset }: { toolset: Toolset }) =>
      guarded(async () => {
        const tools = toolsOf(server, toolset);
        if (!tools.length)
          throw new ToolFailure(
            `Toolset ${toolset} has no tools here${ctx.config.readOnly ? ' (read-only mode)' : ''}${ctx.hosted ? ' (or your scopes allow none)' : ''}.`,
          );
        for (const t of tools) if (!t.enabled) t.enable();
        return okResult(state(toolset), `Enabled ${toolset}: ${tools.length} tools.`);
      }),
    null,
  );
}

/** Said where one session holds both owners: an account (SVC_API_KEY) and a wallet. */
const TWO_OWNERS = " Apps the paid tools create belong to the wallet (list_apps); the account_* tools see the account's apps only.";

function instructionsFor(ctx: McpContext): string {
  if (!ctx.hosted && composesForAccount(ctx)) return ACCOUNT_INSTRUCTIONS;
  if (!ctx.hosted) return ctx.config.apiKey ? `${LOCAL_INSTRUCTIONS}${TWO_OWNERS}` : LOCAL_INSTRUCTIONS;
  // deploy_site and upload_dataset are not listed here (they read local files): say where they are.
  const local = ` To publish a folder from disk (deploy_site) or convert a local data file (upload_dataset), the user runs svc-mcp: ${ctx.svcMcpCommand ?? 'npx -y -p svc-agent-host svc-mcp'}.`;
  if (ctx.hosted.credentialKind === 'wallet') return `${WALLET_INSTRUCTIONS}${local}`;
  const { enabled, dynamic } = ctx.toolsets;
  return `${dynamic || enabled.has('apps') || enabled.has('datasets') ? `${SIGNED_IN_INSTRUCTIONS}${PAID_BY_YOUR_WALLET}` : SIGNED_IN_INSTRUCTIONS}${local}`;
}

const NO_WALLET_HERE =
  'describes the wallet of svc-mcp, the local MCP server that pays from a wallet you configure; this endpoint holds no wallet. Here your client signs each paid call: a paid tool answers with what to sign, and the call is repeated with it in _meta["x402/payment"]. Prices: list_pricing (toolset "advanced").';
const filesOnYourDisk = (ctx: McpContext) =>
  `reads files on your disk and pays several calls in one, so it runs in svc-mcp (the local MCP server with a wallet: ${ctx.svcMcpCommand ?? 'npx -y -p svc-agent-host svc-mcp'}), not here.`;

/** Tools of svc-mcp that a hosted endpoint has not, and what to call there instead (after the tool's name). */
const localOnlyTools = (ctx: McpContext): Record<string, string> => ({
  wallet_status: NO_WALLET_HERE,
  quote: NO_WALLET_HERE,
  list_receipts: NO_WALLET_HERE,
  deploy_site: `${filesOnYourDisk(ctx)} Here: ${
    accountToolListed(ctx, 'account_publish_app')
      ? 'account_publish_app publishes html and files (inline; encoding base64 for binary ones) in one call, for the signed-in account and free.'
      : 'create_app_from_html, then update_app_file for each other text file (create_site_upload_urls and finalize_site_upload for binary ones).'
  }`,
  upload_dataset: `${filesOnYourDisk(ctx)} Here: ${
    accountToolListed(ctx, 'account_create_dataset')
      ? 'account_create_dataset converts a file given inline (up to about 1 MiB; base64 for binary kinds), for the signed-in account and free.'
      : 'create_data_file_upload_url, PUT the file to the URL it gives, then convert_data_file_to_api (toolset "datasets").'
  }`,
});

/**
 * One MCP server (per session/connection) over the shared context. `views`: when tools/list names
 * the tools' views (installCompactToolList): `'always'` for stateless HTTP, where a tools/list
 * comes without the client's capabilities.
 */
export function buildMcpServer(ctx: McpContext, options: { views?: 'declared' | 'always' } = {}): McpServer {
  const server = new McpServer(
    { name: MCP_SERVER_NAME, version: MCP_SERVER_VERSION, icons: iconsFor(ctx).server },
    {
      capabilities: {
        tools: { listChanged: ctx.toolsets.dynamic },
        resources: {},
        extensions: {
          // A hosted endpoint asks the caller's wallet to pay: it speaks the x402 extension binding too.
          ...(ctx.hosted ? X402_EXTENSION_CAPABILITY : {}),
          ...(tasksOf(ctx) ? TASKS_EXTENSION_CAPABILITY : {}),
        },
      },
      instructions: instructionsFor(ctx),
      cacheHints: { 'tools/list': toolListCacheHint(ctx) },
    },
  );
  if (ctx.upstream) {
    // A hosted svc's /mcp answers the service tools; the wallet that pays them is ours. The composites
    // read local files and pay the same service's HTTP Agent API, from the same wallet, caps and ledger.
    registerUpstreamTools(server, ctx, ctx.upstream);
    registerWalletTools(server, ctx);
    registerDeploySite(server, ctx);
    registerUploadDataset(server, ctx);
    registerResources(server, ctx);
  } else {
    registerActionTools(server, ctx);
    // The account's tools before the Table tools: a signed-in list starts where its instructions do.
    registerAccountTools(server, ctx);
    registerTableTools(server, ctx);
    if (!ctx.hosted) {
      // One tool call = several payments, and the wallet tools describe the local wallet: local only.
      registerWalletTools(server, ctx);
      registerDeploySite(server, ctx);
      registerUploadDataset(server, ctx);
      registerResources(server, ctx);
    } else {
      for (const [name, why] of Object.entries(localOnlyTools(ctx))) addUnavailableTool(server, name, `${name} ${why}`);
    }
  }
  if (ctx.toolsets.dynamic) registerToolsetTools(server, ctx);
  registerViews(server, new URL(ctx.config.serviceUrl).origin, (name) => hasTool(server, name));
  installCompactToolList(server, ctx.ready, options.views);
  installToolCallHints(server, { readOnly: ctx.config.readOnly });
  if (ctx.hosted) installX402Bindings(server, ctx);
  const tasks = tasksOf(ctx);
  if (tasks) installTasks(server, { store: tasks, owner: () => (ctx.hosted ? ownerOfCredential(ctx.hosted.credential!) : 'local') });
  return server;
}

/**
 * Where this server's tasks are kept, when it has any: svc-mcp always; a hosted endpoint for a
 * signed-in caller (a task belongs to its credential; a wallet's calls on /mcp/x402 are paid in the
 * call, and its payment's verification and settlement belong to that request, so they never become tasks).
 */
function tasksOf(ctx: McpContext): McpContext['tasks'] {
  if (ctx.hosted && !ctx.hosted.credential) return undefined;
  return ctx.tasks;
}
