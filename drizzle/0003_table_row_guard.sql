-- The Table API keeps each node's recently read table and site rows in memory and checks, inside
-- every read statement, that they are still the current rows (both xmin values unchanged): a
-- cache that is correct across nodes without any invalidation message. A stale row raises SV001
-- and the read starts again from a fresh lookup (service/tables/table-rows.ts).
CREATE FUNCTION svc_table_rows_current(p_table_id text, p_table_version text, p_site_version text) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
  IF EXISTS (
    SELECT 1 FROM tables t JOIN sites s ON s.id = t.site_id
    WHERE t.id = p_table_id AND t.xmin::text = p_table_version AND s.xmin::text = p_site_version
  ) THEN
    RETURN true;
  END IF;
  RAISE EXCEPTION 'table % changed since this node read it', p_table_id USING ERRCODE = 'SV001';
END
$$;
