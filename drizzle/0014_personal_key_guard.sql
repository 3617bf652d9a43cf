-- A Table API read with a personal key (x-svc-api-key) was two statements: the key's lookup, then the
-- read. Each node now keeps the keys it looked up lately, with the row versions (xmin) of the key and
-- of its account, and the read carries this check beside the table row check (migration 0003): the
-- key and its account are still the rows the node read (not revoked, not suspended, the same scopes
-- and owner since), or the statement fails with SV002 and the node looks the key up again
-- (service/tables/read-keys.ts). Revoking a key, or suspending its account, refuses the next read on
-- every node, with no invalidation message.
CREATE FUNCTION svc_personal_key_current(p_key_id text, p_key_version text, p_account_version text) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
  IF EXISTS (
    SELECT 1 FROM personal_keys k JOIN accounts a ON a.id = k.account_id
    WHERE k.id = p_key_id AND k.xmin::text = p_key_version AND a.xmin::text = p_account_version
  ) THEN
    RETURN true;
  END IF;
  RAISE EXCEPTION 'personal key % changed since this node looked it up', p_key_id USING ERRCODE = 'SV002';
END
$$;
--> statement-breakpoint
-- As the table row check: run once, in the leader, without keeping a parallel plan from the read
-- (migration 0004), and planned once whatever the read pool's plan_cache_mode (migration 0013).
ALTER FUNCTION svc_personal_key_current(text, text, text) PARALLEL RESTRICTED;
--> statement-breakpoint
ALTER FUNCTION svc_personal_key_current(text, text, text) SET plan_cache_mode = auto;
