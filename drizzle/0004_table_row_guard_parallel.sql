-- A function is PARALLEL UNSAFE unless it says otherwise, and one unsafe function anywhere in a
-- statement makes PostgreSQL plan the whole statement without parallel workers. The row guard is in
-- every Table API read, so a big scan (a range filter, a substring search, an aggregate on a large
-- dataset) ran on one core: 1.6–1.8x the same statement without it. PARALLEL RESTRICTED lets the rest
-- of the plan use workers while the guard itself still runs once, in the leader, as the statement's
-- InitPlan (it reads the tables and sites rows of the statement's snapshot).
ALTER FUNCTION svc_table_rows_current(text, text, text) PARALLEL RESTRICTED;
