import { ACCOUNT_OPERATIONS } from '../shared/account-api/operations.js';
import type { AgentAction } from '../shared/agent-api/action.js';
import { AGENT_ACTIONS, toolNameOf } from '../shared/agent-api/catalogue.js';

/**
 * Toolsets: which tools a session lists. One table decides the group of every tool; the server
 * registers its tools, then keeps only those of the enabled toolsets (or, in dynamic mode, lists them
 * disabled until the agent enables their toolset). Chosen by SVC_TOOLSETS (stdio, the loopback
 * endpoint) or `?toolsets=` on the hosted endpoint's URL.
 */
export const TOOLSETS = {
  apps: "The wallet's apps, paid per call: create, update, publish, list and delete them, add Table APIs (deploy_site publishes a whole folder in one call).",
  tables: "Read and write a Table's records (its REST Table API), whoever made it.",
  datasets: 'Turn a data file (CSV, XLSX, JSON, GeoJSON, Shapefile, Parquet) into a Table API.',
  wallet: 'The paying wallet: balance, spend caps, prices (quote) and receipts.',
  versions:
    "Versions of apps (each with a preview URL), rollback, and what they served per day: the wallet's apps, and the account's with a key. Not in the default list (its size budget): SVC_TOOLSETS=default,versions.",
  account: 'Account API (needs a signed-in account or SVC_API_KEY): sites, tables, datasets and usage of the account.',
  functions: 'Account API functions (needs a signed-in account or SVC_API_KEY): create, publish, invoke, share.',
  advanced: 'Low-level steps (upload URLs, multipart completion, raw catalogue and pricing, paid bulk inserts) that the composite tools already do for you.',
} as const;

export type Toolset = keyof typeof TOOLSETS;
export const TOOLSET_NAMES = Object.keys(TOOLSETS) as Toolset[];

/** The tools a wallet pays for: the composites, apps, tables, datasets, and the wallet's own. */
const WALLET_TOOLSETS: readonly Toolset[] = ['apps', 'tables', 'datasets', 'wallet'];

/**
 * What svc-mcp lists without SVC_TOOLSETS (and what `default` in it means): the tools its
 * configuration can use. A personal key: the account's tools and the Table tools (which its key
 * opens); a wallet: the paid tools and the wallet's; both: both. Neither: the wallet's, whose
 * refusal says how to add one (the tools that read stay usable). Functions are asked for by name
 * (`default,functions`): eight tools, a quarter of a list, for what fewer sessions do.
 */
export function defaultToolsets(has: { wallet: boolean; apiKey: boolean }): readonly Toolset[] {
  if (!has.apiKey) return WALLET_TOOLSETS;
  return has.wallet ? [...WALLET_TOOLSETS, 'account'] : ['account', 'tables'];
}

/** Tool name → toolset in svc-mcp (the hosted endpoints move a few: WHERE_COMPOSITES_ARE_NOT). A tool missing here is a programming error (the server refuses to start). */
export const TOOLSET_OF: Record<string, Toolset> = {
  suggest_site_name: 'apps',
  list_apps: 'apps',
  create_app_from_html: 'apps',
  update_app_file: 'apps',
  update_app_meta: 'apps',
  publish_app: 'apps',
  unpublish_app: 'apps',
  delete_app: 'apps',
  list_app_versions: 'versions',
  rollback_app: 'versions',
  get_app_traffic: 'versions',
  deploy_site: 'apps',
  create_table_api: 'apps',
  table_query: 'tables',
  table_schema: 'tables',
  table_get_record: 'tables',
  table_create_record: 'tables',
  table_update_record: 'tables',
  table_delete_record: 'tables',
  upload_dataset: 'datasets',
  convert_data_file_to_api: 'advanced',
  wallet_status: 'wallet',
  quote: 'wallet',
  list_receipts: 'wallet',
  describe_api: 'advanced',
  list_pricing: 'advanced',
  create_site_upload_urls: 'advanced',
  finalize_site_upload: 'advanced',
  create_data_file_upload_url: 'advanced',
  complete_data_file_multipart_upload: 'advanced',
  insert_table_records: 'advanced',
};

/**
 * The tools that pay from svc-mcp's wallet: the composites and every Agent API action with a price
 * (a deployment cannot price a free action: SVC_X402_PRICES refuses it). SVC_MAX_USDC_PER_TOOL names
 * only these.
 */
export const PAYING_TOOLS: readonly string[] = [
  'deploy_site',
  'upload_dataset',
  ...(AGENT_ACTIONS as readonly AgentAction[]).filter((a) => Number(a.price) > 0).map((a) => toolNameOf(a)),
];

export interface ToolsetChoice {
  enabled: Set<Toolset>;
  /** The agent may list and enable toolsets at run time (list_toolsets / enable_toolset). */
  dynamic: boolean;
}

/**
 * Parses `apps,tables`, `all`, `default,functions` or `dynamic` (dynamic alone starts from the
 * default); nothing, or `default`, is `defaults`. Throws naming the unknown entries and the known ones.
 */
