import { z } from 'zod';
import type { AgentAction } from '../action.js';
import { SiteParams } from './common.js';

// The datasets engineer refines strategies, the upload entry shape and the outputs.

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
    strategy: z.string().describe('How to upload'),
    uploadToken: z.string(),
  }).loose(),
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
    parts: z.array(z.object({ ETag: z.string().min(1), PartNumber: z.number().int().min(1) })).min(1),
  }),
  output: z.object({ ok: z.literal(true), success: z.boolean() }),
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
    replaceExisting: z.boolean().optional(),
  }),
  output: z.object({ ok: z.literal(true), asset: z.object({ id: z.string(), slug: z.string() }) }),
  identity: true,
  readOnly: false,
  destructive: false,
  idempotent: false,
} satisfies AgentAction;

export const DATASET_ACTIONS = [createDataFileUploadUrl, completeDataFileMultipartUpload, convertDataFileToApi] as const;
