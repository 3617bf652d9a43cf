CREATE TABLE "usage_counters" (
	"subject" text NOT NULL,
	"metric" text NOT NULL,
	"shard" smallint NOT NULL,
	"value" bigint NOT NULL,
	CONSTRAINT "usage_counters_pkey" PRIMARY KEY("subject","metric","shard")
);
--> statement-breakpoint
DROP INDEX "functions_account_idx";--> statement-breakpoint
DROP INDEX "sites_owner_account_idx";--> statement-breakpoint
DROP INDEX "sites_owner_wallet_idx";--> statement-breakpoint
CREATE INDEX "functions_account_idx" ON "functions" USING btree ("account_id","created_at","id");--> statement-breakpoint
CREATE INDEX "sites_owner_account_idx" ON "sites" USING btree ("owner_account_id","created_at" DESC NULLS FIRST,"id");--> statement-breakpoint
CREATE INDEX "sites_owner_wallet_idx" ON "sites" USING btree ("owner_wallet","created_at" DESC NULLS FIRST,"id");--> statement-breakpoint
-- Counts of what each Table, site and owner holds, kept by triggers in the transaction of the change
-- (service/db/schema/counters.ts), so the Account API, the dashboard and the tools read a count in
-- the same time at 10 records as at 10 million. A count is the sum of its shards; a session adds to
-- the shard of its own backend, so concurrent writers into one Table update different rows and do
-- not queue behind one row lock held to their commits. Owner keys are those of ownerKey():
-- 'acct:<id>' or 'wallet:<address>'.
CREATE FUNCTION svc_owner_key(p_account text, p_wallet text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT CASE WHEN p_account IS NOT NULL THEN 'acct:' || p_account ELSE 'wallet:' || p_wallet END $$;--> statement-breakpoint
-- Adds `p_delta` to one count, in this session's shard. Other resources' triggers call it too.
-- A site with no owner (neither account nor wallet: the schema allows it) has no owner count to add to.
CREATE FUNCTION svc_count_add(p_subject text, p_metric text, p_delta bigint) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO usage_counters (subject, metric, shard, value)
  SELECT p_subject, p_metric, (pg_backend_pid() % 64)::smallint, p_delta WHERE p_subject IS NOT NULL
  ON CONFLICT (subject, metric, shard) DO UPDATE SET value = usage_counters.value + excluded.value
$$;--> statement-breakpoint
-- The counts as the data says they are (count(*) and sum(size) over everything): what the
-- backfill below and `svc-agent-host recount` write, and what the tests and `npm run chaos`
-- compare the kept counts with. Zero counts are left out.
CREATE FUNCTION svc_counts_from_data() RETURNS TABLE (subject text, metric text, value bigint)
LANGUAGE sql STABLE AS $$
  WITH per_table AS (SELECT table_id, count(*) AS n FROM table_records GROUP BY table_id),
  table_owner AS (
    SELECT t.id AS table_id, s.id AS site_id, svc_owner_key(s.owner_account_id, s.owner_wallet) AS owner
    FROM tables t JOIN sites s ON s.id = t.site_id
  ),
  per_site_files AS (SELECT site_id, count(*) AS files, coalesce(sum(size), 0)::bigint AS bytes FROM site_files GROUP BY site_id),
  site_owner AS (SELECT id AS site_id, svc_owner_key(owner_account_id, owner_wallet) AS owner FROM sites),
  counts AS (
    SELECT 'table:' || p.table_id, 'records', p.n FROM per_table p
    UNION ALL SELECT 'site:' || o.site_id, 'records', p.n FROM per_table p JOIN table_owner o USING (table_id)
    UNION ALL SELECT o.owner, 'records', p.n FROM per_table p JOIN table_owner o USING (table_id)
    UNION ALL SELECT 'site:' || o.site_id, 'tables', 1 FROM table_owner o
    UNION ALL SELECT o.owner, 'tables', 1 FROM table_owner o
    UNION ALL SELECT o.owner, 'sites', 1 FROM site_owner o
    UNION ALL SELECT 'site:' || f.site_id, 'files', f.files FROM per_site_files f
    UNION ALL SELECT o.owner, 'files', f.files FROM per_site_files f JOIN site_owner o USING (site_id)
    UNION ALL SELECT 'site:' || f.site_id, 'bytes', f.bytes FROM per_site_files f
    UNION ALL SELECT o.owner, 'bytes', f.bytes FROM per_site_files f JOIN site_owner o USING (site_id)
    UNION ALL SELECT 'acct:' || fn.account_id, 'functions', count(*) FROM functions fn GROUP BY fn.account_id
  )
  SELECT c.subject, c.metric, sum(c.n)::bigint FROM counts AS c(subject, metric, n) WHERE c.subject IS NOT NULL GROUP BY 1, 2 HAVING sum(c.n) <> 0
$$;--> statement-breakpoint
-- Rewrites every count from the data. Safe while writers run (READ COMMITTED): a writer whose
-- change this statement's snapshot does not see adds its delta to a row written after the delete.
CREATE FUNCTION svc_recount() RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('svc_recount'));
  DELETE FROM usage_counters;
  INSERT INTO usage_counters (subject, metric, shard, value)
  SELECT c.subject, c.metric, (pg_backend_pid() % 64)::smallint, c.value FROM svc_counts_from_data() c
  ON CONFLICT (subject, metric, shard) DO UPDATE SET value = usage_counters.value + excluded.value;
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
END
$$;--> statement-breakpoint
-- Records (statement triggers: one upsert per Table, site and owner a statement touched, whatever
-- its number of rows). A Table or site being deleted is no longer joined here: its own BEFORE DELETE
-- trigger has taken its records off its site and owner already.
CREATE FUNCTION svc_count_records() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO usage_counters (subject, metric, shard, value)
  SELECT d.subject, 'records', (pg_backend_pid() % 64)::smallint, sum(d.n)
  FROM (
    SELECT unnest(ARRAY['table:' || t.id, 'site:' || s.id, svc_owner_key(s.owner_account_id, s.owner_wallet)]) AS subject, c.n
    FROM (
      SELECT table_id, count(*) * (CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END) AS n
      FROM changed_records GROUP BY table_id
    ) c
    JOIN tables t ON t.id = c.table_id JOIN sites s ON s.id = t.site_id
  ) d
  WHERE d.subject IS NOT NULL
  GROUP BY d.subject ORDER BY d.subject
  ON CONFLICT (subject, metric, shard) DO UPDATE SET value = usage_counters.value + excluded.value;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER svc_count_records_inserted AFTER INSERT ON table_records REFERENCING NEW TABLE AS changed_records
  FOR EACH STATEMENT EXECUTE FUNCTION svc_count_records();--> statement-breakpoint
