import { z } from 'zod';
import { TABLE_LIMITS } from './schema.js';

/**
 * Table API `GET {table_base_url}` query parameters. The spec's parameters work exactly as written;
 * the extensions (operators, multi-key sort, cursor) use the same flat query-string style.
 * The MCP `table_query` tool takes this object and turns it into a query string with
 * `tableQueryToSearchParams`.
 */

export const FILTER_OPERATORS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'in', 'isnull', 'ilike'] as const;
export type FilterOperator = (typeof FILTER_OPERATORS)[number];
export const AGGREGATES = ['count', 'sum', 'avg', 'min', 'max'] as const;
export type Aggregate = (typeof AGGREGATES)[number];

const list = (description: string) => z.string().optional().describe(description);
const flag = (description: string) =>
  z
    .union([z.boolean(), z.enum(['true', 'false', '1', '0'])])
    .optional()
    .describe(description);

export const TableFilterSchema = z.object({
  field: z.string().describe('Schema field name'),
  op: z.enum(FILTER_OPERATORS).default('eq').describe('eq, neq, gt, gte, lt, lte, in (comma-separated values), isnull (true/false), ilike (* or % wildcards)'),
  value: z.string().describe('Value as text, e.g. "10", "true", "2024-05-01", "a,b,c" for in'),
});

export const TableQuerySchema = z
  .object({
    limit: z.coerce
      .number()
      .int()
      .min(1)
      .max(TABLE_LIMITS.maxLimit)
      .optional()
      .describe(`Page size, 1–${TABLE_LIMITS.maxLimit} (default ${TABLE_LIMITS.defaultLimit})`),
    offset: z.coerce.number().int().min(0).optional().describe('Records to skip (default 0)'),
    includeTotal: flag('Also return `total`, the number of matching records'),
    field: z.string().optional().describe('Equality filter: field name (with `value`)'),
    value: z.string().optional().describe('Equality filter: value'),
    filter: z.string().optional().describe('Equality filter: field name (with `filterValue`)'),
    filterValue: z.string().optional().describe('Equality filter: value'),
    sortField: z.string().optional().describe('Sort field'),
    sortDir: z.enum(['asc', 'desc']).optional().describe('asc (default) or desc'),
    sort: list('Extension: several sort keys, e.g. "-price,name" (- = descending)'),
    q: z.string().optional().describe('Case-insensitive substring search'),
    searchFields: list('Comma-separated fields `q` searches (default: every string field)'),
    dateField: z.string().optional().describe('date or datetime field for dateFrom/dateTo'),
    dateFrom: z.string().optional().describe('Inclusive lower bound (YYYY-MM-DD or ISO datetime)'),
    dateTo: z.string().optional().describe('Inclusive upper bound (a bare date includes that whole day)'),
    fields: list('Comma-separated fields to return'),
    columns: list('Same as fields'),
    compact: flag('Return {columns, rows} arrays instead of {records}'),
    aggregate: z.enum(AGGREGATES).optional().describe('count, sum, avg, min or max over the matching records'),
    aggregateField: z.string().optional().describe('Field aggregated (not needed for count)'),
    groupBy: z.string().optional().describe('Field to group by'),
    bbox: z.string().optional().describe('minLon,minLat,maxLon,maxLat'),
    longitudeField: z.string().optional().describe('Longitude field for bbox (default: a field named longitude, lon, lng)'),
    latitudeField: z.string().optional().describe('Latitude field for bbox (default: a field named latitude or lat)'),
    cursor: z.string().optional().describe('Extension: `nextCursor` of the previous page (keyset paging; not with offset)'),
    where: z.array(TableFilterSchema).max(TABLE_LIMITS.maxFilters).optional().describe('Extension: comparison filters, sent as filter[field][op]=value'),
  })
  .meta({ id: 'TableQuery' });
export type TableQueryInput = z.input<typeof TableQuerySchema>;

/** Builds the query string the Table API reads from the structured form (MCP tools, clients). */
export function tableQueryToSearchParams(query: TableQueryInput): URLSearchParams {
  const out = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null || k === 'where') continue;
    out.set(k, String(v));
  }
  for (const f of query.where ?? []) out.append(`filter[${f.field}][${f.op ?? 'eq'}]`, f.value);
  return out;
}

/** Record list answer (default shape). */
export const TableRecordsResponseSchema = z
  .object({
    ok: z.literal(true),
    records: z.array(z.object({ id: z.string(), fields: z.record(z.string(), z.unknown()) })),
    limit: z.number().int(),
    offset: z.number().int(),
    total: z.number().int().optional().describe('With includeTotal=true'),
    nextCursor: z.string().nullable().describe('Pass as cursor for the next page; null on the last page'),
  })
  .meta({ id: 'TableRecords' });

/** compact=true answer: the same page as arrays. */
export const TableCompactResponseSchema = z
  .object({
    ok: z.literal(true),
    columns: z.array(z.string()).describe('"id" then the returned fields'),
    rows: z.array(z.array(z.unknown())),
    limit: z.number().int(),
    offset: z.number().int(),
    total: z.number().int().optional(),
    nextCursor: z.string().nullable(),
  })
  .meta({ id: 'TableCompactRecords' });

/** aggregate answer: one value, or one per group. */
export const TableAggregateResponseSchema = z
  .object({
    ok: z.literal(true),
    aggregate: z.enum(AGGREGATES),
    field: z.string().nullable(),
    value: z
      .union([z.number(), z.string()])
      .nullable()
      .optional()
      .describe('Without groupBy. min/max of text, date and datetime fields are text; null over no values'),
    count: z.number().int().optional().describe('Without groupBy: matching records'),
    groupBy: z.string().optional(),
    groups: z
      .array(
        z.object({ key: z.unknown().describe('Group key (null groups last)'), value: z.union([z.number(), z.string()]).nullable(), count: z.number().int() }),
      )
      .optional()
      .describe('With groupBy: ordered by key'),
    truncated: z.boolean().optional().describe(`With groupBy: true when more than ${TABLE_LIMITS.maxGroups} groups exist`),
  })
  .meta({ id: 'TableAggregate' });
