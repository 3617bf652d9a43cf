import { eq, inArray, lte, sql } from 'drizzle-orm';
import type { MiddlewareHandler } from 'hono';
import { Gauge, type Registry } from 'prom-client';
import { type Db, type DbOrTx, rowsOf } from '../db/client.js';
import { cdnPurges } from '../db/schema/index.js';
import type { Logger } from '../kernel/logger.js';
import type { PurgeAdapter } from './purge-adapters.js';

/** Rows one node takes at a time; it holds them for `LEASE_MS` (another node takes them after, should it die). */
const BATCH_ROWS = 20;
const LEASE_MS = 60_000;
/** A failed purge is retried after 1 s, 2 s, 4 s… up to this. */
const MAX_BACKOFF_MS = 60_000;

/**
 * The CDN purge outbox: a change of a site writes the keys it made stale into `cdn_purges` in its own
 * transaction (`enqueue`), so a purge exists exactly when the change committed, whichever node made
 * it, and survives that node dying. Any node drains it (`drainNow`): right after a change (the node
 * that made it, before it answers; every node when the change's notification arrives), and every
 * second for what is due again. Each row is purged twice: at once, and again `settleMs` later, when
 * no node can still serve the old files (each node's serving cache holds a site row for at most its
 * TTL; a request already in flight at the first purge has ended) and so none can have refilled the
 * CDN with them. A failed purge is retried with backoff until it succeeds.
 */
export class PurgeOutbox {
  /** Rows this node wrote: a request that wrote some waits for their purge before it answers (purgeAfterChanges). */
  written = 0;
  #running: Promise<void> | null = null;
  #again = false;

  constructor(
    private readonly db: Db,
    private readonly adapter: PurgeAdapter | null,
    private readonly clock: { now(): Date },
    private readonly log: Logger,
    private readonly settleMs: number,
    registry?: Registry,
  ) {
    if (registry && adapter) this.registerBacklog(registry);
  }

  /**
   * The backlog in /metrics, read from the outbox at each scrape (every node sees the same rows):
   * `svc_cdn_purges_pending{round}` (round 1: not yet purged once; round 2: purged, waiting for its
   * repeat) and `svc_cdn_purge_oldest_pending_seconds`, the age of the oldest change not yet purged
   * once (0 when none): a CDN that keeps refusing shows as a count and an age that only grow.
   */
  private registerBacklog(registry: Registry): void {
    const db = this.db;
    const clock = this.clock;
    const registers = [registry];
    const backlog = async () => {
      const rows = rowsOf<{ round: number; n: number; oldest: Date | string | null }>(
        await db.execute(
          sql`select ${cdnPurges.round} as round, count(*)::int as n, min(${cdnPurges.createdAt}) as oldest from ${cdnPurges} group by ${cdnPurges.round}`,
        ),
      );
      return rows;
    };
    new Gauge({
      name: 'svc_cdn_purges_pending',
      help: 'CDN purge outbox rows: round 1 not yet purged once, round 2 purged and waiting for the repeat',
      labelNames: ['round'],
      registers,
      async collect() {
        const rows = await backlog();
        for (const round of [1, 2]) this.set({ round: String(round) }, Number(rows.find((r) => Number(r.round) === round)?.n ?? 0));
      },
    });
    new Gauge({
      name: 'svc_cdn_purge_oldest_pending_seconds',
      help: 'Age of the oldest site change whose CDN purge has not yet succeeded once (0 when none)',
      registers,
      async collect() {
        const oldest = (await backlog()).find((r) => Number(r.round) === 1)?.oldest;
        this.set(oldest ? Math.max(0, (clock.now().getTime() - new Date(oldest).getTime()) / 1000) : 0);
      },
    });
  }

  /** Whether a CDN is configured (without one, nothing is written or purged). */
  get enabled(): boolean {
    return this.adapter !== null;
  }

  /** Records keys to purge, in the transaction of the change that made them stale. */
  async enqueue(tx: DbOrTx, keys: readonly string[]): Promise<void> {
    if (!this.adapter || keys.length === 0) return;
    const now = this.clock.now();
    await tx.insert(cdnPurges).values({ keys: [...keys], createdAt: now, dueAt: now });
    this.written++;
  }