CREATE TRIGGER svc_count_records_deleted AFTER DELETE ON table_records REFERENCING OLD TABLE AS changed_records
  FOR EACH STATEMENT EXECUTE FUNCTION svc_count_records();--> statement-breakpoint
-- Site files: their number and bytes, per site and per owner.
CREATE FUNCTION svc_count_site_files() RETURNS trigger
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
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER svc_count_site_files_inserted AFTER INSERT ON site_files REFERENCING NEW TABLE AS new_files
  FOR EACH STATEMENT EXECUTE FUNCTION svc_count_site_files();--> statement-breakpoint
CREATE TRIGGER svc_count_site_files_updated AFTER UPDATE ON site_files REFERENCING OLD TABLE AS old_files NEW TABLE AS new_files
  FOR EACH STATEMENT EXECUTE FUNCTION svc_count_site_files();--> statement-breakpoint
CREATE TRIGGER svc_count_site_files_deleted AFTER DELETE ON site_files REFERENCING OLD TABLE AS old_files
  FOR EACH STATEMENT EXECUTE FUNCTION svc_count_site_files();--> statement-breakpoint
-- A new Table (or dataset) counts for its site and owner.
CREATE FUNCTION svc_count_table_created() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE owner text;
BEGIN
  SELECT svc_owner_key(owner_account_id, owner_wallet) INTO owner FROM sites WHERE id = NEW.site_id;
  PERFORM svc_count_add('site:' || NEW.site_id, 'tables', 1);
  PERFORM svc_count_add(owner, 'tables', 1);
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER svc_count_table_created AFTER INSERT ON tables FOR EACH ROW EXECUTE FUNCTION svc_count_table_created();--> statement-breakpoint
-- A Table being deleted takes its records and itself off its site and owner before the cascade
-- deletes its records (whose own trigger then finds no Table to count them for). The row is locked
-- first so that an insert still in flight commits (and counts) before its count is read, and none
-- starts after.
CREATE FUNCTION svc_count_table_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE recs bigint; owner text;
BEGIN
  PERFORM 1 FROM tables WHERE id = OLD.id FOR UPDATE;
  WITH gone AS (DELETE FROM usage_counters WHERE subject = 'table:' || OLD.id RETURNING metric, value)
  SELECT coalesce(sum(value) FILTER (WHERE metric = 'records'), 0) INTO recs FROM gone;
  SELECT svc_owner_key(owner_account_id, owner_wallet) INTO owner FROM sites WHERE id = OLD.site_id;
  IF FOUND THEN
    PERFORM svc_count_add('site:' || OLD.site_id, 'tables', -1);
    PERFORM svc_count_add(owner, 'tables', -1);
    IF recs <> 0 THEN
      PERFORM svc_count_add('site:' || OLD.site_id, 'records', -recs);
      PERFORM svc_count_add(owner, 'records', -recs);
    END IF;
  END IF;
  RETURN OLD;
