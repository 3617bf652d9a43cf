import { createRoute } from '@hono/zod-openapi';
import type { z } from 'zod';
import { DatasetListResponseSchema } from '../../shared/account-api/datasets.js';
import { requireScope } from '../auth/require-scope.js';
import type { Deps } from '../deps.js';
import { createApiRouter, errorResponses, securityFor, jsonResponse } from '../http/openapi.js';
import { accountOwner } from '../sites/owner.js';
import { getOwnedSite } from '../sites/sites.js';
import { listDatasets } from './datasets.js';
import { SiteIdParams } from '../../shared/account-api/operations.js';

const listDatasetsRoute = createRoute({
  method: 'get',
  path: '/sites/{siteId}/datasets',
  tags: ['Datasets'],
  summary: 'List Site datasets',
  description: 'Datasets made from data files (convert_data_file_to_api), oldest first. Each is served read-only by the Table API at its `url`.',
  security: securityFor('svc.data.read'),
  request: { params: SiteIdParams },
  responses: {
    200: jsonResponse(DatasetListResponseSchema, 'The datasets of the site'),
    ...errorResponses(401, 403, 404, 429),
  },
});

/** Account API: `GET /api/v1/sites/:siteId/datasets` (mounted under /api/v1). */
export function datasetRoutes(deps: Deps) {
  const r = createApiRouter();
  const read = requireScope(deps, 'svc.data.read');
  r.openapi({ ...listDatasetsRoute, middleware: [read] as const }, async (c) => {
    const site = await getOwnedSite(deps.db, accountOwner(c.var.principal.accountId), c.req.valid('param').siteId);
    const list = await listDatasets(deps, site);
    return c.json({ ok: true as const, datasets: list as z.infer<typeof DatasetListResponseSchema>['datasets'] }, 200);
  });
  return r;
}
