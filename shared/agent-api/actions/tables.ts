import { z } from 'zod';
import type { AgentAction } from '../action.js';
import { SiteParams } from './common.js';

// The tables engineer refines `schema` (field types) and the outputs.

export const AgentTableFieldSchema = z.object({
  name: z.string().min(1).max(63),
  label: z.string().max(200),
  type: z.string().min(1).describe('Field type, e.g. "string"'),
});

export const createTableApi = {
  name: 'x402.create_table_api',
  method: 'POST',
  path: '/api/x402/apps/:siteId/tables',
  price: '0.008',
  description: 'Create a Table with a REST data API on an app owned by the paying wallet.',
  params: SiteParams,
  input: z.object({
    name: z.string().min(1).max(200),
    slug: z.string().min(1).max(63).optional(),
    requireReadKey: z.boolean().optional().default(false).describe('When true, reads need the write key too'),
    schema: z.object({ fields: z.array(AgentTableFieldSchema).min(1) }),
  }),
  output: z.object({ ok: z.literal(true), table: z.object({ id: z.string(), slug: z.string() }) }),
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
  description: 'Insert records into a Table of an app owned by the paying wallet.',
  params: z.object({ tableId: z.string().min(1).max(100) }),
  input: z.object({ records: z.array(z.record(z.string(), z.unknown())).min(1) }),
  output: z.object({ ok: z.literal(true), inserted: z.number().int() }),
  identity: true,
  readOnly: false,
  destructive: false,
  idempotent: false,
} satisfies AgentAction;

export const TABLE_ACTIONS = [createTableApi, insertTableRecords] as const;
