import { z } from 'zod';
import type { AgentAction } from '../action.js';
import { SiteParams } from './common.js';

/**
 * Data-file datasets (docs/datasets.md). Upload: `strategy` is `single` (one presigned PUT, at most
 * the multipart threshold — 64 MiB by default) or `multipart` (PUT each part to its URL, keep the
 * ETag header each answers, then complete_data_file_multipart_upload). Then convert_data_file_to_api.
 */
const DatasetFieldOut = z.object({
  name: z.string(),
  label: z.string(),
  type: z.enum(['string', 'number', 'integer', 'boolean', 'date', 'datetime', 'json']),
});

export const DatasetAssetSchema = z
  .object({
    id: z.string().describe('Dataset id; stays the same when the dataset is replaced'),
    slug: z.string().describe('Table API name: {site_host}/api/data/<app_name>/<slug>'),
    name: z.string(),
    format: z.string().describe('csv, xlsx, json, geojson, shapefile, parquet or geoparquet'),
    tableId: z.string().describe('The read-only Table serving the records'),
    url: z.string().describe('{table_base_url}: GET with the Table API query parameters (filters, sort, bbox, aggregate…)'),
    pathUrl: z.string(),
    recordCount: z.number().int(),
    fields: z.array(DatasetFieldOut).describe('Inferred schema (geographic files add geometry, longitude, latitude)'),
  })
  .meta({ id: 'DatasetAsset' });

export const createDataFileUploadUrl = {
  name: 'x402.create_data_file_upload_url',
  method: 'POST',
  path: '/api/x402/apps/:siteId/data-files/upload-url',
  price: '0.001',
  description:
    'Get an upload URL (single PUT or multipart) for a data file (CSV, XLSX, JSON, GeoJSON, Shapefile ZIP, Parquet, GeoParquet) on an app owned by the paying wallet.',
  params: SiteParams,
  input: z.object({
    fileName: z.string().min(1).max(255),
    fileSize: z.number().int().min(1),
    fileType: z.string().max(200).optional(),
  }),
  output: z.object({
    ok: z.literal(true),
    strategy: z.enum(['single', 'multipart']).describe('single: PUT the whole file to upload.url; multipart: PUT each part to parts[].url, then complete'),
    uploadToken: z.string().describe('Signed, expiring reference to this upload (key + app); may be passed to the later calls'),
    key: z.string().describe('Where the file goes; give it to complete_data_file_multipart_upload and convert_data_file_to_api'),
    kind: z.enum(['csv', 'xlsx', 'json', 'geojson', 'shapefile', 'parquet', 'geoparquet']),
    expiresAt: z.string().describe('The URLs and the token expire then'),
    upload: z
      .object({ url: z.string(), method: z.literal('PUT'), headers: z.record(z.string(), z.string()).describe('Send these headers with the PUT') })
      .optional()
      .describe('single: the presigned PUT (bound to fileSize and the Content-Type header)'),
    uploadId: z.string().optional().describe('multipart: the upload id'),
    partSize: z.number().int().optional().describe('multipart: bytes of every part but the last'),
    parts: z
      .array(z.object({ partNumber: z.number().int(), url: z.string(), size: z.number().int() }))
      .optional()
      .describe('multipart: one presigned PUT URL per part; each PUT answers an ETag header'),
  }),
  identity: true,
  readOnly: false,
  destructive: false,
  idempotent: false,
} satisfies AgentAction;

export const completeDataFileMultipartUpload = {
  name: 'x402.complete_data_file_multipart_upload',
  method: 'POST',
  path: '/api/x402/apps/:siteId/data-files/complete-upload',
  price: '0.001',
  description: 'Complete a multipart data-file upload from its parts.',
  params: SiteParams,
  input: z.object({
    uploadId: z.string().min(1),
    key: z.string().min(1),
    parts: z
      .array(z.object({ ETag: z.string().min(1), PartNumber: z.number().int().min(1) }))
      .min(1)
      .max(10_000),
    uploadToken: z.string().optional().describe('The uploadToken of create_data_file_upload_url; checked against key when given'),
  }),
  output: z.object({ ok: z.literal(true), success: z.boolean(), key: z.string(), size: z.number().int().describe('Bytes of the assembled file') }),
  identity: true,
  readOnly: false,
  destructive: false,
  idempotent: true,
} satisfies AgentAction;

export const convertDataFileToApi = {
  name: 'x402.convert_data_file_to_api',
  method: 'POST',
  path: '/api/x402/apps/:siteId/data-files/convert',
  price: '0.01',
  description: 'Convert an uploaded data file into a dataset with a data API on an app owned by the paying wallet.',
  params: SiteParams,
  input: z.object({
    key: z.string().min(1),
    fileName: z.string().min(1).max(255),
    name: z.string().min(1).max(200).optional(),
    slug: z.string().min(1).max(63).optional(),
    replaceExisting: z.boolean().optional().describe('Replace the dataset with this slug atomically (readers see old or new, never a mix)'),
    sheet: z.string().min(1).max(200).optional().describe('XLSX: the sheet to read (default: the first)'),
    uploadToken: z.string().optional().describe('The uploadToken of create_data_file_upload_url; checked against key when given'),
  }),
  output: z.object({
    ok: z.literal(true),
    asset: DatasetAssetSchema,
    replaced: z.boolean().describe('True when an existing dataset was replaced'),
    slugTaken: z
      .string()
      .optional()
      .describe('The slug derived from the name, when another Table held it: this dataset got a free one instead (replaceExisting replaces that one)'),
  }),
  identity: true,
  readOnly: false,
  destructive: true, // replaceExisting drops the old records
  idempotent: false,
} satisfies AgentAction;

export const DATASET_ACTIONS = [createDataFileUploadUrl, completeDataFileMultipartUpload, convertDataFileToApi] as const;
