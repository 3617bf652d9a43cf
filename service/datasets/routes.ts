import { createRoute } from '@hono/zod-openapi';
import type { z } from 'zod';
import { CreateDatasetBodySchema, CreateDatasetResponseSchema, DatasetListResponseSchema } from '../../shared/account-api/datasets.js';
import { requireScope } from '../auth/require-scope.js';
import type { Deps } from '../deps.js';
import { createApiRouter, errorResponses, jsonBody, securityFor, jsonResponse } from '../http/openapi.js';
import { accountOwner } from '../sites/owner.js';
import { getOwnedSite } from '../sites/sites.js';
import { createDatasetFromInline, listDatasets } from './datasets.js';
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

const createDatasetRoute = createRoute({
  method: 'post',
  path: '/sites/{siteId}/datasets',
  tags: ['Datasets'],
  summary: 'Create a dataset from a data file given inline',
  description:
    "Converts the file (CSV, XLSX, JSON, GeoJSON, Shapefile ZIP, Parquet, GeoParquet; binary kinds in base64) into a dataset served read-only by the Table API, as convert_data_file_to_api does for a wallet's app. The whole request is within the JSON body limit (1 MiB by default); larger files go through the Agent API's upload URLs. A file that cannot be converted is a 400 naming where, and nothing is kept. Not in the specification: svc adds it so that an account makes datasets without a wallet.",
  security: securityFor('svc.data.write'),
  request: { params: SiteIdParams, body: jsonBody(CreateDatasetBodySchema) },
  responses: {
    201: jsonResponse(CreateDatasetResponseSchema, 'The dataset'),
    ...errorResponses(400, 401, 403, 404, 409, 413, 429),
  },
});

/** Account API: `GET|POST /api/v1/sites/:siteId/datasets` (mounted under /api/v1). */
export function datasetRoutes(deps: Deps) {
  const r = createApiRouter();
  const read = requireScope(deps, 'svc.data.read');
  r.openapi({ ...listDatasetsRoute, middleware: [read] as const }, async (c) => {
    const site = await getOwnedSite(deps.db, accountOwner(c.var.principal.accountId), c.req.valid('param').siteId);
    const list = await listDatasets(deps, site);
    return c.json({ ok: true as const, datasets: list as z.infer<typeof DatasetListResponseSchema>['datasets'] }, 200);
  });
  const write = requireScope(deps, 'svc.data.write');
  r.openapi({ ...createDatasetRoute, middleware: [write] as const }, async (c) => {
    const site = await getOwnedSite(deps.db, accountOwner(c.var.principal.accountId), c.req.valid('param').siteId);
    const { dataset, replaced, slugTaken } = await createDatasetFromInline(deps, site, c.req.valid('json'));
    return c.json(
      { ok: true as const, dataset: dataset as z.infer<typeof CreateDatasetResponseSchema>['dataset'], replaced, ...(slugTaken ? { slugTaken } : {}) },
      201,
    );
  });
  return r;
}
