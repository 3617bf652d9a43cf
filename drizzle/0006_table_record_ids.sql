-- Record ids are numbered per Table (1, 2, 3… in insertion order) instead of by one identity shared
-- by every tenant's Tables, whose values told anyone reading a public Table how many records all
-- Tables had written. Each Table of `records` storage has a sequence of its own,
-- svc_record_ids."<table id>", made with the Table and dropped with it (service/tables/record-ids.ts):
-- a sequence hands out values without a lock held to the end of the transaction, so concurrent inserts
-- into one Table do not wait for each other's commits (a counter row did: -30 to -45 % inserts/s at 32
-- in flight on PostgreSQL). Records that exist keep their ids (unique within their Table already);
-- each Table goes on from its largest.
CREATE SCHEMA IF NOT EXISTS "svc_record_ids";--> statement-breakpoint
DO $$
DECLARE t record;
BEGIN
  FOR t IN
    SELECT tb.id, max(r.id) AS last FROM tables tb LEFT JOIN table_records r ON r.table_id = tb.id
    WHERE tb.storage = 'records' GROUP BY tb.id
  LOOP
    EXECUTE format('CREATE SEQUENCE svc_record_ids.%I', t.id);
    IF t.last IS NOT NULL THEN
      PERFORM setval(format('svc_record_ids.%I', t.id), t.last);
    END IF;
  END LOOP;
END
$$;--> statement-breakpoint
ALTER TABLE "table_records" ALTER COLUMN "id" DROP IDENTITY;--> statement-breakpoint
ALTER TABLE "table_records" DROP CONSTRAINT "table_records_pkey";--> statement-breakpoint
ALTER TABLE "table_records" ADD CONSTRAINT "table_records_pkey" PRIMARY KEY("table_id","id");--> statement-breakpoint
DROP INDEX "table_records_table_id_idx";
