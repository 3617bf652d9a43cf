import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import {
  TableAggregateResponseSchema,
  TableCompactResponseSchema,
  TableQuerySchema,
  TableRecordsResponseSchema,
  tableQueryToSearchParams,
  type TableQueryInput,
} from '../../shared/tables/query.js';
import type { McpContext } from '../context.js';
import { ToolFailure, guarded, okResult } from '../results.js';

const slug = (what: string) =>
  z
    .string()
    .min(1)
    .max(63)
    .regex(/^[a-z0-9][a-z0-9-]*$/i, 'a slug')
    .describe(what);
const target = {
  site: slug('App name (site slug) that owns the Table, e.g. "my-shop"'),
  table: slug('Table slug, e.g. "products"'),
};
const writeKey = z
  .string()
  .min(1)
  .optional()
  .describe(
    'Table write key (x-svc-write-key); default: SVC_TABLE_WRITE_KEY of the MCP server. Needed for writes, and for reads when the Table requires a read key.',
  );
const apiKey = z.string().min(1).optional().describe('Developer API server key (x-svc-api-key), used instead of the write key');
const recordId = z.string().min(1).max(100).describe('Record id');

interface ToolConfig {
  title: string;
  description: string;
  inputSchema: z.ZodRawShape;
  outputSchema: z.ZodObject;
  annotations: ToolAnnotations;
  _meta: Record<string, unknown>;
}

const RecordSchema = z.object({ id: z.string(), fields: z.record(z.string(), z.unknown()) }).passthrough();
const RecordResult = z.object({ ok: z.boolean(), record: RecordSchema });

/**
 * Table API tools. Every GET parameter of `table_query` is the tables engineer's TableQuerySchema
 * (shared/tables/query.ts), so the tool and the API never disagree. Calls go to the path fallback
 * `{SVC_URL}/api/data/<site>/<table>`, which every deployment serves. Table calls cost nothing.
 */
