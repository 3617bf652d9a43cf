import { sql } from 'drizzle-orm';
import { type Db, onlyRow } from '../db/client.js';
import { rateLimitWindows } from '../db/schema/index.js';
import { AppError } from './app-error.js';

/**
 * Counts one request against `key` in a fixed window shared by all nodes (one upsert). Throws a 429
 * AppError with Retry-After when the window is full. `limit` 0 disables the check.
 */
export async function consumeRateLimit(db: Db, key: string, limit: number, windowMs: number, now: Date): Promise<void> {
  if (limit <= 0) return;
  const t = now.getTime();
  const windowStart = t - (t % windowMs);
  const row = onlyRow(
    await db
      .insert(rateLimitWindows)
      .values({ key, windowStart, count: 1 })
      .onConflictDoUpdate({
        target: [rateLimitWindows.key, rateLimitWindows.windowStart],
        set: { count: sql`${rateLimitWindows.count} + 1` },
      })
      .returning({ count: rateLimitWindows.count }),
    'count the request',
  );
  if (row.count > limit) {
    const retryAfter = Math.max(1, Math.ceil((windowStart + windowMs - t) / 1000));
    throw new AppError(
      'rate_limited',
      `rate limit of ${limit} requests per ${windowMs / 1000} s reached; retry in ${retryAfter} s`,
      { limit, windowSeconds: windowMs / 1000, retryAfterSeconds: retryAfter },
      { 'Retry-After': String(retryAfter) },
    );
  }
  // Old windows are dead weight: trim them now and then, not on every request.
  if (row.count === 1 && Math.random() < 0.01) {
    await db.delete(rateLimitWindows).where(sql`${rateLimitWindows.windowStart} < ${windowStart - 10 * windowMs}`);
  }
}
