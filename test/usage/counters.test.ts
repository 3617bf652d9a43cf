import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kill } from '../../chaos/fixtures.js';
import { runAdminOperation } from '../../service/admin/operations.js';
import { openDb, rowsOf, type Db } from '../../service/db/client.js';
import { DevChainFacilitator } from '../../service/payments/dev-chain/dev-facilitator.js';
import { DEV_RECIPIENT, DEV_SETTLER_KEY } from '../../service/payments/x402-config.js';
import { checkCounters } from '../../service/db/counters.js';
import { createEmptyPostgresDatabase, dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { startNode } from '../helpers/nodes.js';
import { getJson, makeTable } from '../tables/helpers.js';

const SCHEMA = { fields: [{ name: 'n', label: 'N', type: 'number' }] };
const TABLE = { name: 'events', methods: ['GET', 'POST', 'DELETE'], publicInsert: true, schema: SCHEMA };

/** What count(*) and sum(size) say about an account's data, in the Account API's words. */
async function fromData(db: Db, accountId: string) {
  const one = async (q: ReturnType<typeof sql>) => Number(rowsOf<{ n: string | number | null }>(await db.execute(q))[0]?.n ?? 0);
  return {
    sites: await one(sql`select count(*) as n from sites where owner_account_id = ${accountId}`),
    tables: await one(sql`select count(*) as n from tables t join sites s on s.id = t.site_id where s.owner_account_id = ${accountId}`),
    tableRecords: await one(
      sql`select count(*) as n from table_records r join tables t on t.id = r.table_id join sites s on s.id = t.site_id where s.owner_account_id = ${accountId}`,
    ),
    files: await one(sql`select count(*) as n from site_files f join sites s on s.id = f.site_id where s.owner_account_id = ${accountId}`),
    storageBytes: await one(sql`select sum(size) as n from site_files f join sites s on s.id = f.site_id where s.owner_account_id = ${accountId}`),
    filesPerSite: await one(
      sql`select max(n) as n from (select count(*) as n from site_files f join sites s on s.id = f.site_id where s.owner_account_id = ${accountId} group by f.site_id) x`,
    ),
  };
}

async function usageOf(h: Harness, key: string) {
  const { status, body } = await getJson(h, '/api/v1/usage', { authorization: `Bearer ${key}` });
  expect(status).toBe(200);
  const u = body.usage as Record<string, { used: number }>;
  return {
    sites: u.sites!.used,
    tables: u.tables!.used,
    tableRecords: u.tableRecords!.used,
    files: u.files!.used,
    storageBytes: u.storageBytes!.used,
    filesPerSite: u.filesPerSite!.used,
  };
}

describe.each(dbKinds())('usage counts kept with the data (%s)', (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(kind);
  });
  afterAll(async () => h?.close());

  it('usage and the Table list count every insert, delete, file and site, and agree with count(*)', async () => {
    const t = await makeTable(h, TABLE);
    const writeKey = { 'x-svc-write-key': t.table.writeKey };
    expect((await h.fetch(t.path, { method: 'POST', json: { record: { n: 1 } } })).status).toBe(201);
    const batch = await h.fetch(t.path, { method: 'POST', json: { records: Array.from({ length: 300 }, (_, i) => ({ n: i })) } });
    expect(batch.status).toBe(201);
    const ids = ((await batch.json()).records as { id: string }[]).map((r) => r.id);
    for (const id of ids.slice(0, 2)) expect((await h.fetch(`${t.path}/${id}`, { method: 'DELETE', headers: writeKey })).status).toBe(200);
    const list = await getJson(h, `/api/v1/sites/${t.siteId}/tables`, { authorization: `Bearer ${t.key}` });
    expect(list.body.tables[0].recordCount).toBe(299);
    // The Table API's total: the kept count when nothing narrows the list, a count of the matches otherwise.
    const whole = await getJson(h, `${t.path}?includeTotal=true&limit=1`);
    expect(whole.body, JSON.stringify(whole.body)).toMatchObject({ total: 299 });
    expect((await getJson(h, `${t.path}?includeTotal=true&limit=1&filter[n][lt]=10`)).body.total).toBe(9);
    expect(await usageOf(h, t.key)).toMatchObject({ sites: 1, tables: 1, tableRecords: 299 });

    // A second site with files: added, replaced with a larger one, deleted.
    const published = await h.fetch('/api/v1/sites', {
      method: 'POST',
      key: t.key,
      json: {
        requestId: crypto.randomUUID(),
        html: '<p>two</p>',
        files: [
          { path: 'a.css', content: 'a{}' },
          { path: 'b.js', content: 'let b' },
        ],
      },
    });
    expect(published.status).toBe(201);
    const second = (await published.json()).site as { id: string };
    const write = await h.fetch(`/api/v1/sites/${second.id}/files`, {
      method: 'POST',
      key: t.key,
      json: {
        files: [
          { path: 'a.css', content: 'a{color:red}' },
          { path: 'c.txt', content: 'c' },
        ],
        delete: ['b.js'],
      },
    });
    expect(write.status).toBe(200);
    const site = (await write.json()).site as { fileCount: number; bytes: number };
    expect(await usageOf(h, t.key)).toEqual(await fromData(h.deps.db, t.accountId));
    expect(site).toMatchObject({ fileCount: 3, bytes: '<p>two</p>'.length + 'a{color:red}'.length + 1 });

    // Deleting the site with the Table takes its records, files and Table off the account.
    expect((await h.fetch(`/api/v1/sites/${t.siteId}`, { method: 'DELETE', key: t.key })).status).toBe(200);
    const after = await usageOf(h, t.key);
    expect(after).toEqual(await fromData(h.deps.db, t.accountId));
    expect(after).toMatchObject({ sites: 1, tables: 0, tableRecords: 0, files: 3 });
    expect(await checkCounters(h.deps.db)).toEqual([]);
  });

  it('recount puts a wrong count right and says which it was', async () => {
    const t = await makeTable(h, TABLE);
    await h.fetch(t.path, { method: 'POST', json: { records: [{ n: 1 }, { n: 2 }] } });
    await h.deps.db.execute(sql`update usage_counters set value = value + 5 where subject = ${`acct:${t.accountId}`} and metric = 'records'`);
    expect((await usageOf(h, t.key)).tableRecords).toBe(7);
    const report = (await runAdminOperation(h.deps, 'counters.recount', {})) as { corrected: unknown[] };
    expect(report.corrected).toEqual([{ subject: `acct:${t.accountId}`, metric: 'records', kept: 7, actual: 2 }]);
    expect((await usageOf(h, t.key)).tableRecords).toBe(2);
    expect(await checkCounters(h.deps.db)).toEqual([]);

    // A site row's own file count (the fullest site's figure) is checked and put right too.
    await h.deps.db.execute(sql`update sites set file_count = file_count + 40 where id = ${t.siteId}`);
    expect((await usageOf(h, t.key)).filesPerSite).toBe(41);
    const again = (await runAdminOperation(h.deps, 'counters.recount', {})) as { corrected: unknown[] };
    expect(again.corrected).toEqual([{ subject: `site:${t.siteId}`, metric: 'file_count', kept: 41, actual: 1 }]);
    expect((await usageOf(h, t.key)).filesPerSite).toBe(1);
    expect(await checkCounters(h.deps.db)).toEqual([]);
  });
});

