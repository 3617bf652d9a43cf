import { sql, type SQL } from 'drizzle-orm';
import { type DbOrTx, rowsOf } from '../db/client.js';
import { rateLimitWindows } from '../db/schema/index.js';
import { AppError } from '../kernel/app-error.js';

/** The fixed window (shared by all nodes) a request made at `at` is counted in. */
export interface RateLimitWindow {
  limit: number;
  ms: number;
  start: number;
  at: number;
}

/** The window of a request at `now` under `limit` requests per `windowMs`; null when `limit` is 0 (no limit). */
export function rateLimitWindow(limit: number, windowMs: number, now: Date): RateLimitWindow | null {
  if (limit <= 0) return null;
  const at = now.getTime();
  return { limit, ms: windowMs, start: at - (at % windowMs), at };
}

/**
 * The statement (an upsert, `returning count`) that counts one request against each key `keys`
 * selects (an SQL `select <key expression> from …`), so a caller can count in the same statement
 * that finds whom to count: a sign-in is one statement (service/auth/credentials.ts).
 */
export function countRequests(window: RateLimitWindow, keys: SQL): SQL {
  return sql`insert into rate_limit_windows (key, window_start, count) select k.key, ${window.start}::bigint, 1 from (${keys}) as k(key)
    on conflict (key, window_start) do update set count = rate_limit_windows.count + 1 returning count::int as count`;
}

/**
 * After counting: a 429 with Retry-After when `count` passed the window's limit; now and then (the
 * first request of a window, 1 in 100) the windows long past are deleted.
 */
export async function enforceRateLimit(db: DbOrTx, window: RateLimitWindow, count: number): Promise<void> {
  if (count > window.limit) {
    const retryAfter = Math.max(1, Math.ceil((window.start + window.ms - window.at) / 1000));
    throw new AppError(
      'rate_limited',
      `rate limit of ${window.limit} requests per ${window.ms / 1000} s reached; retry in ${retryAfter} s`,
      { limit: window.limit, windowSeconds: window.ms / 1000, retryAfterSeconds: retryAfter },
      { 'Retry-After': String(retryAfter) },
    );
  }
  if (count === 1 && Math.random() < 0.01) await sweepPastWindows(db, window.at);
}

/**
 * How long a counted window is kept: longer than the longest window any limit uses (oauth-register's
 * hour), so one limit's sweep never deletes another's window that is still running. (The sweep used
 * to keep ten of the counting limit's own windows: a per-minute limit's sweep reset the hourly counts.)
 */
export const KEEP_WINDOWS_MS = 24 * 3600_000;

/** Deletes the counted windows that started more than KEEP_WINDOWS_MS before `at`. */
export async function sweepPastWindows(db: DbOrTx, at: number): Promise<void> {
  await db.delete(rateLimitWindows).where(sql`${rateLimitWindows.windowStart} < ${at - KEEP_WINDOWS_MS}`);
}

/**
 * Counts one request against `key` in a fixed window shared by all nodes (one upsert). Throws a 429
 * AppError with Retry-After when the window is full. `limit` 0 disables the check.
 */
export async function consumeRateLimit(db: DbOrTx, key: string, limit: number, windowMs: number, now: Date): Promise<void> {
  const window = rateLimitWindow(limit, windowMs, now);
  if (!window) return;
  const [row] = rowsOf<{ count: number }>(await db.execute(countRequests(window, sql`select ${key}::text`)));
  await enforceRateLimit(db, window, row!.count);
}
