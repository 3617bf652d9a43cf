import type { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { TableFilterSchema, TableQuerySchema, tableQueryToSearchParams, type TableQueryInput } from '../../shared/tables/query.js';
import { TABLE_LIMITS } from '../../shared/tables/schema.js';
import type { McpContext } from '../context.js';
import { addTool, type ToolConfig } from '../register.js';
import { accountToolListed } from './account-tools.js';
import { describeFailure, readAnswer } from '../service-answer.js';
import { ToolFailure, guarded, okResult } from '../results.js';
import { forgetTableWriteKey, knownTableWriteKey } from '../table-write-keys.js';
import { annotationsOf, toolsetOf } from '../toolsets.js';

const slug = (what: string) => z.string().min(1).max(63).describe(what);
const target = {
  appName: slug('App name (slug)'),
  table: slug('Table slug'),
};
/** The hosted endpoint's: its callers have no SVC_TABLE_WRITE_KEY, and it remembers nothing between requests. */
const writeKey = z.string().min(1).optional().describe('Table write key if needed');
/** A local server's: the key create_table_api answered is remembered (table-write-keys.ts). */
const localWriteKey = z.string().min(1).optional().describe('Table write key if needed (default: from create_table_api, else SVC_TABLE_WRITE_KEY)');
/** Records of a Table are numbered ("1", "2", …): a model passes 1 as often as "1". */
const recordId = z.union([z.string().min(1).max(100), z.number().int().nonnegative()]).describe('Record id');

/**
 * table_query takes the Table API's query schema (shared/tables/query.ts) minus its aliases and the
 * parameters another one covers (field/value and filter/filterValue: where; sortField/sortDir: sort;
 * columns: fields; dates: where with gte/lte; compact: a transport detail), so the model sees one way
 * to say each thing, with shorter descriptions than the HTTP reference needs.
 */
const Q = TableQuerySchema.shape;
const QueryArgs = {
  ...target,
  limit: Q.limit.describe('Default 50, max 1000'),
  offset: Q.offset.describe('Records to skip'),
  cursor: Q.cursor.describe('nextCursor of the last page'),
  includeTotal: Q.includeTotal.describe('Add total'),
  where: z
    .array(
      z.object({
        field: z.string(),
        op: TableFilterSchema.shape.op.describe('in: a,b,c; ilike: * wildcards'),
        // A model writes 1000 and true as JSON numbers and booleans; the Table API takes them as text.
        value: z.union([z.string(), z.number(), z.boolean()]),
      }),
    )
    .max(TABLE_LIMITS.maxFilters)
    .optional()
    .describe('All must match'),
  sort: Q.sort.describe('"-price,name" (- = descending, "-id" = newest first)'),
  q: Q.q.describe('Text search'),
  fields: Q.fields.describe('Comma-separated'),
  aggregate: Q.aggregate,
  // Names that say it all: no description.
  aggregateField: z.string().optional(),
  groupBy: z.string().optional(),
  bbox: Q.bbox,
  writeKey,
};
const SchemaArgs = { ...target, writeKey };
const RecordArgs = { ...target, recordId, writeKey };
const fieldValues = z.record(z.string(), z.unknown());
const CreateArgs = {
  ...target,
  record: fieldValues.optional().describe('Field name → value'),
  records: z.array(fieldValues).min(1).max(TABLE_LIMITS.maxBatch).optional().describe(`Up to ${TABLE_LIMITS.maxBatch} records at once, instead of record`),
  writeKey,
};
const UpdateArgs = { ...target, recordId, fields: z.record(z.string(), z.unknown()).describe('Only the fields to change'), writeKey };

/** What to try after a Table API refusal, by status (`what`: the service's message). */
function failureHint(ctx: McpContext, status: number, what: string): string {
  if (status === 401 || status === 403)
    return ctx.hosted ? 'Pass the Table write key (writeKey).' : 'Pass the Table write key (writeKey), or ask the user to set SVC_TABLE_WRITE_KEY.';
  if (status === 405 && / for the dataset /.test(what))
    return 'A dataset (a converted data file) is read-only: to change its records, convert the changed file again with replaceExisting: true.';
  if (status === 405) return "The Table's methods were chosen when it was made; this one is not among them.";
  if (status === 404) return what.startsWith('record ') ? 'Check recordId (table_query lists the records with their ids).' : whereTablesAreListed(ctx);
  if (status === 400) return 'Fix the parameters named above (use exact schema field names; table_schema lists them).';
  return 'Retry later.';
}

/** The tools of this session that list apps and their Tables. */
function whereTablesAreListed(ctx: McpContext): string {
  if (accountToolListed(ctx, 'account_list_tables'))
    return `Check appName and table: ${accountToolListed(ctx, 'account_list_apps') ? 'account_list_apps lists your apps, ' : ''}account_list_tables (appId) lists an app's Tables.`;
  if (ctx.toolsets.dynamic || ctx.toolsets.enabled.has(toolsetOf('list_apps')))
    return "Check appName and table: list_apps lists your wallet's apps; a Table's name is the one create_table_api or convert_data_file_to_api answered.";
  return "Check appName and table: a Table's name is the one the tool that created it answered.";
}

/** The Table API names a `where` filter by its query parameter, `filter[price][gte]`; the tool's caller wrote `where` price gte. */
function inToolTerms(message: string): string {
  return message.replace(/filter\[([^\]]+)\]\[([^\]]+)\]/g, (_m, field: string, op: string) => `where {field: "${field}", op: "${op}"}`);
}

