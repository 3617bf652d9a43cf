import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { TableFilterSchema, TableQuerySchema, tableQueryToSearchParams, type TableQueryInput } from '../../shared/tables/query.js';
import { TABLE_LIMITS } from '../../shared/tables/schema.js';
import type { McpContext } from '../context.js';
import { addTool, type ToolConfig } from '../register.js';
import { describeFailure, readAnswer } from '../service-answer.js';
import { ToolFailure, guarded, okResult } from '../results.js';

const slug = (what: string) => z.string().min(1).max(63).describe(what);
const target = {
  appName: slug('App name (slug)'),
  table: slug('Table slug'),
};
const writeKey = z.string().min(1).optional().describe('Table write key if needed (default SVC_TABLE_WRITE_KEY)');
const recordId = z.string().min(1).max(100).describe('Record id');

/**
 * table_query takes the Table API's query schema (shared/tables/query.ts) minus its aliases and the
 * parameters another one covers (field/value and filter/filterValue: where; sortField/sortDir: sort;
 * columns: fields; dates: where with gte/lte; compact: a transport detail), so the model sees one way
 * to say each thing, with shorter descriptions than the HTTP reference needs.
 */
const Q = TableQuerySchema.shape;
const QueryArgs = {
  ...target,
  limit: Q.limit.describe('Default 50, at most 1000'),
  offset: Q.offset.describe('Records to skip'),
  cursor: Q.cursor.describe('nextCursor of the previous page'),
  includeTotal: Q.includeTotal.describe('Add total'),
  where: z
    .array(z.object({ field: z.string(), op: TableFilterSchema.shape.op.describe('in: a,b,c; ilike: * wildcards'), value: z.string() }))
    .max(TABLE_LIMITS.maxFilters)
    .optional()
    .describe('Filters, all must match'),
  sort: Q.sort.describe('e.g. "-price,name" (- descending)'),
  q: Q.q.describe('Text search'),
  fields: Q.fields.describe('Fields to return, comma-separated'),
  aggregate: Q.aggregate,
  // Names that say it all: no description.
  aggregateField: z.string().optional(),
  groupBy: z.string().optional(),
  bbox: Q.bbox,
  writeKey,
};
const SchemaArgs = { ...target, writeKey };
const RecordArgs = { ...target, recordId, writeKey };
const CreateArgs = { ...target, record: z.record(z.string(), z.unknown()).describe('Field name → value'), writeKey };
const UpdateArgs = { ...target, recordId, fields: z.record(z.string(), z.unknown()).describe('Only the fields to change'), writeKey };

/**
 * Table API tools. Every GET parameter of `table_query` is the tables engineer's TableQuerySchema
 * (shared/tables/query.ts), so the tool and the API never disagree. Calls go to the path fallback
 * `{SVC_URL}/api/data/<appName>/<table>`, which every deployment serves. Table calls cost nothing.
 */
