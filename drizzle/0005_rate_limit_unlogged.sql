-- The rate-limit counters are a write on every signed-in request, and on a logged table each one
-- waits for its WAL record to reach the disk at commit (0.3-0.4 ms on this project's machine, and one
-- flush per request under load). They need no durability: UNLOGGED skips the WAL (the same upsert
-- takes 0.02 ms); after a crash PostgreSQL empties the table, which only restarts the current windows.
ALTER TABLE "rate_limit_windows" SET UNLOGGED;
