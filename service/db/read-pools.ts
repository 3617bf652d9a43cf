import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { ReplicasConfig } from '../kernel/config.js';
import { LruMap } from '../../shared/lru-map.js';
import { type DbOrTx, isDatabaseUnavailable, rowsOf, sqlStateOf } from './client.js';

/**
 * Which pool answers a read: the one place that decides it. Reads that may be a little behind (the
 * Table API's anonymous record reads, hosted sites' lookups, an account's list of sites) go to a
 * streaming replica in rotation; everything else (writes, payments, quotas, any other read with a
 * credential, a read on a table row just looked up) stays on the primary, through the handles it
 * always used.
 *
 * - A replica is in rotation while the last check (every `checkMs`) found it answering and at most
 *   `maxLagMs` behind the primary; otherwise its reads go to the primary, never a 5xx.
 * - Read-your-writes: each Table API write remembers the primary's WAL position after its commit
 *   under the writer's address (`wrote`); that address's next reads go to a replica only once it has
 *   replayed past it (waiting up to `waitMs`), else to the primary. The memory is this node's: see
 *   docs/operator.md ("With replicas") for why, and for the load balancer setting it asks for.
 * - A read a replica fails because it is unreachable, or whose row checks (SV001/SV002, migrations
 *   0003/0014) or tables (42P01) disagree with this node's view of the primary, runs again on the
 *   primary: a replica behind this node's cached rows can never answer from older rows.
 * - Site resolution (`afterSiteChanges`): a node caches what it resolves, so it must never read a
 *   site row older than a change it has heard of. Each change notification it hears (and each
 *   (re)start of listening) raises a floor to the primary's position after it (`siteChangesHeard`);
 *   such reads go to a replica only once it has replayed past the floor, and to the primary while
 *   the floor is being read.
 */
export interface ReadRoute {
  /** '' on the primary; else what a shared read (tables/coalesced-reads.ts) must have in common. */
  label: string;
  run<T>(read: (db: DbOrTx) => Promise<T>): Promise<T>;
}

export type ReplicaState = 'up' | 'lagging' | 'down';

export interface ReplicaStatus {
  name: string;
  state: ReplicaState;
  /** How far behind the primary the last check found it (an upper bound), null when it did not answer. */
  lagMs: number | null;
}

interface Replica {
  name: string;
  db: DbOrTx;
  state: ReplicaState;
  lagMs: number | null;
  /** The WAL position it had replayed at its last check (never goes back). */
  replayed: bigint;
}

/** The primary's WAL position at a check: a replica that replayed `lsn` has everything committed before `at`. */
interface Sample {
  at: number;
  lsn: bigint;
}

/** How long one check of a replica may take before it counts as down. */
const CHECK_TIMEOUT_MS = 1000;
/** Writers remembered per node (by address), the least recently written dropped first. */
const WRITERS = 100_000;
/** How often a read waiting for a replica to replay a write asks it again. */
const WAIT_POLL_MS = 2;

/** `16/B374D848` as a number that compares. */
export function parseLsn(text: string): bigint {
  const [hi, lo] = text.split('/');
  return (BigInt(`0x${hi}`) << 32n) | BigInt(`0x${lo}`);
}

const REPLAY_LSN = sql`select pg_last_wal_replay_lsn()::text as lsn`;
const CURRENT_LSN = sql`select pg_current_wal_lsn()::text as lsn`;

export class ReadPools {
  readonly primary: ReadRoute;
  private readonly replicas: Replica[];
  private readonly samples: Sample[] = [];
  private readonly writers = new LruMap<string, { lsn: bigint; until: number }>(WRITERS);
  private next = 0;
  /** The primary's position after the last site change this node heard of (site resolution reads start there). */
  private siteFloor = 0n;
  /** Floor reads in flight; until they end, and until `floorUnknownUntil` after one failed, site resolution reads the primary. */
  private floorReads = 0;
  private floorUnknownUntil = 0;
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<void> | undefined;
  private readonly lagGauge: Gauge<'replica'> | undefined;
  private readonly stateGauge: Gauge<'replica' | 'state'> | undefined;
  private readonly readsCounter: Counter<'pool'> | undefined;
  private readonly reads = new Map<string, number>();

