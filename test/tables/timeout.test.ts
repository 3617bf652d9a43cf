import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getTableBySlugs, bulkInsertRecords } from '../../service/tables/tables.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { makeTable } from './helpers.js';

// A 1 ms statement timeout against an aggregate over 30,000 records: the query is stopped and the
// client gets 503 query_timeout, not a 500. PGlite (single-threaded wasm) does not run timers
// during a statement, so this is checked on PostgreSQL only: without TEST_DATABASE_URL the suite is
// reported as skipped (a file with no test at all fails vitest).
const onPostgres = dbKinds().includes('postgres');
describe.skipIf(!onPostgres)('Table API statement timeout (PostgreSQL only: PGlite runs no timers during a statement)', () => {
  const kind = 'postgres' as const;
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(kind, { SVC_TABLE_STATEMENT_TIMEOUT_MS: '1' });
  });
  afterAll(async () => h?.close());

  it('a query past the timeout answers 503 query_timeout', async () => {
    const t = await makeTable(h, {
      name: 'Slow',
      schema: {
        fields: [
          { name: 'k', label: 'K', type: 'string' },
          { name: 'v', label: 'V', type: 'number' },
        ],
      },
    });
    const { table } = await getTableBySlugs(h.deps, t.siteSlug, t.table.slug);
    await bulkInsertRecords(
      h.deps.db,
      table.id,
      Array.from({ length: 30_000 }, (_, i) => ({ k: `k${i}`, v: i })),
    );
    const path = `${t.path}?aggregate=avg&aggregateField=v&groupBy=k&q=k1`;
    const res = await h.fetch(path, { headers: { 'x-request-id': 'slow' } });
    const body = await res.json();
    expect(res.status, JSON.stringify(body).slice(0, 300)).toBe(503);
    expect(body.error.code).toBe('query_timeout');
    expect(body.error.details).toEqual({ timeoutMs: 1 });

    // Again, now that this node holds the table's row: the fast path (read-fast-path.ts) answers the
    // same, header for header, and runs the statement once (it used to hand the failure to the app,
    // which ran it a second time).
    const runs = async () => (await h.deps.metrics.tableReads.get()).values.reduce((n, v) => n + v.value, 0);
    const before = await runs();
    const again = await h.fetch(path, { headers: { 'x-request-id': 'slow' } });
    expect(await runs()).toBe(before + 1);
    expect([again.status, await again.json()]).toEqual([503, body]);
    const headers = (r: Response) => {
      const out: Record<string, string> = {};
      r.headers.forEach((v, k) => {
        if (k !== 'date') out[k] = v;
      });
      return out;
    };
    expect(headers(again)).toEqual(headers(res));
  });
});
