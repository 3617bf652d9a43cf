-- Record ids are numbered per Table (1, 2, 3… in insertion order) instead of by one identity shared
-- by every tenant's Tables, whose values told anyone reading a public Table how many records all
-- Tables had written. table_record_ids holds each Table's last id; inserts take theirs from it in
-- the same statement (service/tables/tables.ts insertRecords). Records that exist keep their ids
-- (unique within their Table already); each Table goes on from its largest.
CREATE TABLE "table_record_ids" (
	"table_id" text PRIMARY KEY NOT NULL,
	"last_id" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "table_record_ids" ADD CONSTRAINT "table_record_ids_table_id_tables_id_fk" FOREIGN KEY ("table_id") REFERENCES "public"."tables"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
INSERT INTO "table_record_ids" ("table_id", "last_id") SELECT "table_id", max("id") FROM "table_records" GROUP BY "table_id";--> statement-breakpoint
ALTER TABLE "table_records" ALTER COLUMN "id" DROP IDENTITY;--> statement-breakpoint
ALTER TABLE "table_records" DROP CONSTRAINT "table_records_pkey";--> statement-breakpoint
ALTER TABLE "table_records" ADD CONSTRAINT "table_records_pkey" PRIMARY KEY("table_id","id");--> statement-breakpoint
DROP INDEX "table_records_table_id_idx";