  /**
   * `primaryDb`: the main handle (WAL positions); `primaryReads`: the primary's read pool;
   * `replicaReads`: each replica's read pool (the same session settings), named replica1, replica2…
   */
  constructor(
    private readonly primaryDb: DbOrTx,
    primaryReads: DbOrTx,
    replicaReads: DbOrTx[],
    private readonly config: Pick<ReplicasConfig, 'maxLagMs' | 'waitMs' | 'checkMs'>,
    registry?: Registry,
  ) {
    this.primary = { label: '', run: (read) => this.counted('primary', read(primaryReads)) };
    // Out of rotation until its first check.
    this.replicas = replicaReads.map((db, i) => ({ name: `replica${i + 1}`, db, state: 'down', lagMs: null, replayed: 0n }));
    if (registry && this.replicas.length > 0) {
      const registers = [registry];
      this.lagGauge = new Gauge({
        name: 'svc_replica_lag_seconds',
        help: 'How far behind the primary each replica was at its last check',
        labelNames: ['replica'],
        registers,
      });
      this.stateGauge = new Gauge({
        name: 'svc_replica_state',
        help: 'Each replica: 1 for its state (up: in rotation; lagging, down: reads go to the primary)',
        labelNames: ['replica', 'state'],
        registers,
      });
      this.readsCounter = new Counter({
        name: 'svc_public_reads_total',
        help: 'Public reads by the pool that answered them (primary, replica1…)',
        labelNames: ['pool'],
        registers,
      });
    }
  }

  get enabled(): boolean {
    return this.replicas.length > 0;
  }

  /** Checks the replicas every `checkMs` until `stop`; the first check before it returns. */
  async start(): Promise<void> {
    if (!this.enabled) return;
    await this.check();
    const tick = () => {
      this.timer = setTimeout(() => {
        this.checking = this.check().finally(tick);
      }, this.config.checkMs).unref();
    };
    tick();
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const checking = this.checking;
    this.checking = undefined;
    await checking?.catch(() => {});
  }

  status(): ReplicaStatus[] {
    return this.replicas.map(({ name, state, lagMs }) => ({ name, state, lagMs }));
  }

  /**
   * The route of a public read by the client at `writer` (its address): a replica in rotation, after
   * the writer's last write if it made one lately; the primary when there is none.
   */
  publicRead(writer: string | readonly string[], options: { afterSiteChanges?: boolean } = {}): ReadRoute {
    if (!this.enabled) return this.primary;
    const now = Date.now();
    let after: bigint | undefined;
    if (options.afterSiteChanges) {
      if (this.floorReads > 0 || now < this.floorUnknownUntil) return this.primary;
      if (this.siteFloor > 0n) after = this.siteFloor;
    }
    for (const w of typeof writer === 'string' ? [writer] : writer) {
      const wrote = this.writers.get(w);
      if (wrote && wrote.until > now && (after === undefined || wrote.lsn > after)) after = wrote.lsn;
    }
    return {
      // Reads after a write share a run only with reads after the same position.
      label: after === undefined ? 'replica' : `replica after ${after}`,
      run: async (read) => this.runOn(await this.choose(after), read),
    };
  }

  /**
   * After a write by `writer` committed: remembers the primary's WAL position, so that writer's next
   * reads see the write. Kept until every replica still in rotation must have replayed it (it is at
   * most `maxLagMs` behind at each check).
   */
  async wrote(writer: string | readonly string[]): Promise<void> {
    if (!this.enabled) return;
    const [row] = rowsOf<{ lsn: string }>(await this.primaryDb.execute(CURRENT_LSN));
    if (!row) return;
    const position = { lsn: parseLsn(row.lsn), until: Date.now() + this.keepMs() };
    for (const w of typeof writer === 'string' ? [writer] : writer) this.writers.set(w, position);
  }

  /**
   * This node heard of a committed site change (its notification; or it (re)started listening and
   * cannot know what it missed): site resolution reads (`afterSiteChanges`) wait for a replica past
   * the primary's position now, and read the primary until that position is known. Call it right
   * after the site cache dropped what the change made stale.
   */
  async siteChangesHeard(): Promise<void> {
    if (!this.enabled) return;
    this.floorReads++;
    try {
      const [row] = rowsOf<{ lsn: string }>(await this.primaryDb.execute(CURRENT_LSN));
      const lsn = row ? parseLsn(row.lsn) : null;
      if (lsn !== null && lsn > this.siteFloor) this.siteFloor = lsn;
    } catch {
      // The position is unknown: the primary answers site resolution until every replica in rotation must be past the change.
      this.floorUnknownUntil = Date.now() + this.keepMs();
    } finally {
      this.floorReads--;
    }
  }

  /** How long a write's position matters: every replica still in rotation has replayed it after (it is at most `maxLagMs` behind at each check). */
  private keepMs(): number {
    return 2 * (this.config.maxLagMs + this.config.checkMs);
  }