  /**
   * Purges everything due. Calls during a pass share it and get one more pass after it (their rows
   * may have committed after the pass looked), so a caller's rows are purged when this resolves
   * (or rescheduled, if the CDN failed).
   */
  drainNow(): Promise<void> {
    if (!this.adapter) return Promise.resolve();
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    this.#running = (async () => {
      try {
        do {
          this.#again = false;
          await this.drainDue(this.adapter!);
        } while (this.#again);
      } finally {
        this.#running = null;
      }
    })();
    return this.#running;
  }

  /** `drainNow`, waited for at most `ms` (it goes on in the background after). */
  async drainWithin(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const drained = this.drainNow().catch((e: unknown) => this.log.warn('CDN purge: the outbox could not be drained', { error: (e as Error).message }));
    await Promise.race([drained, new Promise<void>((r) => (timer = setTimeout(r, ms)))]);
    clearTimeout(timer);
  }

  /** Drains every `intervalMs` (rows due again: the second round, retries, a node that died holding some). */
  start(intervalMs = 1000): () => Promise<void> {
    if (!this.adapter) return async () => {};
    const timer = setInterval(() => void this.drainWithin(intervalMs), intervalMs);
    timer.unref();
    return async () => {
      clearInterval(timer);
      await this.#running?.catch(() => {});
    };
  }

  private async drainDue(adapter: PurgeAdapter): Promise<void> {
    for (;;) {
      const now = this.clock.now();
      const due = this.db
        .select({ id: cdnPurges.id })
        .from(cdnPurges)
        .where(lte(cdnPurges.dueAt, now))
        .orderBy(cdnPurges.dueAt, cdnPurges.id)
        .limit(BATCH_ROWS)
        .for('update', { skipLocked: true });
      const rows = await this.db
        .update(cdnPurges)
        .set({ dueAt: new Date(now.getTime() + LEASE_MS), attempts: sql`${cdnPurges.attempts} + 1` })
        .where(inArray(cdnPurges.id, due))
        .returning({ id: cdnPurges.id, keys: cdnPurges.keys, round: cdnPurges.round, attempts: cdnPurges.attempts });
      if (rows.length === 0) return;
      const keys = [...new Set(rows.flatMap((r) => r.keys))];
      try {
        for (let i = 0; i < keys.length; i += adapter.maxKeys) await adapter.purge(keys.slice(i, i + adapter.maxKeys));
      } catch (e) {
        await this.retryLater(rows, (e as Error).message);
        this.log.warn('CDN purge failed; retried with backoff', { adapter: adapter.name, keys: keys.length, error: (e as Error).message });
        return; // the CDN fails now: the next pass (or the next change) tries again
      }
      await this.purged(rows);
    }
  }

  /** Round 1 done: round 2 after the settle time; round 2 done: gone. */
  private async purged(rows: readonly { id: number; round: number }[]): Promise<void> {
    const first = rows.filter((r) => r.round === 1 && this.settleMs > 0).map((r) => r.id);
    const last = rows.filter((r) => !first.includes(r.id)).map((r) => r.id);
    if (first.length)
      await this.db
        .update(cdnPurges)
        .set({ round: 2, attempts: 0, lastError: null, dueAt: new Date(this.clock.now().getTime() + this.settleMs) })
        .where(inArray(cdnPurges.id, first));
    if (last.length) await this.db.delete(cdnPurges).where(inArray(cdnPurges.id, last));
  }

  private async retryLater(rows: readonly { id: number; attempts: number }[], error: string): Promise<void> {
    const now = this.clock.now().getTime();
    for (const r of rows) {
      const backoff = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** Math.min(16, r.attempts - 1));
      await this.db
        .update(cdnPurges)
        .set({ dueAt: new Date(now + backoff), lastError: error.slice(0, 500) })
        .where(eq(cdnPurges.id, r.id));
    }
  }
}

/** How long a change's answer waits for its purge; past it the purge goes on in the background, retried until done. */
const ANSWER_WAITS_MS = 2000;

/**
 * A request that changed a site answers after the CDN confirmed the purge of what it changed (its
 * transaction committed before the handler returned), so the changer's next look through the CDN
 * sees the change. Requests that wrote no purge pass straight through.
 */
export function purgeAfterChanges(purges: PurgeOutbox): MiddlewareHandler {
  return async (_c, next) => {
    const before = purges.written;
    await next();
    if (purges.written !== before) await purges.drainWithin(ANSWER_WAITS_MS);
  };
}
