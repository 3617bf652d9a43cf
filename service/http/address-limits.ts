import { sql } from 'drizzle-orm';
import { type DbOrTx, rowsOf } from '../db/client.js';
import { AppError } from '../kernel/app-error.js';
import type { AddressLimits, AddressSurface } from '../kernel/config.js';

const WINDOW_MS = 60_000;
/** A node syncs early once an address has used this share of its limit since the last sync. */
const EARLY_SYNC_SHARE = 0.1;
/** Rows per upsert statement of a sync. */
const SYNC_BATCH = 500;

interface Count {
  surface: AddressSurface;
  /** Start of the fixed window (epoch ms) these counts belong to. */
  start: number;
  /** Every node's requests of this window, as the shared table said at the last sync. */
  shared: number;
  /** This node's requests since that sync. */
  pending: number;
}

/**
 * Per-address limits that cost no database write per request. Each node counts the requests of an
 * address in a fixed one-minute window in memory and refuses once what every node counted (as of
 * its last sync) plus what it counted since reaches the limit. A sync (every `syncMs`, and at once
 * when an address has used a tenth of its limit since the last one) adds each node's new counts
 * to the shared `rate_limit_windows` rows in one statement and reads the totals back, so N nodes do
 * not give an address N times its limit: at most what the nodes admit between two syncs more. One
 * node alone is exact.
 */
export class AddressLimiter {
  private readonly counts = new Map<string, Count>();
  private syncing: Promise<void> | null = null;
  private followUp: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** True from a failed sync to the next one that succeeds (the error is reported once). */
  private failing = false;
  /** When this node last deleted the shared rows of windows long past. */
  private prunedAt = 0;

  constructor(
    private readonly db: DbOrTx,
    private readonly clock: { now(): Date },
    readonly limits: AddressLimits,
    private readonly onError: (error: unknown) => void = () => {},
  ) {}

  /**
   * Counts one request of `address` on `surface`. Null when it may go on; else the seconds until the
   * window ends (the Retry-After of its 429). A refused request is not counted.
   */
  take(surface: AddressSurface, address: string): number | null {
    const limit = this.limits[surface];
    if (!limit) return null;
    const now = this.clock.now().getTime();
    const start = now - (now % WINDOW_MS);
    const key = `addr:${surface}:${address}`;
    let count = this.counts.get(key);
    if (!count || count.start !== start) {
      count = { surface, start, shared: 0, pending: 0 };
      this.counts.set(key, count);
    }
    if (count.shared + count.pending >= limit) return Math.max(1, Math.ceil((start + WINDOW_MS - now) / 1000));
    count.pending++;
    if (count.pending >= Math.max(1, Math.floor(limit * EARLY_SYNC_SHARE))) void this.sync();
    return null;
  }

  /** `take`, throwing the 429 (with Retry-After) when refused. */
  enforce(surface: AddressSurface, address: string): void {
    const retryAfter = this.take(surface, address);
    if (retryAfter !== null) throw rateLimitedError(surface, this.limits[surface], retryAfter);
  }

  /**
   * Adds this node's new counts to the shared rows and reads back every node's totals; forgets the
   * windows that ended. One sync at a time: a call while one runs gets one more after it (which
   * sends what was counted meanwhile), shared by every call made meanwhile.
   */
  sync(): Promise<void> {
    if (this.syncing) {
      this.followUp ??= this.syncing.then(() => {
        this.followUp = null;
        return this.sync();
      });
      return this.followUp;
    }
    this.syncing = this.runSync().finally(() => {
      this.syncing = null;
    });
    return this.syncing;
  }

  private async runSync(): Promise<void> {
    const now = this.clock.now().getTime();
    const current = now - (now % WINDOW_MS);
    const sent: [string, Count, number][] = [];
    for (const [key, count] of this.counts) {
      if (count.start < current - WINDOW_MS) this.counts.delete(key);
      else if (count.pending > 0) sent.push([key, count, count.pending]);
    }
    if (sent.length === 0) return;
    try {
      for (let i = 0; i < sent.length; i += SYNC_BATCH) {
        const batch = sent.slice(i, i + SYNC_BATCH);
        const values = sql.join(
          batch.map(([key, count, n]) => sql`(${key}::text, ${count.start}::bigint, ${n}::bigint)`),
          sql`, `,
        );
        const rows = rowsOf<{ key: string; window_start: string | number; count: string | number }>(
          await this.db.execute(sql`insert into rate_limit_windows (key, window_start, count) values ${values}
            on conflict (key, window_start) do update set count = rate_limit_windows.count + excluded.count
            returning key, window_start, count`),
        );
        const totals = new Map(rows.map((r) => [`${r.key}@${r.window_start}`, Number(r.count)]));
        for (const [key, count, n] of batch) {
          count.pending -= n; // requests counted while the statement ran stay pending
          count.shared = totals.get(`${key}@${count.start}`) ?? count.shared + n;
        }
      }
      this.failing = false;
      if (now - this.prunedAt >= 10 * WINDOW_MS) {
        this.prunedAt = now;
        await this.db.execute(sql`delete from rate_limit_windows where key like 'addr:%' and window_start < ${current - 2 * WINDOW_MS}::bigint`);
      }
    } catch (e) {
      // The database is away: counting goes on in memory (each node then limits alone) and the
      // counts not sent are sent at the next sync.
      if (!this.failing) this.onError(e);
      this.failing = true;
    }
  }

  /** Syncs every `syncMs` until the returned function is called (which syncs one last time). */
  start(syncMs: number): () => Promise<void> {
    if (syncMs > 0 && !this.timer) {
      this.timer = setInterval(() => void this.sync(), syncMs);
      this.timer.unref();
    }
    return async () => {
      if (this.timer) clearInterval(this.timer);
      this.timer = null;
      await this.sync();
    };
  }
}

export function rateLimitedError(surface: AddressSurface, limit: number, retryAfter: number): AppError {
  return new AppError(
    'rate_limited',
    `this address reached the limit of ${limit} ${surface} requests per minute; retry in ${retryAfter} s`,
    { surface, limit, windowSeconds: WINDOW_MS / 1000, retryAfterSeconds: retryAfter },
    { 'Retry-After': String(retryAfter) },
  );
}
