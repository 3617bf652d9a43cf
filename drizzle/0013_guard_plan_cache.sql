-- The row check every Table API read carries (svc_table_rows_current, migration 0003) runs its
-- query under the read pool's session setting plan_cache_mode = force_custom_plan (cli/runtime.ts:
-- custom plans for the reads' JSONB filters). Inside a PL/pgSQL function that setting re-plans the
-- check's join on every call: ~0.1 ms of the database's CPU per read, more than the read itself for
-- one record (docs/performance.md, "The row check's plan"). The check's plan does not depend on its
-- values (two primary-key lookups), so the function keeps its cached plan whatever the session says.
ALTER FUNCTION svc_table_rows_current(text, text, text) SET plan_cache_mode = auto;