export function registerTableTools(server: McpServer, ctx: McpContext): string[] {
  const names: string[] = [];
  const base = (site: string, table: string) => `${ctx.config.serviceUrl}/api/data/${encodeURIComponent(site)}/${encodeURIComponent(table)}`;

  async function tableFetch(
    tool: string,
    method: string,
    url: string,
    keys: { writeKey?: string; apiKey?: string },
    body?: unknown,
  ): Promise<Record<string, unknown>> {
    const headers: Record<string, string> = { accept: 'application/json' };
    const wk = keys.writeKey ?? ctx.config.tableWriteKey;
    if (wk) headers['x-svc-write-key'] = wk;
    if (keys.apiKey) headers['x-svc-api-key'] = keys.apiKey;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await ctx.fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(30_000) });
    } catch (e) {
      throw new ToolFailure(
        `${tool} failed: the service at ${ctx.config.serviceUrl} did not answer (${(e as Error).message}). Nothing was changed or paid; check the service is running.`,
      );
    }
    const text = await res.text();
    let json: Record<string, unknown> = {};
    try {
      json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    } catch {
      json = {};
    }
    if (!res.ok) {
      const err = (json.error ?? {}) as { code?: string; message?: string; details?: { issues?: { field: string; message: string }[] } };
      const issues = err.details?.issues;
      const hint =
        res.status === 401 || res.status === 403
          ? 'Pass the Table write key (writeKey) or set SVC_TABLE_WRITE_KEY.'
          : res.status === 405
            ? 'This method is not enabled for the Table.'
            : res.status === 404
              ? 'Check the site, table and record names.'
              : res.status === 400
                ? 'Fix the parameters named above (use exact schema field names; table_schema lists them).'
                : 'Retry later.';
      throw new ToolFailure(
        `${tool} failed: ${err.message ?? res.statusText}${issues?.length ? ` (${issues.map((i) => `${i.field}: ${i.message}`).join('; ')})` : ''} [HTTP ${res.status}${err.code ? ` ${err.code}` : ''}]. Nothing was paid. ${hint}`,
      );
    }
    return json;
  }

  const reg = (name: string, config: ToolConfig, write: boolean, cb: (args: Record<string, unknown>) => Promise<Record<string, unknown>>) => {
    if (write && ctx.config.readOnly) return;
    server.registerTool(name, config as never, ((args: Record<string, unknown>) => guarded(async () => okResult(await cb(args)))) as never);
    names.push(name);
  };
  const hints = (readOnly: boolean, destructive: boolean, idempotent: boolean) => ({
    readOnlyHint: readOnly,
    destructiveHint: destructive,
    idempotentHint: idempotent,
    openWorldHint: true,
  });
  const free = { 'svc/price': '0', 'svc/currency': 'USDC' };

  const QueryOutput = TableRecordsResponseSchema.partial()
    .extend(TableCompactResponseSchema.partial().shape)
    .extend(TableAggregateResponseSchema.partial().shape)
    .passthrough();
  reg(
    'table_query',
    {
      title: 'table query',
      description:
        'Read records of a Table through its Table API: paging (limit, offset, includeTotal, cursor), equality filters (field+value or filter+filterValue), comparison filters (where), sorting, text search (q, searchFields), date ranges, field selection (fields/columns, compact), aggregates (count/sum/avg/min/max with groupBy) and map areas (bbox). Use exact schema field names (table_schema). Free.',
      inputSchema: { ...target, ...TableQuerySchema.shape, writeKey, apiKey },
      outputSchema: QueryOutput,
      annotations: { title: 'table query', ...hints(true, false, true) },
      _meta: free,
    },
    false,
    async (a) => {
      const {
        site,
        table,
        writeKey: wk,
        apiKey: ak,
        ...query
      } = a as Record<string, unknown> & { site: string; table: string; writeKey?: string; apiKey?: string };
      const qs = tableQueryToSearchParams(query as TableQueryInput).toString();
      return tableFetch('table_query', 'GET', `${base(site, table)}${qs ? `?${qs}` : ''}`, { writeKey: wk, apiKey: ak });
    },
  );
  reg(
    'table_schema',
    {
      title: 'table schema',
      description: 'The schema of a Table (field names, labels, types), which methods its API allows, and its limits. Free.',
      inputSchema: { ...target, writeKey, apiKey },
      outputSchema: z
        .object({ ok: z.boolean(), schema: z.object({ fields: z.array(z.object({ name: z.string(), type: z.string() }).passthrough()) }).passthrough() })
        .passthrough(),
      annotations: { title: 'table schema', ...hints(true, false, true) },
      _meta: free,
    },
    false,
    async (a) =>
      tableFetch('table_schema', 'GET', `${base(a.site as string, a.table as string)}/schema`, { writeKey: a.writeKey as string, apiKey: a.apiKey as string }),
  );
  reg(
    'table_get_record',
    {
      title: 'table get record',
      description: 'One record of a Table by id. Free.',
      inputSchema: { ...target, recordId, writeKey, apiKey },
      outputSchema: RecordResult,
      annotations: { title: 'table get record', ...hints(true, false, true) },
      _meta: free,
    },
    false,
    async (a) =>
      tableFetch('table_get_record', 'GET', `${base(a.site as string, a.table as string)}/${encodeURIComponent(a.recordId as string)}`, {
        writeKey: a.writeKey as string,
        apiKey: a.apiKey as string,
      }),
  );
  reg(
    'table_create_record',
    {
      title: 'table create record',
      description:
        'Create one record in a Table (POST {record}). Needs the write key unless the Table allows public inserts. Not idempotent: a retry after a lost answer can create a second record. Free.',
      inputSchema: { ...target, record: z.record(z.string(), z.unknown()).describe('Field name → value, using exact schema field names'), writeKey, apiKey },
      outputSchema: RecordResult,
      annotations: { title: 'table create record', ...hints(false, false, false) },
      _meta: free,
    },
    true,
    async (a) =>
      tableFetch(
        'table_create_record',
        'POST',
        base(a.site as string, a.table as string),
        { writeKey: a.writeKey as string, apiKey: a.apiKey as string },
        { record: a.record },
      ),
  );
  reg(
    'table_update_record',
    {
      title: 'table update record',
      description: 'Change some fields of one record (PATCH {fields}); other fields stay. Needs the write key. Free.',
      inputSchema: { ...target, recordId, fields: z.record(z.string(), z.unknown()).describe('Only the fields to change'), writeKey, apiKey },
      outputSchema: RecordResult,
      annotations: { title: 'table update record', ...hints(false, false, true) },
      _meta: free,
    },
    true,
    async (a) =>
      tableFetch(
        'table_update_record',
        'PATCH',
        `${base(a.site as string, a.table as string)}/${encodeURIComponent(a.recordId as string)}`,
        { writeKey: a.writeKey as string, apiKey: a.apiKey as string },
        { fields: a.fields },
      ),
  );
  reg(
    'table_delete_record',
    {
      title: 'table delete record',
      description: 'Delete one record of a Table. Needs the write key. Cannot be undone. Free.',
      inputSchema: { ...target, recordId, writeKey, apiKey },
      outputSchema: z.object({ ok: z.boolean(), deleted: z.object({ id: z.string() }) }),
      annotations: { title: 'table delete record', ...hints(false, true, true) },
      _meta: free,
    },
    true,
    async (a) =>
      tableFetch('table_delete_record', 'DELETE', `${base(a.site as string, a.table as string)}/${encodeURIComponent(a.recordId as string)}`, {
        writeKey: a.writeKey as string,
        apiKey: a.apiKey as string,
      }),
  );
  return names;
}
