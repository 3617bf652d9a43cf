import { z } from 'zod';

/**
 * Tables: schema, field types, limits and the Account API shapes. The service, the MCP table tools
 * and the datasets importer all speak these. docs/tables.md explains every decision.
 */

/** Field types. latitude/longitude are plain `number` fields; `bbox` names them. */
export const FIELD_TYPES = ['string', 'number', 'integer', 'boolean', 'date', 'datetime', 'json'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

/** Limits of the Table API, fixed by construction (documented in docs/tables.md). */
export const TABLE_LIMITS = {
  /** Records per page when `limit` is omitted. */
  defaultLimit: 50,
  /** Largest `limit` accepted; larger is a 400. */
  maxLimit: 1000,
  /** Records per insert call (Agent API `insert_table_records`, Account/Table API batch POST). */
  maxBatch: 500,
  /** Groups returned by `aggregate` + `groupBy`; more are cut off and marked `truncated`. */
  maxGroups: 1000,
  /** Fields per table schema. */
  maxFields: 100,
  /** Sort keys in one `sort`. */
  maxSortKeys: 5,
  /** Filters in one request. */
  maxFilters: 20,
  /** Values in one `in` filter. */
  maxInValues: 100,
  /** Serialized size of one record's fields (bytes of JSON). */
  maxRecordBytes: 64 * 1024,
} as const;

export const FIELD_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;
/** Names that would be ambiguous next to the record envelope. */
export const RESERVED_FIELD_NAMES = ['id', 'createdAt', 'updatedAt'] as const;

export const FieldSchema = z
  .object({
    name: z
      .string()
      .regex(FIELD_NAME_PATTERN, 'use 1–63 letters, digits or _, not starting with a digit')
      .refine((n) => !(RESERVED_FIELD_NAMES as readonly string[]).includes(n), 'id, createdAt and updatedAt are reserved')
      .describe('Name in records and queries'),
    label: z.string().max(200).optional().describe('Display label (default: the name)'),
    type: z.enum(FIELD_TYPES).default('string').describe('date: YYYY-MM-DD; datetime: ISO 8601'),
    required: z.boolean().optional().describe('Every record must have a value'),
  })
  .meta({ id: 'TableField' });

export const TableSchemaSchema = z
  .object({
    fields: z
      .array(FieldSchema)
      .min(1)
      .max(TABLE_LIMITS.maxFields)
      .superRefine((fields, ctx) => {
        const seen = new Set<string>();
        fields.forEach((f, i) => {
          if (seen.has(f.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `duplicate field name "${f.name}"` });
          seen.add(f.name);
        });
      }),
  })
  .meta({ id: 'TableSchema' });

export type TableField = z.output<typeof FieldSchema>;
/** A schema after parsing: every field has a type and a label. */
export interface TableSchema {
  fields: { name: string; label: string; type: FieldType; required?: boolean }[];
}

export const TABLE_METHODS = ['GET', 'POST', 'PATCH', 'PUT', 'DELETE'] as const;
export type TableMethod = (typeof TABLE_METHODS)[number];

export const CreateTableBodySchema = z
  .object({
    name: z.string().trim().min(1).max(200).describe('Display name'),
    slug: z.string().optional().describe('URL name in {site_host}/api/data/<site_slug>/<slug>; derived from the name when omitted'),
    requireReadKey: z.boolean().default(false).describe('When true, GET and /schema need x-svc-write-key (or x-svc-api-key)'),
    schema: TableSchemaSchema,
    methods: z.array(z.enum(TABLE_METHODS)).min(1).optional().describe('Table API methods enabled (default all five); a disabled method answers 405'),
    publicInsert: z.boolean().default(false).describe('When true, POST needs no key (GET/PATCH/PUT/DELETE are unaffected)'),
  })
  .meta({ id: 'CreateTableRequest' });
export type CreateTableBody = z.input<typeof CreateTableBodySchema>;

export const TableViewSchema = z
  .object({
    id: z.string(),
    siteId: z.string(),
    slug: z.string(),
    name: z.string(),
    kind: z.enum(['table', 'dataset']),
    url: z.string().describe('{table_base_url}: {site_host}/api/data/<site_slug>/<table_slug>'),
    pathUrl: z.string().describe('The same Table API on the service host (path fallback)'),
    requireReadKey: z.boolean(),
    publicInsert: z.boolean(),
    methods: z.array(z.enum(TABLE_METHODS)),
    schema: TableSchemaSchema,
    recordCount: z.number().int().optional(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Table' });
export type TableView = z.infer<typeof TableViewSchema>;

export const CreateTableResponseSchema = z
  .object({
    ok: z.literal(true),
    table: TableViewSchema.extend({
      writeKey: z.string().describe('x-svc-write-key value; shown once, stored only as a hash'),
    }),
  })
  .meta({ id: 'CreateTableResponse' });

export const TableListResponseSchema = z.object({ ok: z.literal(true), tables: z.array(TableViewSchema) }).meta({ id: 'TableList' });

export const TableRecordSchema = z
  .object({
    id: z.string(),
    fields: z.record(z.string(), z.unknown()),
    createdAt: z.string().optional(),
    updatedAt: z.string().optional(),
  })
  .meta({ id: 'TableRecord' });
export type TableRecord = z.infer<typeof TableRecordSchema>;

/** One record's values: field name → value. */
export const RecordFieldsSchema = z.record(z.string(), z.unknown());
