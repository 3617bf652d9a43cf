import { sql } from 'drizzle-orm';
import { Hono } from 'hono';
import type { Db } from '../db/client.js';
import type { ReadPools } from '../db/read-pools.js';

/** A part whose readiness is asked: the blob store, the payment facilitator. */
interface Pingable {
  ping(): Promise<unknown>;
}

/** How long a readiness probe waits for each part. */
const PROBE_MS = 2000;

/** Whether `probe` succeeds within PROBE_MS. */
async function answers(probe: () => Promise<unknown>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), PROBE_MS);
  });
  try {
    return await Promise.race([probe().then(() => true), timeout]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

const state = (up: boolean) => (up ? 'up' : 'down');

/**
 * Liveness (`/healthz`: the process answers) and readiness (`/readyz`: this node should get traffic).
 * Not ready while stopping (SIGTERM drain) or when the database or the blob store does not answer.
 * Each replica's state and lag are shown (`replicas`, when DATABASE_READ_URL names any).
 * The chain (or remote facilitator) is reported but does not make a node unready: every node shares
 * it, so failing readiness on it would take the whole service off the load balancer, free routes
 * included, while paid calls already answer 503 without charging.
 */
export function healthRoutes(deps: { db: Db; readPools: ReadPools; blobs: Pingable; facilitator: Pingable }, isStopping: () => boolean): Hono {
  const r = new Hono();
  r.get('/healthz', (c) => c.json({ ok: true }));
  r.get('/readyz', async (c) => {
    const [database, blobs, chain] = await Promise.all([
      answers(() => deps.db.execute(sql`select 1`)),
      answers(() => deps.blobs.ping()),
      answers(() => deps.facilitator.ping()),
    ]);
    const stopping = isStopping();
    const ok = database && blobs && !stopping;
    // Replicas never make a node unready: their reads go to the primary (db/read-pools.ts).
    const replicas = deps.readPools.enabled ? { replicas: deps.readPools.status() } : {};
    const body = { ok, database: state(database), blobs: state(blobs), chain: state(chain), ...replicas, ...(stopping ? { stopping: true } : {}) };
    return c.json(body, ok ? 200 : 503, ok ? {} : { 'retry-after': '5' });
  });
  return r;
}
