import fs from 'node:fs';
import {
  benchServiceEnv,
  cliPersonalKey,
  formatRatio,
  type InterleavedLoads,
  interleavedLoads,
  type LoadResult,
  load,
  printTable,
  spawnService,
  waitForHttp,
  withScratchDatabase,
} from './lib.js';

/**
 * Table API throughput under many connections: 200 connections on a small table (1,000 records), a
 * filter + sort + limit 20 list, beside the same service's static page under the same load in the
 * same run (the issue's reference: ≥ 0.5× the static req/s), in interleaved rounds
 * (BENCH_TABLE_LOAD_ROUNDS, default 3, of 5 s each) with medians. Once on the embedded PGlite, once
 * on PostgreSQL (a scratch database) when one answers. The load generator (autocannon) runs in this
 * process, on the same cores as the service.
 */
const ROUNDS = Number(process.env.BENCH_TABLE_LOAD_ROUNDS ?? 3);
const SECONDS = 5;
const CONNECTIONS = 200;
const RECORDS = 1000;
const QUERY = 'field=category&value=cat-3&sortField=price&sortDir=desc&limit=20';

export async function run(): Promise<void> {
  const rows: LoadResult[] = [];
  const ratios: string[] = [];
  const measureOn = async (db: string, env: Record<string, string>) => {
    const measured = await measure(db, env);
    rows.push(...measured.medians);
    for (const api of [ONE_LIST, FIFTY_LISTS]) {
      const median = measured.medians.find((r) => r.label === `${db}: ${api}`)!;
      ratios.push(
        `${db}: ${api} / static page ${formatRatio(measured.ratio(`${db}: ${api}`, `${db}: ${STATIC_PAGE}`))} (goal ≥ 0.5x); errors or non-2xx in the median round: ${median.errors + median.non2xx}`,
      );
    }
  };
  await measureOn('PGlite', {});
  await withScratchDatabase('svc_bench_load', (url) => measureOn('PostgreSQL', { DATABASE_URL: url }));
  printTable(
    `Table API vs static page, ${CONNECTIONS} connections, ${ROUNDS} interleaved rounds of ${SECONDS} s each, medians; loopback, one svc process`,
    rows,
  );
  for (const line of ratios) console.log(line);
}

const ONE_LIST = 'Table API list (filter+sort+limit 20)';
const FIFTY_LISTS = 'Table API, 50 different lists';
const STATIC_PAGE = 'static page (1 KB, reference)';

async function measure(db: string, extraEnv: Record<string, string>): Promise<InterleavedLoads> {
  const { dir, base, env } = await benchServiceEnv('load', extraEnv);
  const key = cliPersonalKey(env);
  const svc = spawnService(env);
  try {
    await waitForHttp(`${base}/healthz`);
    const tablePath = await smallTable(base, key);
    await load('warmup', `${base}${tablePath}?${QUERY}`, { seconds: 2, connections: CONNECTIONS });
    // Identical reads in flight at once share a statement (tables/coalesced-reads.ts); the second row
    // spreads the load over 50 different queries, which share far less.
    const distinct = Array.from({ length: 50 }, (_, i) => `${tablePath}?field=category&value=cat-${i % 10}&sortField=price&sortDir=desc&limit=${15 + (i % 5)}`);
    const options = { connections: CONNECTIONS, seconds: SECONDS };
    return await interleavedLoads(
      [
        { label: `${db}: ${ONE_LIST}`, url: `${base}${tablePath}?${QUERY}`, options },
        { label: `${db}: ${FIFTY_LISTS}`, url: `${base}${tablePath}`, options: { ...options, paths: distinct } },
        { label: `${db}: ${STATIC_PAGE}`, url: `${base}/s/load/`, options },
      ],
      ROUNDS,
    );
  } finally {
    svc.kill('SIGTERM');
    await new Promise((r) => svc.once('exit', r));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** A site with a 1 KB page and a table of RECORDS records in 10 categories; returns the table's path. */
async function smallTable(base: string, key: string): Promise<string> {
  const api = async (p: string, body: unknown, headers: Record<string, string> = { authorization: `Bearer ${key}` }) => {
    const res = await fetch(`${base}${p}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    if (res.status !== 201 && res.status !== 200) throw new Error(`${p}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  const html = `<!doctype html><html><head><title>load</title></head><body>${'<p>hello world</p>'.repeat(40)}</body></html>`;
  const { site } = await api('/api/v1/sites', { requestId: 'load', html, slug: 'load' });
  const fields = [
    { name: 'name', label: 'Name', type: 'string' },
    { name: 'category', label: 'Category', type: 'string' },
    { name: 'price', label: 'Price', type: 'number' },
  ];
  const { table } = await api(`/api/v1/sites/${site.id}/tables`, { name: 'Items', schema: { fields } });
  const tablePath = new URL(table.pathUrl).pathname;
  for (let at = 0; at < RECORDS; at += 100) {
    const records = Array.from({ length: 100 }, (_, i) => ({ name: `item ${at + i}`, category: `cat-${(at + i) % 10}`, price: ((at + i) * 7919) % 1000 }));
    await api(tablePath, { records }, { 'x-svc-write-key': table.writeKey });
  }
  return tablePath;
}