END
$$;--> statement-breakpoint
CREATE TRIGGER svc_count_table_deleted BEFORE DELETE ON tables FOR EACH ROW EXECUTE FUNCTION svc_count_table_deleted();--> statement-breakpoint
CREATE FUNCTION svc_count_site_created() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM svc_count_add(svc_owner_key(NEW.owner_account_id, NEW.owner_wallet), 'sites', 1);
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER svc_count_site_created AFTER INSERT ON sites FOR EACH ROW EXECUTE FUNCTION svc_count_site_created();--> statement-breakpoint
-- A site being deleted takes everything it counts off its owner (an account being deleted has its
-- owner counts dropped by svc_count_account_deleted instead). Its row and its Tables' rows are
-- locked first: writes in flight into its files or Tables commit and count before, none after.
CREATE FUNCTION svc_count_site_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE owner text := svc_owner_key(OLD.owner_account_id, OLD.owner_wallet); m record;
BEGIN
  PERFORM 1 FROM sites WHERE id = OLD.id FOR UPDATE;
  PERFORM 1 FROM tables WHERE site_id = OLD.id FOR UPDATE;
  FOR m IN
    WITH gone AS (DELETE FROM usage_counters WHERE subject = 'site:' || OLD.id RETURNING metric, value)
    SELECT metric, sum(value)::bigint AS n FROM gone GROUP BY metric
  LOOP
    IF OLD.owner_account_id IS NULL OR EXISTS (SELECT 1 FROM accounts WHERE id = OLD.owner_account_id) THEN
      PERFORM svc_count_add(owner, m.metric, -m.n);
    END IF;
  END LOOP;
  IF OLD.owner_account_id IS NULL OR EXISTS (SELECT 1 FROM accounts WHERE id = OLD.owner_account_id) THEN
    PERFORM svc_count_add(owner, 'sites', -1);
  END IF;
  RETURN OLD;
END
$$;--> statement-breakpoint
CREATE TRIGGER svc_count_site_deleted BEFORE DELETE ON sites FOR EACH ROW EXECUTE FUNCTION svc_count_site_deleted();--> statement-breakpoint
-- A site that changes owner moves its counts from the old owner to the new one.
CREATE FUNCTION svc_count_site_moved() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE was text := svc_owner_key(OLD.owner_account_id, OLD.owner_wallet); now_ text := svc_owner_key(NEW.owner_account_id, NEW.owner_wallet); m record;
BEGIN
  IF was = now_ THEN RETURN NULL; END IF;
  FOR m IN SELECT metric, sum(value)::bigint AS n FROM usage_counters WHERE subject = 'site:' || NEW.id GROUP BY metric UNION ALL SELECT 'sites', 1::bigint LOOP
    PERFORM svc_count_add(was, m.metric, -m.n);
    PERFORM svc_count_add(now_, m.metric, m.n);
  END LOOP;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER svc_count_site_moved AFTER UPDATE OF owner_account_id, owner_wallet ON sites FOR EACH ROW EXECUTE FUNCTION svc_count_site_moved();--> statement-breakpoint
CREATE FUNCTION svc_count_account_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM usage_counters WHERE subject = 'acct:' || OLD.id;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER svc_count_account_deleted AFTER DELETE ON accounts FOR EACH ROW EXECUTE FUNCTION svc_count_account_deleted();--> statement-breakpoint
-- Functions, per account (an account being deleted is not counted for: its counts are dropped).
CREATE FUNCTION svc_count_functions() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM svc_count_add('acct:' || NEW.account_id, 'functions', 1);
  ELSIF EXISTS (SELECT 1 FROM accounts WHERE id = OLD.account_id) THEN
    PERFORM svc_count_add('acct:' || OLD.account_id, 'functions', -1);
  END IF;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER svc_count_functions AFTER INSERT OR DELETE ON functions FOR EACH ROW EXECUTE FUNCTION svc_count_functions();--> statement-breakpoint
-- Existing data: count it once.
SELECT svc_recount();
