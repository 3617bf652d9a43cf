import { z } from 'zod';
import type { Scope } from '../scopes.js';
import { CreateTableBodySchema } from '../tables/schema.js';
import { CreateDatasetBodySchema } from './datasets.js';
import { RollbackBodySchema, SiteVersionListQuerySchema } from './site-versions.js';
import { SiteTrafficQuerySchema } from './site-traffic.js';
import { CreateFunctionBodySchema, FunctionAccessBodySchema, FunctionListQuerySchema, InvokeFunctionBodySchema, ReplaceDraftBodySchema } from './functions.js';
import { PublishSiteBodySchema, SiteAccessBodySchema, SiteContentQuerySchema, SiteListQuerySchema, WriteSiteFilesBodySchema } from './sites.js';

/**
 * The Account API operations an agent can call, declared once over the API's own request schemas:
 * the MCP server generates one tool per operation (mcp/tools/account-tools.ts), and
 * test/architecture/account-operations.test.ts checks every entry against the OpenAPI document the
 * service serves (method, path, scope, and that these schemas are the ones its routes validate).
 */
export interface AccountOperation {
  /** MCP tool name. */
  tool: string;
  toolset: 'account' | 'functions' | 'versions';
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path under /api/v1, OpenAPI style (`/sites/{siteId}`). */
  path: string;
  scope: Scope;
  description: string;
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodObject;
  /** Tool hints (MCP annotations; what each means: mcp/toolsets.ts ToolHints). */
  readOnly: boolean;
  destructive: boolean;
  idempotent: boolean;
  /** Reaches past svc: changes what the public web is served (an app, a Table API, a live function) or runs code that may fetch anything. */
  openWorld: boolean;
  /** Accepts personal keys only (spec §8: OAuth access tokens cannot invoke Functions). */
  personalKeyOnly?: boolean;
}

/**
 * Characters of file content one account_read_app_files answer carries to a model (~25k tokens): the
 * service answers up to 5 MiB, far more than a context holds (mcp/tools/account-tools.ts).
 */
export const READ_FILES_BUDGET = 100_000;

export const SiteIdParams = z.object({ siteId: z.string().min(1).describe('Site id or name (slug)') });
export const FunctionIdParams = z.object({ functionId: z.string().min(1).describe('Function identifier') });
export const FunctionSlugParams = z.object({ slug: z.string().min(1).describe('Function slug') });

const read = { readOnly: true, destructive: false, idempotent: true, openWorld: false };
const write = { readOnly: false, destructive: false, idempotent: false, openWorld: true };
const remove = { readOnly: false, destructive: true, idempotent: true, openWorld: true };

