ALTER TABLE "tables" ADD COLUMN "storage" text DEFAULT 'records' NOT NULL;--> statement-breakpoint
-- Datasets' column storage: one table per dataset, named after its tables.id (service/tables/column-storage.ts).
CREATE SCHEMA IF NOT EXISTS "svc_datasets";