  /** A replica in rotation that has replayed `after` (waiting up to `waitMs` for one), else null: the primary. */
  private async choose(after: bigint | undefined): Promise<Replica | null> {
    const inRotation = this.replicas.filter((r) => r.state === 'up');
    if (inRotation.length === 0) return null;
    const replica = inRotation[this.next++ % inRotation.length]!;
    if (after === undefined || replica.replayed >= after) return replica;
    const deadline = Date.now() + this.config.waitMs;
    while (Date.now() < deadline && replica.state === 'up') {
      await sleep(WAIT_POLL_MS);
      const lsn = await this.replayedBy(replica).catch(() => null);
      if (lsn !== null && lsn >= after) return replica;
    }
    return null;
  }

  private async runOn<T>(replica: Replica | null, read: (db: DbOrTx) => Promise<T>): Promise<T> {
    if (!replica) return this.primary.run(read);
    try {
      return await this.counted(replica.name, read(replica.db));
    } catch (e) {
      if (isDatabaseUnavailable(e)) this.setState(replica, 'down', null);
      else if (!behindThisNode(e)) throw e;
      return this.primary.run(read);
    }
  }

  private async counted<T>(pool: string, answer: Promise<T>): Promise<T> {
    const value = await answer;
    this.reads.set(pool, (this.reads.get(pool) ?? 0) + 1);
    this.readsCounter?.inc({ pool });
    return value;
  }

  /** Public reads answered so far, by pool (primary, replica1…). */
  readCounts(): Record<string, number> {
    return Object.fromEntries(this.reads);
  }

  /** One check: the primary's position, then each replica's, and from both how far behind it is. */
  private async check(): Promise<void> {
    const now = Date.now();
    try {
      const [row] = rowsOf<{ lsn: string }>(await withTimeout(this.primaryDb.execute(CURRENT_LSN)));
      if (row) this.samples.push({ at: now, lsn: parseLsn(row.lsn) });
    } catch {
      // The primary does not answer: the replicas are judged against the last positions known.
    }
    // Samples older than twice the bound tell nothing more than "too far behind".
    while (this.samples.length > 1 && this.samples[1]!.at < now - 2 * this.config.maxLagMs - this.config.checkMs) this.samples.shift();
    await Promise.all(
      this.replicas.map(async (replica) => {
        let lsn: bigint | null;
        try {
          lsn = await withTimeout(this.replayedBy(replica));
        } catch {
          lsn = null;
        }
        // No answer, or a server that is not replaying (a promoted replica): out of rotation.
        if (lsn === null) return this.setState(replica, 'down', null);
        const lagMs = this.lagOf(lsn, Date.now());
        this.setState(replica, lagMs > this.config.maxLagMs ? 'lagging' : 'up', lagMs);
      }),
    );
  }

  /**
   * An upper bound of how far behind a replica that replayed `lsn` is: nothing when it has the
   * primary's newest position; else the age of the newest position it has (the writes after it may
   * be missing); else older than any position kept.
   */
  private lagOf(lsn: bigint, now: number): number {
    const newest = this.samples.at(-1);
    if (!newest || lsn >= newest.lsn) return 0;
    for (let i = this.samples.length - 1; i >= 0; i--) if (this.samples[i]!.lsn <= lsn) return now - this.samples[i]!.at;
    return now - this.samples[0]!.at + this.config.maxLagMs + 1;
  }

  private async replayedBy(replica: Replica): Promise<bigint | null> {
    const [row] = rowsOf<{ lsn: string | null }>(await replica.db.execute(REPLAY_LSN));
    if (!row?.lsn) return null;
    const lsn = parseLsn(row.lsn);
    if (lsn > replica.replayed) replica.replayed = lsn;
    return lsn;
  }

  private setState(replica: Replica, state: ReplicaState, lagMs: number | null): void {
    replica.state = state;
    replica.lagMs = lagMs;
    if (lagMs !== null) this.lagGauge?.set({ replica: replica.name }, lagMs / 1000);
    for (const s of ['up', 'lagging', 'down'] as const) this.stateGauge?.set({ replica: replica.name, state: s }, s === state ? 1 : 0);
  }
}

/**
 * A failure that says the replica is behind what this node already read from the primary: a row
 * check refused (SV001 table rows, SV002 a kept personal key) or a table not there yet (42P01).
 */
function behindThisNode(e: unknown): boolean {
  const state = sqlStateOf(e);
  return state === 'SV001' || state === 'SV002' || state === '42P01';
}

async function withTimeout<T>(p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
