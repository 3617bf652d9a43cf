import { z } from 'zod';
import type { AgentAction } from '../action.js';
import { TableSchemaSchema, TABLE_LIMITS, TABLE_METHODS } from '../../tables/schema.js';
import { SiteParams } from './common.js';

/** The table object an agent gets back: the spec's {id, slug} plus where it lives and its key. */
export const AgentTableResultSchema = z
  .object({
    id: z.string(),
    slug: z.string(),
    name: z.string(),
    url: z.string().describe('{table_base_url}: {site_host}/api/data/<app_name>/<slug>'),
    pathUrl: z.string().describe('The same Table API on the service host'),
    writeKey: z.string().describe('x-svc-write-key for writes (and reads when requireReadKey); shown once'),
    requireReadKey: z.boolean(),
    publicInsert: z.boolean(),
    methods: z.array(z.enum(TABLE_METHODS)),
    schema: TableSchemaSchema,
  })
  .meta({ id: 'AgentTable' });

export const createTableApi = {
  name: 'x402.create_table_api',
  method: 'POST',
  path: '/api/x402/apps/:siteId/tables',
  price: '0.008',
  description: 'Create a Table with a REST data API on an app owned by the paying wallet. Returns the Table API url and its write key (shown once).',
  params: SiteParams,
  input: z.object({
    name: z.string().trim().min(1).max(200),
    slug: z.string().min(1).max(63).optional().describe('URL name; derived from name when omitted'),
    requireReadKey: z.boolean().optional().default(false).describe('When true, reads need the write key too'),
    schema: TableSchemaSchema,
    methods: z.array(z.enum(TABLE_METHODS)).min(1).optional().describe('Table API methods enabled (default all)'),
    publicInsert: z.boolean().optional().default(false).describe('When true, POST needs no key (browser forms)'),
  }),
  output: z.object({ ok: z.literal(true), table: AgentTableResultSchema }),
  identity: true,
  readOnly: false,
  destructive: false,
  idempotent: false,
} satisfies AgentAction;

export const insertTableRecords = {
  name: 'x402.insert_table_records',
  method: 'POST',
  path: '/api/x402/tables/:tableId/records',
  price: '0.001',
  description: `Insert up to ${TABLE_LIMITS.maxBatch} records into a Table of an app owned by the paying wallet; all or nothing (a bad record is a 400 naming it, and nothing is charged or written).`,
  params: z.object({ tableId: z.string().min(1).max(100) }),
  input: z.object({ records: z.array(z.record(z.string(), z.unknown())).min(1).max(TABLE_LIMITS.maxBatch) }),
  output: z.object({ ok: z.literal(true), inserted: z.number().int(), ids: z.array(z.string()).describe('Ids of the new records, in order') }),
  identity: true,
  readOnly: false,
  destructive: false,
  idempotent: false,
} satisfies AgentAction;

export const TABLE_ACTIONS = [createTableApi, insertTableRecords] as const;
