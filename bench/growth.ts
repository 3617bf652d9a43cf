import fs from 'node:fs';
import postgres from 'postgres';
import { benchServiceEnv, cliPersonalKey, spawnService, waitForHttp, withScratchDatabase } from './lib.js';

/**
 * `npm run bench growth`: does a request cost more when there is more data behind it? One service
 * (real PostgreSQL, a scratch database) holds one account per size; each size's requests are timed in
 * interleaved rounds (every size once per round, so drift hits all alike) and printed as p50 and
 * as a ratio to the smallest size. Goal (issue 42): ≤ 1.1×; bar ≤ 1.5× at 200,000 records.
 *
 * - records (0 / 10,000 / 200,000 / 1,000,000 in one Table of the account): GET /api/v1/usage, the
 *   site's Table list (exact record counts), a Table API page at the default order, a page at
 *   `offset` = half the records, and the same depth through `cursor` (keyset);
 * - sites and Functions (10 / 1,000 / 10,000 of each in the account): usage, a page of 20 sites, a
 *   page of 20 Functions.
 *
 * Records, sites and Functions are written by SQL (the counting triggers count them as any write).
 */
const RECORD_SIZES = (process.env.BENCH_GROWTH_RECORDS ?? '0,10000,200000,1000000').split(',').map(Number);
const OBJECT_SIZES = (process.env.BENCH_GROWTH_OBJECTS ?? '10,1000,10000').split(',').map(Number);
const ROUNDS = Number(process.env.BENCH_GROWTH_ROUNDS ?? 60);

interface Probe {
  label: string;
  /** One URL per size (null where the size has none, e.g. a cursor into an empty Table). */
  urls: (string | null)[];
  key: (i: number) => string;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
};