export const ACCOUNT_OPERATIONS: readonly AccountOperation[] = [
  {
    tool: 'account_list_apps',
    toolset: 'account',
    method: 'GET',
    path: '/sites',
    scope: 'svc.sites.read',
    description: 'Apps of the signed-in account, newest first.',
    query: SiteListQuerySchema,
    ...read,
  },
  {
    tool: 'account_publish_app',
    toolset: 'account',
    method: 'POST',
    path: '/sites',
    scope: 'svc.publish',
    description:
      'Publish a new app owned by the account: html is index.html; files adds others (path, content, encoding utf8|base64). Repeating a requestId returns the first result.',
    body: PublishSiteBodySchema,
    ...write,
    idempotent: true,
  },
  {
    tool: 'account_get_app',
    toolset: 'account',
    method: 'GET',
    path: '/sites/{siteId}',
    scope: 'svc.sites.read',
    description: 'One app of the account.',
    params: SiteIdParams,
    ...read,
  },
  {
    tool: 'account_read_app_files',
    toolset: 'account',
    method: 'GET',
    path: '/sites/{siteId}/content',
    scope: 'svc.sites.read',
    description: `Text files of an app (all, or the paths named); ${READ_FILES_BUDGET.toLocaleString('en')} characters of content per answer at most, the files past it listed without content.`,
    params: SiteIdParams,
    query: SiteContentQuerySchema,
    ...read,
  },
  {
    tool: 'account_write_app_files',
    toolset: 'account',
    method: 'POST',
    path: '/sites/{siteId}/files',
    scope: 'svc.sites.write',
    description:
      'Create or replace files of an app (index.html too) and delete others (delete: paths); the rest stay. All or none: path, content, encoding utf8|base64.',
    params: SiteIdParams,
    body: WriteSiteFilesBodySchema,
    ...write,
    // It replaces and deletes files: the same call again leaves the same files.
    destructive: true,
    idempotent: true,
  },
  {
    tool: 'account_update_app',
    toolset: 'account',
    method: 'PATCH',
    path: '/sites/{siteId}',
    scope: 'svc.sites.write',
    description: 'Make an app public or private, set or remove its password (a password makes it private).',
    params: SiteIdParams,
    body: SiteAccessBodySchema,
    ...write,
    idempotent: true,
  },
  {
    tool: 'account_list_app_versions',
    toolset: 'versions',
    method: 'GET',
    path: '/sites/{siteId}/versions',
    scope: 'svc.sites.read',
    description: 'Versions of an app, newest first, the live one marked current; each previewUrl serves exactly that version.',
    params: SiteIdParams,
    query: SiteVersionListQuerySchema,
    ...read,
  },
  {
    tool: 'account_rollback_app',
    toolset: 'versions',
    method: 'POST',
    path: '/sites/{siteId}/rollback',
    scope: 'svc.sites.write',
    description: 'Serve an earlier version of an app again, at once; recorded as a new version. Repeating a requestId returns the first result.',
    params: SiteIdParams,
    body: RollbackBodySchema,
    ...write,
    idempotent: true,
  },
  {
    tool: 'account_app_traffic',
    toolset: 'versions',
    method: 'GET',
    path: '/sites/{siteId}/traffic',
    scope: 'svc.sites.read',
    description: 'Requests and bytes an app served per day (previews apart).',
    params: SiteIdParams,
    query: SiteTrafficQuerySchema,
    ...read,
  },
  {
    tool: 'account_delete_app',
    toolset: 'account',
    method: 'DELETE',
    path: '/sites/{siteId}',
    scope: 'svc.sites.write',
    description: 'Delete an app with its files, Tables and datasets.',
    params: SiteIdParams,
    ...remove,
  },
  {
    tool: 'account_list_tables',
    toolset: 'account',
    method: 'GET',
    path: '/sites/{siteId}/tables',
    scope: 'svc.data.read',
    description: 'Tables of an app with their URLs and record counts.',
    params: SiteIdParams,
    ...read,
  },
  {
    tool: 'account_create_table',
    toolset: 'account',
    method: 'POST',
    path: '/sites/{siteId}/tables',
    scope: 'svc.data.write',
    description: 'Create a Table (schema, methods, keys) on an app; answers its Table API URLs and write key. Records: table_* tools.',
    params: SiteIdParams,
    body: CreateTableBodySchema,
    ...write,
  },
  {
    tool: 'account_create_dataset',
    toolset: 'account',
    method: 'POST',
    path: '/sites/{siteId}/datasets',
    scope: 'svc.data.write',
    description:
      'Turn a data file given inline into a dataset with a read-only Table API on an app (the table_* tools read it): CSV, JSON, GeoJSON as text; XLSX, Parquet, Shapefile ZIP in base64. Up to about 1 MiB.',
    params: SiteIdParams,
    body: CreateDatasetBodySchema,
    ...write,
    // replaceExisting drops the dataset's old records.
    destructive: true,
  },
  {
    tool: 'account_list_datasets',
    toolset: 'account',
    method: 'GET',
    path: '/sites/{siteId}/datasets',
    scope: 'svc.data.read',
    description: 'Datasets (converted data files) of an app.',
    params: SiteIdParams,
    ...read,
  },
  {
    tool: 'account_usage',
    toolset: 'account',
    method: 'GET',
    path: '/usage',
    scope: 'svc.usage.read',
    description: 'Usage counters of the account and the limits that apply.',
    ...read,
  },
  {
    tool: 'function_list',
    toolset: 'functions',
    method: 'GET',
    path: '/functions',
    scope: 'svc.functions.read',
    description: 'Functions of the account.',
    query: FunctionListQuerySchema,
    ...read,
  },
  {
    tool: 'function_create',
    toolset: 'functions',
    method: 'POST',
    path: '/functions',
    scope: 'svc.functions.write',
    description: 'Create a function (draft): an ES module whose default export maps a request to a response. function_publish makes it live.',
    body: CreateFunctionBodySchema,
    ...write,
    // A draft answers no one until function_publish.
    openWorld: false,
  },
  {
    tool: 'function_get',
    toolset: 'functions',
    method: 'GET',
    path: '/functions/{functionId}',
    scope: 'svc.functions.read',
    description: 'One function with its draft code and status.',
    params: FunctionIdParams,
    ...read,
  },
  {
    tool: 'function_update_draft',
    toolset: 'functions',
    method: 'PUT',
    path: '/functions/{functionId}/draft',
    scope: 'svc.functions.write',
    description: 'Replace the draft code (the live version keeps answering until function_publish).',
    params: FunctionIdParams,
    body: ReplaceDraftBodySchema,
    ...write,
    // The draft it replaces is gone; nothing is served from a draft.
    destructive: true,
    idempotent: true,
    openWorld: false,
  },
  {
    tool: 'function_publish',
    toolset: 'functions',
    method: 'POST',
    path: '/functions/{functionId}/publish',
    scope: 'svc.functions.write',
    description: 'Make the current draft the live version.',
    params: FunctionIdParams,
    ...write,
    // The live code it replaces is not kept (only the draft was).
    destructive: true,
    idempotent: true,
  },
  {
    tool: 'function_invoke',
    toolset: 'functions',
    method: 'POST',
    path: '/functions/invoke/{slug}',
    scope: 'svc.functions.invoke',
    description: 'Invoke the live version of a function with a request (method, path, query, headers, body); answers its response.',
    params: FunctionSlugParams,
    body: InvokeFunctionBodySchema,
    ...write,
    personalKeyOnly: true,
  },
  {
    tool: 'function_set_access',
    toolset: 'functions',
    method: 'PUT',
    path: '/functions/{functionId}/access',
    scope: 'svc.functions.write',
    description: 'Allow (or stop) other svc accounts invoking the live version with their personal keys.',
    params: FunctionIdParams,
    body: FunctionAccessBodySchema,
    ...write,
    idempotent: true,
  },
  {
    tool: 'function_delete',
    toolset: 'functions',
    method: 'DELETE',
    path: '/functions/{functionId}',
    scope: 'svc.functions.write',
    description: 'Delete a function, its secrets and memory; its slug becomes free.',
    params: FunctionIdParams,
    ...remove,
  },
];
