import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { isDatabaseUnavailable } from '../db/client.js';
import type { Logger } from '../kernel/logger.js';

interface Counts {
  requests: number;
  bytes: number;
  previewRequests: number;
  previewBytes: number;
}

export const DAY_MS = 86_400_000;

/**
 * What a node served per site and UTC day, counted in memory on the serving path (a map update, no
 * database write per request) and added to `site_traffic` by `flush` every few seconds
 * (SVC_TRAFFIC_FLUSH_MS). Each node adds only what it counted since its last flush, so nodes never
 * count a request twice; a node killed loses what it counted since its last flush (at most
 * SVC_TRAFFIC_FLUSH_MS); a node stopping flushes last.
 */
export class SiteTraffic {
  /** day → site id → counts. */
  #pending = new Map<string, Map<string, Counts>>();
  #day = '';
  #dayEnds = 0;
  #today: Map<string, Counts> = new Map();

  /** Counts one answer of a site (`preview`: of one of its version previews) that sent `bytes` of body. */
  count(siteId: string, bytes: number, preview: boolean, now = Date.now()): void {
    if (now >= this.#dayEnds || now < this.#dayEnds - DAY_MS) this.#turnDay(now);
    let c = this.#today.get(siteId);
    if (!c) {
      c = { requests: 0, bytes: 0, previewRequests: 0, previewBytes: 0 };
      this.#today.set(siteId, c);
    }
    if (preview) {
      c.previewRequests++;
      c.previewBytes += bytes;
    } else {
      c.requests++;
      c.bytes += bytes;
    }
  }

  #turnDay(now: number): void {
    const start = now - (now % DAY_MS);
    this.#day = new Date(start).toISOString().slice(0, 10);
    this.#dayEnds = start + DAY_MS;
    let today = this.#pending.get(this.#day);
    if (!today) {
      today = new Map();
      this.#pending.set(this.#day, today);
    }
    this.#today = today;
  }

  /** Whether anything waits to be flushed. */
  get pending(): boolean {
    for (const sites of this.#pending.values()) if (sites.size) return true;
    return false;
  }

  /**
   * Adds what was counted since the last flush to the database, in one statement (rows of sites
   * deleted meanwhile are left out). When the database is unreachable the counts are kept for the
   * next flush; any other failure drops them (logged), so one bad row cannot block counting for good.
   */
  async flush(deps: { db: Db; log: Logger }): Promise<number> {
    const batch = this.#pending;
    this.#pending = new Map();
    this.#dayEnds = 0; // the next count starts a fresh map for its day
    const rows: { s: string; d: string; r: number; b: number; pr: number; pb: number }[] = [];
    for (const [day, sites] of batch)
      for (const [siteId, c] of sites) rows.push({ s: siteId, d: day, r: c.requests, b: c.bytes, pr: c.previewRequests, pb: c.previewBytes });
    if (rows.length === 0) return 0;
    try {
      await deps.db.execute(sql`
        insert into site_traffic (site_id, day, requests, bytes, preview_requests, preview_bytes)
        select v.s, v.d::date, v.r, v.b, v.pr, v.pb
          from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as v(s text, d text, r bigint, b bigint, pr bigint, pb bigint)
         where exists (select 1 from sites where sites.id = v.s)
        on conflict (site_id, day) do update set
          requests = site_traffic.requests + excluded.requests,
          bytes = site_traffic.bytes + excluded.bytes,
          preview_requests = site_traffic.preview_requests + excluded.preview_requests,
          preview_bytes = site_traffic.preview_bytes + excluded.preview_bytes`);
      return rows.length;
    } catch (e) {
      if (isDatabaseUnavailable(e)) this.#merge(batch);
      else deps.log.warn('site traffic not recorded', { error: (e as Error).message, rows: rows.length });
      return 0;
    }
  }

  #merge(batch: Map<string, Map<string, Counts>>): void {
    for (const [day, sites] of batch) {
      let into = this.#pending.get(day);
      if (!into) {
        into = new Map();
        this.#pending.set(day, into);
      }
      for (const [siteId, c] of sites) {
        const t = into.get(siteId);
        if (!t) into.set(siteId, c);
        else {
          t.requests += c.requests;
          t.bytes += c.bytes;
          t.previewRequests += c.previewRequests;
          t.previewBytes += c.previewBytes;
        }
      }
    }
    this.#dayEnds = 0;
  }
}
