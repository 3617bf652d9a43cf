import { sql } from 'drizzle-orm';
import { bigint, boolean, index, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import type { TableMethod, TableSchema } from '../../../shared/tables/schema.js';
import { sites } from './sites.js';

/**
 * A Table (kind 'table') or a dataset (kind 'dataset', read-only, made by the datasets importer).
 * Deleting the site deletes its tables and, through table_records, their records (column storage
 * tables and record id sequences are dropped by the code that deletes: see db/table-storage.ts).
 */
export const tables = pgTable(
  'tables',
  {
    id: text('id').primaryKey(),
    siteId: text('site_id')
      .notNull()
      .references(() => sites.id, { onDelete: 'cascade' }),
    slug: text('slug').notNull(),
    name: text('name').notNull(),
    kind: text('kind', { enum: ['table', 'dataset'] })
      .notNull()
      .default('table'),
    /**
     * Where the records live: `records` = rows of the shared `table_records` (JSONB), every Table;
     * `columns` = a table of its own, `svc_datasets."<id>"`, with one typed column per field,
     * loaded with COPY (datasets converted since migration 0001; service/db/column-storage.ts).
     */
    storage: text('storage', { enum: ['records', 'columns'] })
      .notNull()
      .default('records'),
    schema: jsonb('schema').$type<TableSchema>().notNull(),
    requireReadKey: boolean('require_read_key').notNull().default(false),
    /** SHA-256 of the write key; the key itself is shown once at creation. */
    writeKeyHash: text('write_key_hash').notNull(),
    methods: text('methods').array().$type<TableMethod[]>().notNull(),
    publicInsert: boolean('public_insert').notNull().default(false),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('tables_site_slug_idx').on(t.siteId, t.slug)],
);

/**
 * Records of every table in one relation: `fields` is JSONB, validated and normalised against the
 * table schema on write (dates as ISO strings, numbers as JSON numbers), so typed expressions over it
 * are safe. `id` numbers a Table's records from 1 in insertion order, from the Table's own sequence
 * `svc_record_ids."<table id>"` (service/db/record-ids.ts; migration 0006): it orders them and is
 * the keyset tie-breaker, and says nothing about other Tables (one identity shared by every tenant's
 * Tables did: the ids of a public Table told how many records all of them had written).
 * Indexes: the primary key (table_id, id) for the default order, cursor paging and one record; GIN
 * jsonb_path_ops for equality filters (`fields @> {...}`).
 */
export const tableRecords = pgTable(
  'table_records',
  {
    id: bigint('id', { mode: 'number' }).notNull(),
    tableId: text('table_id')
      .notNull()
      .references(() => tables.id, { onDelete: 'cascade' }),
    fields: jsonb('fields').$type<Record<string, unknown>>().notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ name: 'table_records_pkey', columns: [t.tableId, t.id] }),
    index('table_records_fields_gin_idx').using('gin', sql`${t.fields} jsonb_path_ops`),
  ],
);

/** One row of `tables`, as read. */
export type TableRow = typeof tables.$inferSelect;