// Real processes on a real PostgreSQL: writers in flight, killed, and the CLI's recount beside them.
describe.runIf(dbKinds().includes('postgres'))('usage counts under concurrent writers and a killed node (postgres)', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  it('32 inserts in flight into one Table, the node SIGKILLed midway: every count equals count(*), and recount finds nothing to correct', {
    timeout: 120_000,
  }, async () => {
    const database = await createEmptyPostgresDatabase();
    cleanups.push(database.drop);
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-counts-'));
    cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    // The chain is the test's own (as in chaos/kill.ts): a SIGKILLed node's own dev chain would outlive it.
    const chain = new DevChainFacilitator();
    await chain.start();
    cleanups.push(() => chain.close());
    const node = await startNode(database.url, {
      SVC_DATA_DIR: dataDir,
      SVC_X402_MODE: 'chain',
      SVC_X402_RPC_URL: chain.rpcUrl,
      SVC_X402_SETTLER_KEY: DEV_SETTLER_KEY,
      SVC_X402_RECIPIENT: DEV_RECIPIENT,
    });
    cleanups.push(() => kill(node));
    const { accountWithTable } = await import('../../chaos/fixtures.js');
    const { table } = await accountWithTable(node);
    let acked = 0;
    let killed: Promise<void> | undefined;
    const writer = async () => {
      for (;;) {
        try {
          const res = await fetch(`${node.url}${table.pathUrl}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-svc-write-key': table.writeKey },
            body: JSON.stringify({ records: [{ n: 1 }, { n: 2 }, { n: 3 }] }),
          });
          if (res.status !== 201) return;
          acked += 3;
        } catch {
          return; // the node is gone
        }
        // Killed while the other 31 are in flight, once enough have been acknowledged.
        if (acked >= 600) killed ??= kill(node);
      }
    };
    await Promise.all(Array.from({ length: 32 }, writer));
    await killed;
    const opened = await openDb({ databaseUrl: database.url });
    cleanups.push(() => opened.close());
    const [n] = rowsOf<{ n: string }>(await opened.db.execute(sql`select count(*) as n from table_records`));
    expect(Number(n!.n)).toBeGreaterThanOrEqual(acked);
    expect(await checkCounters(opened.db)).toEqual([]);

    // The CLI, with the service stopped: it opens the database itself.
    const run = spawnSync(process.execPath, ['bin/svc.mjs', 'recount'], {
      env: {
        ...process.env,
        DATABASE_URL: database.url,
        SVC_DATA_DIR: dataDir,
        SVC_LOG_LEVEL: 'error',
        SVC_X402_MODE: 'chain',
        SVC_X402_RPC_URL: chain.rpcUrl,
        SVC_X402_SETTLER_KEY: DEV_SETTLER_KEY,
        SVC_X402_RECIPIENT: DEV_RECIPIENT,
      },
      encoding: 'utf8',
    });
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ corrected: [] });
  });
});
