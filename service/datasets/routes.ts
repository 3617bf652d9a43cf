import { createRoute } from '@hono/zod-openapi';
import type { z } from 'zod';
import {
  CompleteDatasetUploadBodySchema,
  CompleteDatasetUploadResponseSchema,
  ConvertDatasetUploadBodySchema,
  CreateDatasetBodySchema,
  CreateDatasetResponseSchema,
  DatasetListResponseSchema,
  DatasetUploadUrlBodySchema,
  DatasetUploadUrlResponseSchema,
} from '../../shared/account-api/datasets.js';
import { requireScope } from '../auth/require-scope.js';
import type { Deps } from '../deps.js';
import { createApiRouter, errorResponses, jsonBody, securityFor, jsonResponse } from '../http/openapi.js';
import { accountOwner } from '../db/owner.js';
import { getChangeableSite, getOwnedSite } from '../sites/sites.js';
import { createDatasetFromInline, createDatasetFromUpload, listDatasets, type DatasetMade } from './datasets.js';
import { assertUploadToken, checkCompletion, completeUpload, createUpload } from './uploads.js';
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
    "Converts the file (CSV, XLSX, JSON, GeoJSON, Shapefile ZIP, Parquet, GeoParquet; binary kinds in base64) into a dataset served read-only by the Table API, as convert_data_file_to_api does for a wallet's app. The whole request is within the JSON body limit (1 MiB by default); larger files go through `datasets/upload-url`, then `datasets/convert`. A file that cannot be converted is a 400 naming where, and nothing is kept. Not in the specification: svc adds it so that an account makes datasets without a wallet.",
  security: securityFor('svc.data.write'),
  request: { params: SiteIdParams, body: jsonBody(CreateDatasetBodySchema) },
  responses: {
    201: jsonResponse(CreateDatasetResponseSchema, 'The dataset'),
    ...errorResponses(400, 401, 403, 404, 409, 413, 429),
  },
});

const NOT_IN_SPEC = 'Not in the specification: svc adds it so that an account makes datasets of files too large for one request, without a wallet.';

const datasetUploadUrlRoute = createRoute({
  method: 'post',
  path: '/sites/{siteId}/datasets/upload-url',
  tags: ['Datasets'],
  summary: 'Get an upload URL for a data file',
  description: `An upload slot for a data file on the site, as create_data_file_upload_url opens one for a wallet's app: one PUT (\`single\`) or a PUT per part (\`multipart\`, then \`datasets/complete-upload\`); then \`datasets/convert\`. The kind and size are checked first. ${NOT_IN_SPEC}`,
  security: securityFor('svc.data.write'),
  request: { params: SiteIdParams, body: jsonBody(DatasetUploadUrlBodySchema) },
  responses: { 200: jsonResponse(DatasetUploadUrlResponseSchema, 'Where to PUT the file'), ...errorResponses(400, 401, 403, 404, 413, 429) },
});

const completeDatasetUploadRoute = createRoute({
  method: 'post',
  path: '/sites/{siteId}/datasets/complete-upload',
  tags: ['Datasets'],
  summary: 'Complete a multipart data-file upload',
  description: `Assembles the parts PUT to a multipart upload's URLs (each part's ETag as its PUT answered it). ${NOT_IN_SPEC}`,
  security: securityFor('svc.data.write'),
  request: { params: SiteIdParams, body: jsonBody(CompleteDatasetUploadBodySchema) },
  responses: { 200: jsonResponse(CompleteDatasetUploadResponseSchema, 'The assembled file'), ...errorResponses(400, 401, 403, 404, 429) },
});

const convertDatasetUploadRoute = createRoute({
  method: 'post',
  path: '/sites/{siteId}/datasets/convert',
  tags: ['Datasets'],
  summary: 'Create a dataset from an uploaded data file',
  description: `Converts the file uploaded at \`key\` into a dataset served read-only by the Table API, as convert_data_file_to_api does. A file that cannot be converted is a 400 naming where; it stays uploaded, to be converted again. ${NOT_IN_SPEC}`,
  security: securityFor('svc.data.write'),
  request: { params: SiteIdParams, body: jsonBody(ConvertDatasetUploadBodySchema) },
  responses: { 201: jsonResponse(CreateDatasetResponseSchema, 'The dataset'), ...errorResponses(400, 401, 403, 404, 409, 429) },
});

/** Account API: `GET|POST /api/v1/sites/:siteId/datasets`, and the upload of a large file (mounted under /api/v1). */
export function datasetRoutes(deps: Deps) {
  const r = createApiRouter();
  const ownSite = (c: { var: { principal: { accountId: string } } }, siteId: string) => getOwnedSite(deps.db, accountOwner(c.var.principal.accountId), siteId);
  const changeableSite = (c: { var: { principal: { accountId: string } } }, siteId: string) =>
    getChangeableSite(deps.db, accountOwner(c.var.principal.accountId), siteId);
  const read = requireScope(deps, 'svc.data.read');
  r.openapi({ ...listDatasetsRoute, middleware: [read] as const }, async (c) => {
    const site = await ownSite(c, c.req.valid('param').siteId);
    const list = await listDatasets(deps, site);
    return c.json({ ok: true as const, datasets: list as z.infer<typeof DatasetListResponseSchema>['datasets'] }, 200);
  });
  const write = requireScope(deps, 'svc.data.write');
  const answer = ({ dataset, replaced, slugTaken }: DatasetMade) => ({
    ok: true as const,
    dataset: dataset as z.infer<typeof CreateDatasetResponseSchema>['dataset'],
    replaced,
    ...(slugTaken ? { slugTaken } : {}),
  });
  r.openapi({ ...createDatasetRoute, middleware: [write] as const }, async (c) => {
    const site = await changeableSite(c, c.req.valid('param').siteId);
    return c.json(answer(await createDatasetFromInline(deps, site, c.req.valid('json'))), 201);
  });
  r.openapi({ ...datasetUploadUrlRoute, middleware: [write] as const }, async (c) => {
    const site = await changeableSite(c, c.req.valid('param').siteId);
    return c.json({ ok: true as const, ...(await createUpload(deps, site, c.req.valid('json'))) }, 200);
  });
  r.openapi({ ...completeDatasetUploadRoute, middleware: [write] as const }, async (c) => {
    const site = await changeableSite(c, c.req.valid('param').siteId);
    const input = c.req.valid('json');
    assertUploadToken(deps, input.uploadToken, site.id, input.key);
    const upload = await checkCompletion(deps, site.id, input);
    const { size } = await completeUpload(deps, upload, input.parts);
    return c.json({ ok: true as const, success: true, key: upload.key, size }, 200);
  });
  r.openapi({ ...convertDatasetUploadRoute, middleware: [write] as const }, async (c) => {
    const site = await changeableSite(c, c.req.valid('param').siteId);
    return c.json(answer(await createDatasetFromUpload(deps, site, c.req.valid('json'))), 201);
  });
  return r;
}
