import { and, asc, eq, gte } from 'drizzle-orm';
import type { DbOrTx } from '../db/client.js';
import { siteTraffic } from '../db/schema/index.js';
import type { Deps } from '../deps.js';
import type { SiteTrafficAnswer } from '../../shared/account-api/site-traffic.js';
import { DAY_MS } from './traffic-counter.js';

/** Flushes `deps.traffic` every SVC_TRAFFIC_FLUSH_MS; `stop` flushes one last time. */
export function startTrafficFlush(deps: Deps): { stop(): Promise<void> } {
  let running: Promise<unknown> = Promise.resolve();
  const every = setInterval(
    () => {
      running = running.then(() => deps.traffic.flush(deps));
    },
    Math.max(100, deps.config.trafficFlushMs),
  );
  every.unref();
  return {
    stop: async () => {
      clearInterval(every);
      await running;
      await deps.traffic.flush(deps);
    },
  };
}

/** A site's traffic over the last `days` UTC days (today included), every day present. */
export async function readSiteTraffic(deps: Deps, siteId: string, days: number, db: DbOrTx = deps.db): Promise<SiteTrafficAnswer> {
  const now = deps.clock.now().getTime();
  const today = now - (now % DAY_MS);
  const first = new Date(today - (days - 1) * DAY_MS).toISOString().slice(0, 10);
  const rows = await db
    .select()
    .from(siteTraffic)
    .where(and(eq(siteTraffic.siteId, siteId), gte(siteTraffic.day, first)))
    .orderBy(asc(siteTraffic.day));
  const byDay = new Map(rows.map((r) => [r.day, r]));
  const total = { requests: 0, bytes: 0, previewRequests: 0, previewBytes: 0 };
  const out = [];
  for (let i = days - 1; i >= 0; i--) {
    const day = new Date(today - i * DAY_MS).toISOString().slice(0, 10);
    const r = byDay.get(day);
    const d = { day, requests: r?.requests ?? 0, bytes: r?.bytes ?? 0, previewRequests: r?.previewRequests ?? 0, previewBytes: r?.previewBytes ?? 0 };
    total.requests += d.requests;
    total.bytes += d.bytes;
    total.previewRequests += d.previewRequests;
    total.previewBytes += d.previewBytes;
    out.push(d);
  }
  return { ok: true, siteId, days: out, total, flushSeconds: deps.config.trafficFlushMs / 1000 };
}