export function parseToolsets(text: string | undefined, defaults: readonly Toolset[]): ToolsetChoice {
  const parts = (text ?? '')
    .split(/[\s,]+/)
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  const dynamic = parts.includes('dynamic');
  const named = parts.filter((p) => p !== 'dynamic');
  const unknown = named.filter((p) => p !== 'all' && p !== 'default' && !(p in TOOLSETS));
  if (unknown.length) throw new Error(`unknown toolset(s): ${unknown.join(', ')} (known: ${[...TOOLSET_NAMES, 'all', 'default', 'dynamic'].join(', ')})`);
  const enabled = new Set<Toolset>();
  if (named.length === 0 || named.includes('default')) for (const t of defaults) enabled.add(t);
  if (named.includes('all')) for (const t of TOOLSET_NAMES) enabled.add(t);
  for (const p of named) if (p in TOOLSETS) enabled.add(p as Toolset);
  return { enabled, dynamic };
}

/**
 * TOOLSET_OF places the steps svc-mcp's composites (deploy_site, upload_dataset) take for the model in
 * `advanced`, the conversion upload_dataset pays too. The hosted endpoints have no composites (they
 * read local files): there the steps are the only way to upload a binary file or a data file, so they
 * belong with the tools that need them.
 */
const WHERE_COMPOSITES_ARE_NOT: Record<string, Toolset> = {
  create_site_upload_urls: 'apps',
  finalize_site_upload: 'apps',
  create_data_file_upload_url: 'datasets',
  complete_data_file_multipart_upload: 'datasets',
  convert_data_file_to_api: 'datasets',
};

/** A tool's toolset in svc-mcp (`composites`: deploy_site and upload_dataset exist) or on a hosted endpoint. */
export function toolsetOf(tool: string, composites = true): Toolset {
  const t = (!composites && WHERE_COMPOSITES_ARE_NOT[tool]) || TOOLSET_OF[tool];
  if (!t) throw new Error(`tool ${tool} has no toolset in mcp/toolsets.ts`);
  return t;
}

/**
 * What a tool does, as MCP's tool annotations say it to a host (which may confirm a destructive call
 * or run a read-only one without asking). Every hint is given, never left to the spec's defaults: a
 * host that reads a missing hint as unknown would confirm everything.
 * - readOnly: changes nothing anywhere.
 * - destructive: something is lost that no tool brings back (a record's old fields, a deleted app, a
 *   dataset replaced, a function's code replaced). An app's files are versioned (rollback_app serves an
 *   earlier version again), so writing them is not.
 * - idempotent: the same call again changes nothing more (a paid one is paid again: the price is said
 *   in the description and capped by the wallet).
 * - openWorld: the tool reaches past svc and this machine's wallet: it pays (USDC settled on a public
 *   chain), changes what the public web is served (a published app, a Table API, a live function),
 *   or reads the chain. Reads of svc's own records and of the local ledger are a closed world.
 */
export interface ToolHints {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

const hints = (readOnly: boolean, destructive: boolean, idempotent: boolean, openWorld: boolean): ToolHints => ({
  readOnlyHint: readOnly,
  destructiveHint: destructive,
  idempotentHint: idempotent,
  openWorldHint: openWorld,
});

/**
 * The hints of the tools that are neither an Agent API action (shared/agent-api: their own table) nor
 * an Account API operation (shared/account-api/operations.ts: theirs).
 */
const OWN_TOOL_HINTS: Record<string, ToolHints> = {
  table_query: hints(true, false, true, false),
  table_schema: hints(true, false, true, false),
  table_get_record: hints(true, false, true, false),
  // A Table API is public: its records are what the web is served.
  table_create_record: hints(false, false, false, true),
  table_update_record: hints(false, true, true, true),
  table_delete_record: hints(false, true, true, true),
  // The balance is read from the chain; quotes and receipts from this machine.
  wallet_status: hints(true, false, true, true),
  quote: hints(true, false, true, false),
  list_receipts: hints(true, false, true, false),
  deploy_site: hints(false, false, false, true),
  // replaceExisting drops the dataset's old records.
  upload_dataset: hints(false, true, false, true),
  list_toolsets: hints(true, false, true, false),
  enable_toolset: hints(false, false, true, false),
};

/** A tool's annotations, from the one table that declares the tool. A tool in none is a programming error. */
export function annotationsOf(tool: string): ToolHints {
  const own = OWN_TOOL_HINTS[tool];
  if (own) return own;
  const action = (AGENT_ACTIONS as readonly AgentAction[]).find((a) => toolNameOf(a) === tool);
  // Every action that writes pays, and publishes what it writes: open world; every read is svc's own.
  if (action) return hints(action.readOnly, action.destructive, action.idempotent, !action.readOnly);
  const op = ACCOUNT_OPERATIONS.find((o) => o.tool === tool);
  if (op) return hints(op.readOnly, op.destructive, op.idempotent, op.openWorld);
  throw new Error(`tool ${tool} has no annotations: mcp/toolsets.ts OWN_TOOL_HINTS, the Agent API catalogue or the Account API operations`);
}