async function timeProbes(base: string, probes: Probe[], sizes: number[]): Promise<void> {
  const get = async (url: string, key: string) => {
    const res = await fetch(`${base}${url}`, { headers: { authorization: `Bearer ${key}` } });
    const body = await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${url}: ${res.status} ${Buffer.from(body).toString()}`);
  };
  const times = probes.map((p) => p.urls.map(() => [] as number[]));
  for (let round = -3; round < ROUNDS; round++) {
    for (const [pi, p] of probes.entries()) {
      for (const [si, url] of p.urls.entries()) {
        if (url === null) continue;
        const t = performance.now();
        await get(url, p.key(si));
        if (round >= 0) times[pi]![si]!.push(performance.now() - t);
      }
    }
  }
  const head = sizes.map((s) => s.toLocaleString('en').padStart(18)).join('');
  console.log(`${'p50 ms (ratio to the smallest size)'.padEnd(40)}${head}`);
  for (const [pi, p] of probes.entries()) {
    const p50s = times[pi]!.map((t) => (t.length ? pct(t, 50) : Number.NaN));
    const first = p50s.find((x) => !Number.isNaN(x))!;
    const cells = p50s.map((x) => (Number.isNaN(x) ? '—' : `${x.toFixed(2)} (${(x / first).toFixed(2)}x)`).padStart(18)).join('');
    console.log(`${p.label.padEnd(40)}${cells}`);
  }
}

export async function run(): Promise<void> {
  await withScratchDatabase('svc_bench_growth', async (dbUrl) => {
    const { dir, base, env } = await benchServiceEnv('growth', {
      DATABASE_URL: dbUrl,
      SVC_MAX_SITES_PER_ACCOUNT: '100000',
      SVC_TABLE_STATEMENT_TIMEOUT_MS: '60000',
    });
    const recordKeys = RECORD_SIZES.map((_, i) => cliPersonalKey(env, `records-${i}@example.com`));
    const objectKeys = OBJECT_SIZES.map((_, i) => cliPersonalKey(env, `objects-${i}@example.com`));
    const svc = spawnService(env);
    const db = postgres(dbUrl, { max: 2, onnotice: () => {} });
    try {
      await waitForHttp(`${base}/healthz`);
      const call = async (key: string, method: string, url: string, json?: unknown) => {
        const res = await fetch(`${base}${url}`, {
          method,
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: json === undefined ? undefined : JSON.stringify(json),
        });
        const body = (await res.json()) as Record<string, any>;
        if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(body)}`);
        return body;
      };

      // Records: one site and one Table per size, filled by one INSERT … SELECT.
      const targets: { siteId: string; slug: string; tablePath: string; cursorAtHalf: string | null }[] = [];
      const t0 = performance.now();
      for (const [i, n] of RECORD_SIZES.entries()) {
        const key = recordKeys[i]!;
        const { site } = await call(key, 'POST', '/api/v1/sites', { requestId: `growth-${i}`, html: '<p>growth</p>' });
        const { table } = await call(key, 'POST', `/api/v1/sites/${site.id}/tables`, {
          name: 'Items',
          schema: {
            fields: [
              { name: 'name', label: 'Name', type: 'string' },
              { name: 'category', label: 'Category', type: 'string' },
              { name: 'price', label: 'Price', type: 'number' },
            ],
          },
        });
        if (n > 0) {
          await db`insert into table_records (table_id, id, fields)
            select ${table.id}, g, jsonb_build_object('name', 'item ' || g, 'category', 'cat-' || (g % 50), 'price', (g % 10000) / 100.0)
            from generate_series(1, ${n}::int) g`;
          await db.unsafe(`select setval('svc_record_ids."${table.id}"', ${n})`);
        }
        const tablePath = new URL(table.pathUrl).pathname;
        const half = Math.max(0, Math.floor(n / 2) - 50);
        const page = (await call(key, 'GET', `${tablePath}?offset=${half}&limit=50`)) as { nextCursor: string | null };
        targets.push({ siteId: site.id, slug: site.slug, tablePath, cursorAtHalf: page.nextCursor });
      }
      await db`analyze table_records`;
      console.log(`seeded ${RECORD_SIZES.map((n) => n.toLocaleString('en')).join(' / ')} records in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

      // Sites and Functions: that many of each in the account, by SQL.
      for (const [i, n] of OBJECT_SIZES.entries()) {
        const [account] = await db<{ id: string }[]>`select id from accounts where email = ${`objects-${i}@example.com`}`;
        const accountId = account!.id;
        await db`insert into sites (id, slug, owner_account_id) select 'site_g' || ${i} || '_' || g, 'g' || ${i} || '-' || g, ${accountId} from generate_series(1, ${n}::int) g`;
        await db`insert into functions (id, account_id, name, slug, draft_code)
          select 'fn_g' || ${i} || '_' || g, ${accountId}, 'f' || g, 'f' || ${i} || '-' || g, 'export default () => 1' from generate_series(1, ${n}::int) g`;
      }
      await db`analyze`;

      console.log(`\nRecords in one Table of the account (${ROUNDS} interleaved rounds, PostgreSQL, sequential requests):`);
      await timeProbes(
        base,
        [
          { label: 'GET /api/v1/usage', urls: RECORD_SIZES.map(() => '/api/v1/usage'), key: (i) => recordKeys[i]! },
          { label: "the site's Table list (record counts)", urls: targets.map((t) => `/api/v1/sites/${t.siteId}/tables`), key: (i) => recordKeys[i]! },
          { label: 'Table API: first page (limit 50)', urls: targets.map((t) => `${t.tablePath}?limit=50`), key: (i) => recordKeys[i]! },
          {
            label: 'Table API: page at offset n/2',
            urls: targets.map((t, i) => `${t.tablePath}?offset=${Math.floor(RECORD_SIZES[i]! / 2)}&limit=50`),
            key: (i) => recordKeys[i]!,
          },
          {
            label: 'Table API: page at n/2 by cursor',
            urls: targets.map((t) => (t.cursorAtHalf ? `${t.tablePath}?cursor=${encodeURIComponent(t.cursorAtHalf)}&limit=50` : null)),
            key: (i) => recordKeys[i]!,
          },
        ],
        RECORD_SIZES,
      );
      console.log(`\nSites and Functions in the account (${ROUNDS} interleaved rounds):`);
      await timeProbes(
        base,
        [
          { label: 'GET /api/v1/usage', urls: OBJECT_SIZES.map(() => '/api/v1/usage'), key: (i) => objectKeys[i]! },
          { label: 'a page of 20 sites', urls: OBJECT_SIZES.map(() => '/api/v1/sites?limit=20'), key: (i) => objectKeys[i]! },
          { label: 'a page of 20 Functions', urls: OBJECT_SIZES.map(() => '/api/v1/functions?limit=20'), key: (i) => objectKeys[i]! },
        ],
        OBJECT_SIZES,
      );
      console.log('p50 in ms, ratio to the smallest size in brackets. Goal ≤ 1.1x; bar ≤ 1.5x at 200,000 records.');
    } finally {
      await db.end();
      svc.kill('SIGTERM');
      await new Promise((r) => svc.once('exit', r));
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
