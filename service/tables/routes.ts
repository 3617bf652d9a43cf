import { createRoute } from '@hono/zod-openapi';
import { CreateTableBodySchema, CreateTableResponseSchema, TableListResponseSchema } from '../../shared/tables/schema.js';
import { requireScope } from '../auth/require-scope.js';
import type { Deps } from '../deps.js';
import { createApiRouter, errorResponses, securityFor, jsonBody, jsonResponse } from '../http/openapi.js';
import { accountOwner } from '../db/owner.js';
import { getChangeableSite, getOwnedSite } from '../sites/sites.js';
import { createTable, listSiteTables, recordCounts, toTableView } from './tables.js';
import { SiteIdParams } from '../../shared/account-api/operations.js';

const listTablesRoute = createRoute({
  method: 'get',
  path: '/sites/{siteId}/tables',
  tags: ['Tables'],
  summary: 'List Site Tables',
  description: 'Tables of the site (kind "table"; datasets are listed by /datasets), oldest first, with exact record counts.',
  security: securityFor('svc.data.read'),
  request: { params: SiteIdParams },
  responses: { 200: jsonResponse(TableListResponseSchema, 'The tables'), ...errorResponses(401, 403, 404, 429) },
});

const createTableRoute = createRoute({
  method: 'post',
  path: '/sites/{siteId}/tables',
  tags: ['Tables'],
  summary: 'Create a Site Table',
  description:
    'Creates a Table and its Table API at `{site_host}/api/data/<site_slug>/<slug>`. The response carries `writeKey` once; only its hash is stored. Not idempotent: a retry after a lost answer can create a second table (with a suffixed slug when the slug was derived).',
  security: securityFor('svc.data.write'),
  request: { params: SiteIdParams, body: jsonBody(CreateTableBodySchema) },
  responses: { 201: jsonResponse(CreateTableResponseSchema, 'Created; writeKey is shown only here'), ...errorResponses(400, 401, 403, 404, 409, 413, 429) },
});

/** Account API: `/api/v1/sites/:siteId/tables` (mounted under /api/v1). */
export function tableRoutes(deps: Deps) {
  const r = createApiRouter();
  const read = requireScope(deps, 'svc.data.read');
  const write = requireScope(deps, 'svc.data.write');
  r.openapi({ ...listTablesRoute, middleware: [read] as const }, async (c) => {
    const site = await getOwnedSite(deps.db, accountOwner(c.var.principal.accountId), c.req.valid('param').siteId);
    const rows = await listSiteTables(deps, site, deps.db, 'table');
    const counts = await recordCounts(
      deps.db,
      rows.map((t) => t.id),
    );
    return c.json({ ok: true as const, tables: rows.map((t) => toTableView(deps.config, site, t, counts.get(t.id) ?? 0)) }, 200);
  });
  r.openapi({ ...createTableRoute, middleware: [write] as const }, async (c) => {
    const site = await getChangeableSite(deps.db, accountOwner(c.var.principal.accountId), c.req.valid('param').siteId);
    const { table, writeKey } = await createTable(deps, site, c.req.valid('json'));
    return c.json({ ok: true as const, table: { ...toTableView(deps.config, site, table, 0), writeKey } }, 201);
  });
  return r;
}
