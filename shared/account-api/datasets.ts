import { z } from 'zod';
import { completeDataFileMultipartUpload, convertDataFileToApi, createDataFileUploadUrl } from '../agent-api/actions/datasets.js';

/** Data-file datasets: the listing entry of `GET /api/v1/sites/:siteId/datasets` (docs/datasets.md). */
export const DatasetFieldSchema = z
  .object({
    name: z.string().describe('Field name in records and Table API query parameters'),
    label: z.string().describe('The column name as written in the file'),
    type: z.enum(['string', 'number', 'integer', 'boolean', 'date', 'datetime', 'json']),
  })
  .meta({ id: 'DatasetField' });

export const DatasetSchema = z
  .object({
    id: z.string().describe('Dataset id (the `asset.id` of convert_data_file_to_api); stable across replaceExisting'),
    slug: z.string().describe('Table API name: {site_host}/api/data/<site_slug>/<slug>'),
    name: z.string(),
    format: z.enum(['csv', 'xlsx', 'json', 'geojson', 'shapefile', 'parquet', 'geoparquet']).describe('Kind of the source file'),
    fileName: z.string().describe('Name of the source file as given'),
    tableId: z.string().describe('The read-only Table (kind `dataset`) that serves the records; changes on replace'),
    url: z.string().describe('{table_base_url} of the dataset (GET, GET /schema, GET /<record_id>)'),
    pathUrl: z.string().describe('The same Table API on the service host'),
    recordCount: z.number().int(),
    fields: z.array(DatasetFieldSchema).describe('Inferred schema'),
    sourceBytes: z.number().int().describe('Size of the uploaded file'),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime().describe('Last conversion (replaceExisting updates it)'),
  })
  .meta({ id: 'Dataset' });

export const DatasetListResponseSchema = z.object({ ok: z.literal(true), datasets: z.array(DatasetSchema) }).meta({ id: 'DatasetList' });

/** `POST /api/v1/sites/:siteId/datasets`: a data file given inline, converted into a dataset (svc's addition to the spec). */
export const CreateDatasetBodySchema = z
  .object({
    fileName: z.string().min(1).max(255).describe('With its extension, which says the kind: data.csv, places.geojson, sales.xlsx…'),
    content: z.string().min(1).describe('The file: UTF-8 text (CSV, JSON, GeoJSON), or base64 when encoding is "base64" (XLSX, Parquet, Shapefile ZIP)'),
    encoding: z.enum(['utf8', 'base64']).optional().describe('How content is written (default utf8)'),
    name: z.string().min(1).max(200).optional().describe('Display name (default: the file name without extension)'),
    slug: z.string().min(1).max(63).optional().describe('Table API name (default: from the name; a free one when taken)'),
    replaceExisting: z.boolean().optional().describe('Replace the dataset with this slug atomically (readers see old or new, never a mix)'),
    sheet: z.string().min(1).max(200).optional().describe('XLSX: the sheet to read (default: the first)'),
  })
  .meta({ id: 'CreateDatasetRequest' });
export type CreateDatasetBody = z.infer<typeof CreateDatasetBodySchema>;

export const CreateDatasetResponseSchema = z
  .object({
    ok: z.literal(true),
    dataset: DatasetSchema,
    replaced: z.boolean().describe('True when an existing dataset was replaced'),
    slugTaken: z.string().optional().describe('The slug the name gave, taken by another dataset: this one got `dataset.slug` instead'),
  })
  .meta({ id: 'CreateDatasetResponse' });

/*
 * A file too large for one JSON body goes the Agent API's way, free for the account: an upload URL
 * (single PUT or multipart), the multipart completion, then the conversion of the uploaded key. The
 * bodies and answers are the Agent API actions' own (one schema each), under the account's routes.
 */
export const DatasetUploadUrlBodySchema = createDataFileUploadUrl.input.meta({ id: 'DatasetUploadUrlRequest' });
export const DatasetUploadUrlResponseSchema = createDataFileUploadUrl.output.meta({ id: 'DatasetUploadUrlResponse' });
export const CompleteDatasetUploadBodySchema = completeDataFileMultipartUpload.input.meta({ id: 'CompleteDatasetUploadRequest' });
export const CompleteDatasetUploadResponseSchema = completeDataFileMultipartUpload.output.meta({ id: 'CompleteDatasetUploadResponse' });
export const ConvertDatasetUploadBodySchema = convertDataFileToApi.input.meta({ id: 'ConvertDatasetUploadRequest' });
export type ConvertDatasetUploadBody = z.infer<typeof ConvertDatasetUploadBodySchema>;