/**
 * One Table API call (free) with the caller's write key and owner credential; a refusal becomes a
 * ToolFailure that says what to do. The owner's credential opens every Table of the owner's apps
 * (the caller's own on the hosted endpoint, SVC_API_KEY in svc-mcp); the service refuses it with 403
 * on an app it does not own (a wallet's app, another account's public Table), so such a refusal is
 * asked again as anyone: a public read answers, a write says it needs the write key.
 */
async function tableFetch(ctx: McpContext, tool: string, req: TableRequest, writeKey: string | undefined): Promise<Record<string, unknown>> {
  const apiKey = writeKey ? undefined : (ctx.hosted?.credential ?? ctx.config.apiKey);
  let res = await sendTableRequest(ctx, tool, req, writeKey ? { 'x-svc-write-key': writeKey } : apiKey ? { 'x-svc-api-key': apiKey } : {});
  let answer = await readAnswer(res);
  if (apiKey && res.status === 403 && describeFailure(res, answer).code === 'forbidden') {
    res = await sendTableRequest(ctx, tool, req, {});
    answer = await readAnswer(res);
  }
  if (!res.ok) {
    const f = describeFailure(res, answer);
    // Table tools are free: what a refusal leaves untouched is the Table (a refused write is all or nothing).
    const untouched = req.method === 'GET' ? '' : ' Nothing was changed.';
    throw new ToolFailure(`${tool} failed: ${inToolTerms(f.what)} ${f.tag}.${untouched} ${failureHint(ctx, res.status, f.what)}`, { status: res.status });
  }
  return answer.json;
}

