ALTER TABLE "sites" ADD COLUMN "file_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "sites_owner_account_files_idx" ON "sites" USING btree ("owner_account_id","file_count" DESC NULLS LAST);--> statement-breakpoint
-- Each site's number of files on its own row (service/db/schema/sites.ts), kept by the same
-- statement trigger as the sharded counts: an owner's fullest site is then the first entry of
-- sites_owner_account_files_idx. A site's file writes already update its row (contentVersion) in
-- their transaction, so this adds no new lock to wait for.
CREATE OR REPLACE FUNCTION svc_count_site_files() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE ids text[]; files bigint[]; bytes bigint[];
BEGIN
  IF TG_OP = 'INSERT' THEN
    SELECT array_agg(site_id), array_agg(f), array_agg(b) INTO ids, files, bytes
    FROM (SELECT site_id, count(*) AS f, sum(size) AS b FROM new_files GROUP BY site_id) x;
  ELSIF TG_OP = 'DELETE' THEN
    SELECT array_agg(site_id), array_agg(f), array_agg(b) INTO ids, files, bytes
    FROM (SELECT site_id, -count(*) AS f, -sum(size) AS b FROM old_files GROUP BY site_id) x;
  ELSE
    SELECT array_agg(site_id), array_agg(f), array_agg(b) INTO ids, files, bytes
    FROM (
      SELECT site_id, sum(f) AS f, sum(b) AS b FROM (
        SELECT site_id, 1 AS f, size AS b FROM new_files UNION ALL SELECT site_id, -1, -size FROM old_files
      ) y GROUP BY site_id
    ) x;
  END IF;
  INSERT INTO usage_counters (subject, metric, shard, value)
  SELECT subj.subject, m.metric, (pg_backend_pid() % 64)::smallint, sum(m.n)
  FROM unnest(ids, files, bytes) AS c(site_id, files, bytes)
  JOIN sites s ON s.id = c.site_id
  CROSS JOIN LATERAL unnest(ARRAY['site:' || s.id, svc_owner_key(s.owner_account_id, s.owner_wallet)]) AS subj(subject)
  CROSS JOIN LATERAL (VALUES ('files', c.files), ('bytes', c.bytes)) AS m(metric, n)
  WHERE subj.subject IS NOT NULL
  GROUP BY subj.subject, m.metric HAVING sum(m.n) <> 0 ORDER BY 1, 2
  ON CONFLICT (subject, metric, shard) DO UPDATE SET value = usage_counters.value + excluded.value;
  -- In id order, as every writer locks site rows.
  UPDATE sites SET file_count = sites.file_count + c.n
  FROM (SELECT u.sid, u.n FROM unnest(ids, files) AS u(sid, n) WHERE u.n <> 0 ORDER BY u.sid) c
  WHERE sites.id = c.sid;
  RETURN NULL;
END
$$;--> statement-breakpoint
-- Rewrites every count from the data, the sites rows' file counts too.
CREATE OR REPLACE FUNCTION svc_recount() RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('svc_recount'));
  DELETE FROM usage_counters;
  INSERT INTO usage_counters (subject, metric, shard, value)
  SELECT c.subject, c.metric, (pg_backend_pid() % 64)::smallint, c.value FROM svc_counts_from_data() c
  ON CONFLICT (subject, metric, shard) DO UPDATE SET value = usage_counters.value + excluded.value;
  GET DIAGNOSTICS n = ROW_COUNT;
  UPDATE sites SET file_count = a.n
  FROM (SELECT s.id, coalesce(f.n, 0) AS n FROM sites s LEFT JOIN (SELECT site_id, count(*) AS n FROM site_files GROUP BY site_id) f ON f.site_id = s.id) a
  WHERE sites.id = a.id AND sites.file_count <> a.n;
  RETURN n;
END
$$;--> statement-breakpoint
-- The sites that already have files.
UPDATE sites SET file_count = f.n FROM (SELECT site_id, count(*) AS n FROM site_files GROUP BY site_id) f WHERE sites.id = f.site_id;
