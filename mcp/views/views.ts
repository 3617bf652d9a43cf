import type { McpServer } from '@modelcontextprotocol/server';
import type { ClientCapabilities } from '@modelcontextprotocol/server';
import { DATASET_VIEW } from './dataset-view.js';
import { SITE_VIEW } from './site-view.js';
import { TABLE_VIEW } from './table-view.js';
import { WALLET_VIEW } from './wallet-view.js';

/**
 * MCP Apps views (`io.modelcontextprotocol/ui`): a tool names its view in `_meta.ui.resourceUri` of
 * tools/list, the view is a `ui://` resource of MIME type `text/html;profile=mcp-app`, and a host
 * that renders views frames it and hands it the tool's result (docs/mcp.md, "Views"). Results are
 * the same with or without a view: a model never depends on what the person sees.
 */
export const UI_EXTENSION = 'io.modelcontextprotocol/ui';
export const VIEW_MIME_TYPE = 'text/html;profile=mcp-app';

export interface View {
  uri: string;
  name: string;
  title: string;
  description: string;
  html: string;
  /** The tools whose results it shows. */
  tools: readonly string[];
  /** It frames the service's own pages (the site's path URL): its CSP names the service's origin in frameDomains. */
  frames: boolean;
}

export const VIEWS: readonly View[] = [
  {
    uri: 'ui://svc/site',
    name: 'site-view',
    title: 'Site preview',
    description: 'The live page, its address, visibility, files, cost, and publish/unpublish.',
    html: SITE_VIEW,
    tools: [
      'deploy_site',
      'create_app_from_html',
      'update_app_file',
      'update_app_meta',
      'publish_app',
      'unpublish_app',
      'finalize_site_upload',
      'account_publish_app',
      'account_write_app_files',
      'account_update_app',
      'account_get_app',
      'rollback_app',
      'account_rollback_app',
    ],
    frames: true,
  },
  {
    uri: 'ui://svc/table',
    name: 'table-view',
    title: 'Table records',
    description: 'The records of a table_query as a sortable, paged grid, with the query that produced them.',
    html: TABLE_VIEW,
    tools: ['table_query'],
    frames: false,
  },
  {
    uri: 'ui://svc/dataset',
    name: 'dataset-view',
    title: 'Dataset',
    description: 'Progress of a conversion, then the schema, the first rows and the API URL.',
    html: DATASET_VIEW,
    tools: ['upload_dataset', 'convert_data_file_to_api', 'account_create_dataset'],
    frames: false,
  },
  {
    uri: 'ui://svc/wallet',
    name: 'wallet-view',
    title: 'Wallet',
    description: 'Balance, spend against each cap, and the latest receipts with their transactions.',
    html: WALLET_VIEW,
    tools: ['wallet_status', 'list_receipts'],
    frames: false,
  },
];

const VIEW_OF_TOOL = new Map(VIEWS.flatMap((v) => v.tools.map((t) => [t, v] as const)));

/** The `_meta` a tool lists for a client that renders views, or undefined when the tool has no view. */
export function viewMetaOf(tool: string): { ui: { resourceUri: string } } | undefined {
  const view = VIEW_OF_TOOL.get(tool);
  return view ? { ui: { resourceUri: view.uri } } : undefined;
}

/** Whether a client's `initialize` declared that it renders MCP Apps views. */
export function rendersViews(capabilities: ClientCapabilities | undefined): boolean {
  const ui = (capabilities as { extensions?: Record<string, { mimeTypes?: unknown }> } | undefined)?.extensions?.[UI_EXTENSION];
  return Array.isArray(ui?.mimeTypes) && ui.mimeTypes.includes(VIEW_MIME_TYPE);
}

/** The resource `_meta` of a view: what the host's CSP must allow (nothing but the service's origin, only where the view frames its pages). */
function resourceMeta(view: View, serviceOrigin: string) {
  return { ui: { csp: view.frames ? { frameDomains: [serviceOrigin] } : {}, prefersBorder: true } };
}

/**
 * Registers the views whose tools this server has (`hasTool`) as `ui://` resources. `serviceOrigin`
 * is the origin of the pages a view frames.
 */
export function registerViews(server: McpServer, serviceOrigin: string, hasTool: (name: string) => boolean): void {
  for (const view of VIEWS) {
    if (!view.tools.some(hasTool)) continue;
    const meta = resourceMeta(view, serviceOrigin);
    server.registerResource(view.name, view.uri, { title: view.title, description: view.description, mimeType: VIEW_MIME_TYPE, _meta: meta }, async (uri) => ({
      contents: [{ uri: uri.href, mimeType: VIEW_MIME_TYPE, text: view.html, _meta: meta }],
    }));
  }
}