async function sendTableRequest(ctx: McpContext, tool: string, req: TableRequest, credential: Record<string, string>): Promise<Response> {
  const headers: Record<string, string> = { accept: 'application/json', ...credential };
  if (req.body !== undefined) headers['content-type'] = 'application/json';
  try {
    return await ctx.fetch(`${ctx.config.serviceUrl}/api/data/${req.path}`, {
      method: req.method,
      headers,
      body: req.body === undefined ? undefined : JSON.stringify(req.body),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (e) {
    throw new ToolFailure(
      `${tool} failed: the service at ${ctx.config.serviceUrl} did not answer (${(e as Error).message}). Nothing was changed or paid; check the service is running.`,
    );
  }
}

interface TableRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** Under /api/data/: `<appName>/<table>[/…]`, already encoded. */
  path: string;
  body?: unknown;
}
type TableArgs = Record<string, unknown> & { appName: string; table: string; writeKey?: string; recordId?: string | number };
interface TableTool {
  name: string;
  /** `{owner}` is where a session holding an account's credential says the account's own Tables need no key. */
  description: string;
  inputSchema: ToolConfig['inputSchema'];
  request: (a: TableArgs) => TableRequest;
  /** The answer in the tools' words (mcp/vocabulary.ts), where the Table API's differ. */
  answer?: (json: Record<string, unknown>) => Record<string, unknown>;
  /** Where a record's fields given as arguments belong (register.ts ToolConfig.strayArguments). */
  strayArguments?: (names: readonly string[]) => string;
}

/** Said in the write tools' descriptions where this session's credential opens the account's own Tables. */
const OWNER_KEY_SENT = " (not on the account's own Tables)";

/** `{"title": …, "done": …}`: the stray arguments as the object they belong in. */
const asFields = (names: readonly string[]) => `{${names.map((n) => `"${n}": …`).join(', ')}}`;

const tablePath = (a: TableArgs) => `${encodeURIComponent(a.appName)}/${encodeURIComponent(a.table)}`;
const recordPath = (a: TableArgs) => `${tablePath(a)}/${encodeURIComponent(String(a.recordId ?? ''))}`;

const TABLE_TOOLS: TableTool[] = [
  {
    name: 'table_query',
    description: 'Read records of a Table: filters, sort, search, paging, aggregates, map area (fields as table_schema names them). Free.',
    inputSchema: QueryArgs,
    request: ({ appName, table, writeKey, where, ...query }) => {
      const filters = (where as { field: string; op?: string; value: string | number | boolean }[] | undefined)?.map((f) => ({ ...f, value: String(f.value) }));
      const qs = tableQueryToSearchParams({ ...query, where: filters } as TableQueryInput).toString();
      return { method: 'GET', path: `${tablePath({ appName, table })}${qs ? `?${qs}` : ''}` };
    },
    strayArguments: ([n]) => `records whose field matches a value: where: [{"field": "${n}", "value": …}]`,
  },
  {
    name: 'table_schema',
    description: 'Fields (names, types) of a Table, the methods its API allows, and its limits. Free.',
    inputSchema: SchemaArgs,
    request: (a) => ({ method: 'GET', path: `${tablePath(a)}/schema` }),
    // The Table's id, named as the tools that take it (insert_table_records) name it.
    answer: ({ ok, id, ...rest }) => ({ ok, tableId: id, ...rest }),
  },
  {
    name: 'table_get_record',
    description: 'One record of a Table by id. Free.',
    inputSchema: RecordArgs,
    request: (a) => ({ method: 'GET', path: recordPath(a) }),
  },
  {
    name: 'table_create_record',
    description:
      'Create a record, or many (records: all or none). Needs the write key{owner} unless the Table allows public inserts. A retry after a lost answer can create them again. Free.',
    inputSchema: CreateArgs,
    request: (a) => {
      if ((a.record === undefined) === (a.records === undefined))
        throw new ToolFailure('table_create_record: give record (one object) or records (a list), one of the two. Nothing was done.');
      return { method: 'POST', path: tablePath(a), body: a.records ? { records: a.records } : { record: a.record } };
    },
    strayArguments: (names) => `a record's fields go inside record: ${asFields(names)}`,
    // Many records answer their ids: the model sent their fields and needs only what the Table added.
    answer: ({ records, ...rest }) => (Array.isArray(records) ? { ...rest, ids: records.map((r: { id: string }) => r.id) } : rest),
  },
  {
    name: 'table_update_record',
    description: 'Change some fields of one record; the others stay. Needs the write key{owner}. Free.',
    inputSchema: UpdateArgs,
    request: (a) => ({ method: 'PATCH', path: recordPath(a), body: { fields: a.fields } }),
    strayArguments: (names) => `the fields to change go inside fields: ${asFields(names)}`,
  },
  {
    name: 'table_delete_record',
    description: 'Delete one record (cannot be undone). Needs the write key{owner}. Free.',
    inputSchema: RecordArgs,
    request: (a) => ({ method: 'DELETE', path: recordPath(a) }),
  },
];

/**
 * Table API tools. Every GET parameter of `table_query` is the tables engineer's TableQuerySchema
 * (shared/tables/query.ts), so the tool and the API never disagree. Calls go to the path fallback
 * `{SVC_URL}/api/data/<appName>/<table>`, which every deployment serves. Table calls cost nothing.
 * A read-only server registers only the reading tools.
 */
export function registerTableTools(server: McpServer, ctx: McpContext): void {
  // A session with an account's credential sends it when no write key is given (tableRequest): the
  // account's own Tables need no key here.
  const ownerKeySent = Boolean(ctx.hosted?.credential ?? ctx.config.apiKey);
  for (const t of TABLE_TOOLS) {
    if (!annotationsOf(t.name).readOnlyHint && ctx.config.readOnly) continue;
    addTool(
      server,
      ctx,
      t.name,
      {
        description: t.description.replace('{owner}', ownerKeySent ? OWNER_KEY_SENT : ''),
        inputSchema: ctx.hosted ? t.inputSchema : { ...t.inputSchema, writeKey: localWriteKey },
        strayArguments: t.strayArguments,
      },
      (args: Record<string, unknown>) =>
        guarded(async () => {
          const a = args as TableArgs;
          // An app's name is a DNS label; an id (`site_…`) is the other thing a model holds for an app.
          if (a.appName.includes('_'))
            throw new ToolFailure(
              `${t.name}: appName is the app's name (appName in results, the first label of its url), not its id ${a.appName}. Nothing was done.`,
            );
          // The key named in the call, else one create_table_api gave this server, else SVC_TABLE_WRITE_KEY.
          const remembered = a.writeKey ? undefined : knownTableWriteKey(ctx, a.appName, a.table);
          const answer = await tableFetch(ctx, t.name, t.request(a), a.writeKey ?? remembered ?? ctx.config.tableWriteKey).catch(async (e: unknown) => {
            // A remembered key the Table no longer takes (the Table was made again since, by another
            // owner): forgotten, and the call asked once more without it.
            if (!remembered || !(e instanceof ToolFailure) || e.details.status !== 401) throw e;
            await forgetTableWriteKey(ctx, a.appName, a.table);
            return tableFetch(ctx, t.name, t.request(a), ctx.config.tableWriteKey);
          });
          return okResult(t.answer ? t.answer(answer) : answer);
        }),
    );
  }
}
