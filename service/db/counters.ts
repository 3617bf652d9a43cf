import { sql } from 'drizzle-orm';
import type { DbOrTx } from './client.js';
import { rowsOf } from './client.js';
import type { SiteOwner } from './owner.js';
import { ownerKey } from './owner-key.js';

/**
 * What a count is kept for (service/db/schema/counters.ts, migration 0011): a Table, a site, or an
 * owner (the key `ownerKey` gives: `acct:<id>` or `wallet:<address>`).
 */
export type CounterSubject = `table:${string}` | `site:${string}` | `acct:${string}` | `wallet:${string}`;
export type CounterMetric = 'records' | 'tables' | 'sites' | 'files' | 'bytes' | 'functions';

export const tableSubject = (tableId: string): CounterSubject => `table:${tableId}`;
export const siteSubject = (siteId: string): CounterSubject => `site:${siteId}`;
export const ownerSubject = (owner: SiteOwner): CounterSubject => ownerKey(owner) as CounterSubject;

/** The kept counts of some subjects: one indexed read of at most 64 rows per count, whatever the data behind them. */
export async function readCounters(db: DbOrTx, subjects: readonly CounterSubject[]): Promise<Map<string, Partial<Record<CounterMetric, number>>>> {
  const out = new Map<string, Partial<Record<CounterMetric, number>>>(subjects.map((s) => [s, {}]));
  if (subjects.length === 0) return out;
  const rows = rowsOf<{ subject: string; metric: CounterMetric; n: string | number }>(
    await db.execute(
      // One parameter per subject, not an array: the Table API's read pool passes parameters as text.
      sql`select subject, metric, sum(value) as n from usage_counters where subject in (${sql.join(
        subjects.map((s) => sql`${s}`),
        sql`, `,
      )}) group by subject, metric`,
    ),
  );
  for (const r of rows) {
    const m = out.get(r.subject);
    if (m) m[r.metric] = Number(r.n);
  }
  return out;
}

/** One kept count (0 when nothing was ever counted). */
export async function readCounter(db: DbOrTx, subject: CounterSubject, metric: CounterMetric): Promise<number> {
  return (await readCounters(db, [subject])).get(subject)?.[metric] ?? 0;
}

/** A kept count that differs from what the data says. */
export interface CounterMismatch {
  subject: string;
  metric: string;
  kept: number;
  actual: number;
}

/** Every kept count compared with count(*) / sum(size) over the data: empty when all are right. Reads everything: a check, not a hot path. */
export async function checkCounters(db: DbOrTx): Promise<CounterMismatch[]> {
  const rows = rowsOf<{ subject: string; metric: string; kept: string | number; actual: string | number }>(
    await db.execute(sql`
      with kept as (select subject, metric, sum(value) as n from usage_counters group by subject, metric)
      select coalesce(k.subject, a.subject) as subject, coalesce(k.metric, a.metric) as metric,
             coalesce(k.n, 0) as kept, coalesce(a.value, 0) as actual
      from kept k full join svc_counts_from_data() a on a.subject = k.subject and a.metric = k.metric
      where coalesce(k.n, 0) <> coalesce(a.value, 0)
      union all
      -- Each site row's own copy of its file count (sites.file_count).
      select 'site:' || s.id, 'file_count', s.file_count, a.n
      from sites s join svc_site_file_counts_from_data() a on a.site_id = s.id
      where s.file_count <> a.n
      order by 1, 2`),
  );
  return rows.map((r) => ({ subject: r.subject, metric: r.metric, kept: Number(r.kept), actual: Number(r.actual) }));
}

/**
 * Rewrites every kept count from the data (`svc-agent-host recount`), the sites rows' file counts
 * too: what it found wrong, and how many counts it wrote. Safe while the service writes (the SQL function's comment says why).
 */
export async function recountCounters(db: DbOrTx): Promise<{ corrected: CounterMismatch[]; counts: number }> {
  const corrected = await checkCounters(db);
  const [row] = rowsOf<{ n: string | number }>(await db.execute(sql`select svc_recount() as n, svc_recount_site_file_counts()`));
  return { corrected, counts: Number(row?.n ?? 0) };
}