export function registerTableTools(server: McpServer, ctx: McpContext): void {
  const base = (site: string, table: string) => `${ctx.config.serviceUrl}/api/data/${encodeURIComponent(site)}/${encodeURIComponent(table)}`;

  async function tableFetch(tool: string, method: string, url: string, keys: { writeKey?: string }, body?: unknown): Promise<Record<string, unknown>> {
    const headers: Record<string, string> = { accept: 'application/json' };
    const wk = keys.writeKey ?? ctx.config.tableWriteKey;
    if (wk) headers['x-svc-write-key'] = wk;
    // The owner's credential opens every Table of the owner's apps: the caller's own on the hosted endpoint, SVC_API_KEY in svc-mcp.
    const apiKey = ctx.hosted?.credential ?? ctx.config.apiKey;
    if (apiKey) headers['x-svc-api-key'] = apiKey;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await ctx.fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(30_000) });
    } catch (e) {
      throw new ToolFailure(
        `${tool} failed: the service at ${ctx.config.serviceUrl} did not answer (${(e as Error).message}). Nothing was changed or paid; check the service is running.`,
      );
    }
    const answer = await readAnswer(res);
    if (!res.ok) {
      const hint =
        res.status === 401 || res.status === 403
          ? 'Pass the Table write key (writeKey) or set SVC_TABLE_WRITE_KEY.'
          : res.status === 405
            ? 'This method is not enabled for the Table.'
            : res.status === 404
              ? 'Check appName, table and recordId (list_apps, table_schema).'
              : res.status === 400
                ? 'Fix the parameters named above (use exact schema field names; table_schema lists them).'
                : 'Retry later.';
      const f = describeFailure(res, answer);
      throw new ToolFailure(`${tool} failed: ${f.what} ${f.tag}. Nothing was paid. ${hint}`);
    }
    return answer.json;
  }

  const reg = (name: string, config: ToolConfig, write: boolean, cb: (args: Record<string, unknown>) => Promise<Record<string, unknown>>) => {
    if (write && ctx.config.readOnly) return;
    addTool(server, ctx, name, config, (args: Record<string, unknown>) => guarded(async () => okResult(await cb(args))));
  };
  const hints = (readOnly: boolean, destructive: boolean, idempotent: boolean) => ({
    readOnlyHint: readOnly,
    destructiveHint: destructive,
    idempotentHint: idempotent,
    openWorldHint: true,
  });
  reg(
    'table_query',
    {
      description: 'Read records of a Table: filters, sort, search, paging, aggregates, map area (fields as table_schema names them). Free.',
      inputSchema: QueryArgs,
      annotations: { ...hints(true, false, true) },
    },
    false,
    async (a) => {
      const { appName, table, writeKey: wk, ...query } = a as Record<string, unknown> & { appName: string; table: string; writeKey?: string };
      const qs = tableQueryToSearchParams(query as TableQueryInput).toString();
      return tableFetch('table_query', 'GET', `${base(appName, table)}${qs ? `?${qs}` : ''}`, { writeKey: wk });
    },
  );
  reg(
    'table_schema',
    {
      description: 'Fields (names, types) of a Table, the methods its API allows, and its limits. Free.',
      inputSchema: SchemaArgs,
      annotations: { ...hints(true, false, true) },
    },
    false,
    async (a) => tableFetch('table_schema', 'GET', `${base(a.appName as string, a.table as string)}/schema`, { writeKey: a.writeKey as string }),
  );
  reg(
    'table_get_record',
    {
      description: 'One record of a Table by id. Free.',
      inputSchema: RecordArgs,
      annotations: { ...hints(true, false, true) },
    },
    false,
    async (a) =>
      tableFetch('table_get_record', 'GET', `${base(a.appName as string, a.table as string)}/${encodeURIComponent(a.recordId as string)}`, {
        writeKey: a.writeKey as string,
      }),
  );
  reg(
    'table_create_record',
    {
      description:
        'Create one record. Needs the write key unless the Table allows public inserts. A retry after a lost answer can create a second record. Free.',
      inputSchema: CreateArgs,
      annotations: { ...hints(false, false, false) },
    },
    true,
    async (a) =>
      tableFetch('table_create_record', 'POST', base(a.appName as string, a.table as string), { writeKey: a.writeKey as string }, { record: a.record }),
  );
  reg(
    'table_update_record',
    {
      description: 'Change some fields of one record; the others stay. Needs the write key. Free.',
      inputSchema: UpdateArgs,
      annotations: { ...hints(false, false, true) },
    },
    true,
    async (a) =>
      tableFetch(
        'table_update_record',
        'PATCH',
        `${base(a.appName as string, a.table as string)}/${encodeURIComponent(a.recordId as string)}`,
        { writeKey: a.writeKey as string },
        { fields: a.fields },
      ),
  );
  reg(
    'table_delete_record',
    {
      description: 'Delete one record (cannot be undone). Needs the write key. Free.',
      inputSchema: RecordArgs,
      annotations: { ...hints(false, true, true) },
    },
    true,
    async (a) =>
      tableFetch('table_delete_record', 'DELETE', `${base(a.appName as string, a.table as string)}/${encodeURIComponent(a.recordId as string)}`, {
        writeKey: a.writeKey as string,
      }),
  );
}
