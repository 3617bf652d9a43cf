ALTER TABLE "sites" ADD COLUMN "file_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "sites_owner_account_files_idx" ON "sites" USING btree ("owner_account_id","file_count" DESC NULLS LAST);--> statement-breakpoint
-- Each site's number of files on its own row (service/db/schema/sites.ts): an owner's fullest site is
-- then the first entry of sites_owner_account_files_idx. Kept by a statement trigger of its own beside
-- 0011's counts, in the change's transaction. A site's file writes already update its row
-- (contentVersion) in their transaction, so this adds no new lock to wait for.
CREATE FUNCTION svc_count_site_file_rows() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE ids text[]; deltas bigint[];
BEGIN
  -- A transition table exists only for the operations that have it: one branch each.
  IF TG_OP = 'INSERT' THEN
    SELECT array_agg(site_id ORDER BY site_id), array_agg(n ORDER BY site_id) INTO ids, deltas
    FROM (SELECT site_id, count(*) AS n FROM new_files GROUP BY site_id) x;
  ELSIF TG_OP = 'DELETE' THEN
    SELECT array_agg(site_id ORDER BY site_id), array_agg(n ORDER BY site_id) INTO ids, deltas
    FROM (SELECT site_id, -count(*) AS n FROM old_files GROUP BY site_id) x;
  ELSE
    SELECT array_agg(site_id ORDER BY site_id), array_agg(n ORDER BY site_id) INTO ids, deltas
    FROM (
      SELECT site_id, sum(n) AS n FROM (SELECT site_id, 1 AS n FROM new_files UNION ALL SELECT site_id, -1 FROM old_files) y
      GROUP BY site_id HAVING sum(n) <> 0
    ) x;
  END IF;
  -- In id order, as every writer locks site rows.
  UPDATE sites SET file_count = sites.file_count + c.n
  FROM (SELECT u.sid, u.n FROM unnest(ids, deltas) AS u(sid, n) ORDER BY u.sid) c
  WHERE sites.id = c.sid;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER svc_count_site_file_rows_inserted AFTER INSERT ON site_files REFERENCING NEW TABLE AS new_files
  FOR EACH STATEMENT EXECUTE FUNCTION svc_count_site_file_rows();--> statement-breakpoint
CREATE TRIGGER svc_count_site_file_rows_updated AFTER UPDATE ON site_files REFERENCING OLD TABLE AS old_files NEW TABLE AS new_files
  FOR EACH STATEMENT EXECUTE FUNCTION svc_count_site_file_rows();--> statement-breakpoint
CREATE TRIGGER svc_count_site_file_rows_deleted AFTER DELETE ON site_files REFERENCING OLD TABLE AS old_files
  FOR EACH STATEMENT EXECUTE FUNCTION svc_count_site_file_rows();--> statement-breakpoint
-- Every site's file count as the data says it is: what the check (service/db/counters.ts) compares
-- the rows with and the repair below writes.
CREATE FUNCTION svc_site_file_counts_from_data() RETURNS TABLE (site_id text, n bigint)
LANGUAGE sql STABLE AS $$
  SELECT s.id, count(f.site_id) FROM sites s LEFT JOIN site_files f ON f.site_id = s.id GROUP BY s.id
$$;--> statement-breakpoint
-- Puts every wrong sites.file_count right (`svc-agent-host recount`, with svc_recount); how many it changed.
CREATE FUNCTION svc_recount_site_file_counts() RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  UPDATE sites SET file_count = a.n FROM svc_site_file_counts_from_data() a WHERE sites.id = a.site_id AND sites.file_count <> a.n;
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
END
$$;--> statement-breakpoint
-- The sites that already have files.
SELECT svc_recount_site_file_counts();
