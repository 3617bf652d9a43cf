import { z } from 'zod';
import type { AgentAction } from '../action.js';
import { RollbackBodySchema, SiteVersionSchema } from '../../account-api/site-versions.js';
import { SiteTrafficResponseSchema } from '../../account-api/site-traffic.js';
import { NoBody, SiteParams } from './common.js';

/*
 * Versions, rollback and traffic of a wallet's apps. Reading them is free with the wallet's proof
 * (a zero-value signed authorization, as list_apps); a rollback changes what the app serves and is
 * priced like publish_app.
 */

export const listAppVersions = {
  name: 'x402.list_app_versions',
  method: 'GET',
  path: '/api/x402/apps/:siteId/versions',
  price: '0',
  description:
    "Versions of the wallet's app, newest first (last 50), the live one current; each previewUrl serves that version. Needs the wallet's zero-value proof.",
  params: SiteParams,
  input: NoBody,
  output: z.object({ ok: z.literal(true), siteId: z.string(), current: z.number().int(), versions: z.array(SiteVersionSchema), total: z.number().int() }),
  identity: true,
  readOnly: true,
  destructive: false,
  idempotent: true,
} satisfies AgentAction;

export const rollbackApp = {
  name: 'x402.rollback_app',
  method: 'POST',
  path: '/api/x402/apps/:siteId/rollback',
  price: '0.002',
  description: "Serve an earlier version of the wallet's app again, as a new version.",
  params: SiteParams,
  input: RollbackBodySchema,
  output: z.object({ ok: z.literal(true), siteId: z.string(), version: SiteVersionSchema, replayed: z.boolean() }),
  identity: true,
  readOnly: false,
  destructive: false,
  idempotent: true,
} satisfies AgentAction;

export const getAppTraffic = {
  name: 'x402.get_app_traffic',
  method: 'GET',
  path: '/api/x402/apps/:siteId/traffic',
  price: '0',
  description: "Requests and bytes the wallet's app served per day, last 30 days. Needs the wallet's zero-value proof.",
  params: SiteParams,
  input: NoBody,
  output: SiteTrafficResponseSchema,
  identity: true,
  readOnly: true,
  destructive: false,
  idempotent: true,
} satisfies AgentAction;

export const APP_VERSION_ACTIONS = [listAppVersions, rollbackApp, getAppTraffic] as const;
