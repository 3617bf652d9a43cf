import { bigint, index, integer, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { sites } from './sites.js';
import { tables } from './tables.js';

/**
 * A data-file dataset: the metadata of a converted file. Its records live in the Table of kind
 * 'dataset' it points at (served by the Table API, read-only). `replaceExisting` points the same
 * dataset at a freshly loaded table in one transaction, so the id stays stable. Deleting the site
 * deletes the dataset (cascade), its table and records (cascade from tables).
 */
export const datasets = pgTable(
  'datasets',
  {
    id: text('id').primaryKey(),
    siteId: text('site_id')
      .notNull()
      .references(() => sites.id, { onDelete: 'cascade' }),
    tableId: text('table_id')
      .notNull()
      .references(() => tables.id, { onDelete: 'cascade' }),
    slug: text('slug').notNull(),
    name: text('name').notNull(),
    /** csv | xlsx | json | geojson | shapefile | parquet | geoparquet */
    format: text('format').notNull(),
    fileName: text('file_name').notNull(),
    sourceKey: text('source_key').notNull(),
    sourceBytes: bigint('source_bytes', { mode: 'number' }).notNull(),
    recordCount: integer('record_count').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('datasets_site_slug_idx').on(t.siteId, t.slug), index('datasets_table_idx').on(t.tableId)],
);

/**
 * Upload slots handed out by create_data_file_upload_url: the key the file goes to, what was
 * declared, and (multipart) the store's upload id. Convert and complete accept only keys of a slot
 * of the same site, so a caller can never point the service at another site's blob.
 */
export const datasetUploads = pgTable(
  'dataset_uploads',
  {
    id: text('id').primaryKey(),
    siteId: text('site_id')
      .notNull()
      .references(() => sites.id, { onDelete: 'cascade' }),
    key: text('key').notNull(),
    fileName: text('file_name').notNull(),
    format: text('format').notNull(),
    declaredBytes: bigint('declared_bytes', { mode: 'number' }).notNull(),
    strategy: text('strategy', { enum: ['single', 'multipart'] }).notNull(),
    multipartUploadId: text('multipart_upload_id'),
    completedAt: timestamp('completed_at', { withTimezone: true }),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('dataset_uploads_key_idx').on(t.key), index('dataset_uploads_site_idx').on(t.siteId)],
);
