import { z } from 'zod';

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
