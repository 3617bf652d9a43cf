import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { type Database, rowsOf } from '../../service/db/client.js';
import { consumeRateLimit, KEEP_WINDOWS_MS, sweepPastWindows } from '../../service/http/rate-limit.js';
import { dbKinds, openTestDatabase } from '../helpers/db.js';

const HOUR = 3600_000;

describe.each(dbKinds())('the sweep of counted windows (%s)', (kind) => {
  let db: Database;
  beforeAll(async () => {
    db = await openTestDatabase(kind);
  });
  afterAll(async () => {
    await db?.close();
  });

  it("a per-minute limit's sweep leaves an hourly window that is still running: its count holds", async () => {
    const hourStart = Date.UTC(2026, 10, 28, 15);
    const key = `oauth-register:198.51.100.${kind === 'pglite' ? 1 : 2}`;
    for (let i = 0; i < 3; i++) await consumeRateLimit(db.db, key, 3, HOUR, new Date(hourStart + 60_000));
    // 40 minutes later, a per-minute limit sweeps (as 1 in 100 first requests of a window do).
    await sweepPastWindows(db.db, hourStart + 40 * 60_000);
    await expect(consumeRateLimit(db.db, key, 3, HOUR, new Date(hourStart + 41 * 60_000))).rejects.toMatchObject({ code: 'rate_limited' });
    // A day on, the hour is long past: its row is swept.
    const rows = async () => rowsOf<{ n: number }>(await db.db.execute(sql`select count(*)::int as n from rate_limit_windows where key = ${key}`))[0]!.n;
    expect(await rows()).toBe(1);
    await sweepPastWindows(db.db, hourStart + HOUR + KEEP_WINDOWS_MS);
    expect(await rows()).toBe(0);
  });
});
