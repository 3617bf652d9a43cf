import postgres from 'postgres';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { mountHostedMcp } from '../../cli/hosted-mcp.js';
import { openDb } from '../../service/db/client.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { fundedWallet, jsonInit, payV2 } from '../payments/helpers.js';
import { postgresBinaries, startPrivatePostgres, type PrivatePostgres } from '../helpers/private-postgres.js';
import { makeTable, type TableFixture } from '../tables/helpers.js';

/**
 * Public Table API reads on a real streaming replica (db/read-pools.ts): a primary and a replica
 * made here (initdb, pg_basebackup -R), each on a port of its own. Skipped, saying why, where
 * PostgreSQL's server binaries are missing.
 */
const binaries = postgresBinaries();
const MAX_LAG_MS = 500;

describe.skipIf('missing' in binaries)(`reads from a streaming replica${'missing' in binaries ? ` (skipped: ${binaries.missing})` : ''}`, () => {
  let primary: PrivatePostgres;
  let replica: PrivatePostgres;
  let h: Harness;
  let t: TableFixture;
  /** A connection of the test's own to the replica: what it scanned, its replay paused or resumed. */
  let onReplica: postgres.Sql;
  let onPrimary: postgres.Sql;

  beforeAll(async () => {
    primary = await startPrivatePostgres();
    replica = await primary.replica();
    onReplica = postgres(replica.url, { max: 1, onnotice: () => {} });
    onPrimary = postgres(primary.url, { max: 1, onnotice: () => {} });
    const database = await openDb({ databaseUrl: primary.url });
    h = await startHarness(
      'postgres',
      {
        DATABASE_URL: primary.url,
        DATABASE_READ_URL: replica.url,
        SVC_REPLICA_MAX_LAG_MS: String(MAX_LAG_MS),
        SVC_REPLICA_CHECK_MS: '50',
        SVC_REPLICA_WAIT_MS: '200',
        // Each client of the tests below is its own address (X-Forwarded-For).
        SVC_TRUST_PROXY: '1',
      },
      { database },
    );
    t = await makeTable(h, {
      name: 'Notes',
      publicInsert: true,
      schema: { fields: [{ name: 'text', label: 'Text', type: 'string' }] },
    });
    await vi.waitFor(async () => expect(await replicaState()).toBe('up'), { timeout: 10_000 });
  }, 120_000);

  afterAll(async () => {
    await onReplica?.end();
    await onPrimary?.end();
    await h?.close();
    await replica?.close();
    await primary?.close();
  });

  const from = (address: string) => ({ 'x-forwarded-for': address });
  const insert = (text: string, address: string) => h.fetch(t.path, { method: 'POST', headers: from(address), json: { record: { text } } });
  const readRecord = (id: string, address: string) => h.fetch(`${t.path}/${id}`, { headers: from(address) });

  async function replicaState(node: Harness = h): Promise<string | undefined> {
    const body = (await (await node.fetch('/readyz')).json()) as { replicas?: { state: string }[] };
    return body.replicas?.[0]?.state;
  }

  /** Index and sequential scans of a table on the replica, as the replica counts them. */
  async function scansOnReplica(table = 'table_records'): Promise<number> {
    const [row] =
      await onReplica`select coalesce(sum(coalesce(idx_scan, 0) + coalesce(seq_scan, 0)), 0)::int as n from pg_stat_user_tables where relname = ${table}`;
    return row!.n as number;
  }

  /** Until the replica has replayed everything the primary has now. */
  async function replicaCaughtUp(): Promise<void> {
    const [now] = await onPrimary`select pg_current_wal_lsn()::text as lsn`;
    await vi.waitFor(
      async () => {
        const [row] = await onReplica`select pg_last_wal_replay_lsn() >= ${now!.lsn as string}::pg_lsn as ok`;
        expect(row!.ok).toBe(true);
      },
      { timeout: 10_000 },
    );
  }

  const publishFrom = (node: Harness, key: string, address: string, html: string) =>
    node.fetch('/api/v1/sites', { method: 'POST', key, headers: from(address), json: { requestId: crypto.randomUUID(), html } });

  it('public reads land on the replica (counted there); /readyz and /metrics show it', async () => {
    expect((await insert('hello', '10.0.0.1')).status).toBe(201);
    const before = await scansOnReplica();
    const counted = h.deps.readPools.readCounts().replica1 ?? 0;
    for (let i = 0; i < 20; i++) {
      const res = await h.fetch(t.path, { headers: from('10.0.1.1') });
      expect(res.status).toBe(200);
    }
    expect((h.deps.readPools.readCounts().replica1 ?? 0) - counted).toBeGreaterThanOrEqual(20);
    // The replica's own statistics. A PostgreSQL 15 backend flushes them when it goes idle, at most
    // once a second; what is left pending then waits for its idle timeout (PGSTAT_IDLE_INTERVAL, 10 s).
    // A 10 s wait missed that once in CI.
    await vi.waitFor(async () => expect((await scansOnReplica()) - before).toBeGreaterThanOrEqual(20), { timeout: 15_000 });
    const metrics = await (await h.fetch('/metrics')).text();
    expect(metrics).toMatch(/svc_replica_state\{replica="replica1",state="up"\} 1/);
    expect(metrics).toMatch(/svc_replica_lag_seconds\{replica="replica1"\} /);
  });

  it('read-your-writes under load: each writer reads its own record at once, on whichever pool', async () => {
    const counted = h.deps.readPools.readCounts().replica1 ?? 0;
    const missed: string[] = [];
    await Promise.all(
      Array.from({ length: 8 }, async (_, w) => {
        const address = `10.0.2.${w + 1}`;
        for (let i = 0; i < 25; i++) {
          const res = await insert(`w${w}-${i}`, address);
          expect(res.status).toBe(201);
          const { record } = (await res.json()) as { record: { id: string } };
          const read = await readRecord(record.id, address);
          if (read.status !== 200) missed.push(`${address} ${record.id}: ${read.status}`);
        }
      }),
    );
    expect(missed).toEqual([]);
    // Some of those reads were the replica's (else this test would prove nothing about it).
    expect((h.deps.readPools.readCounts().replica1 ?? 0) - counted).toBeGreaterThan(0);
  }, 60_000);

  it('a replica too far behind is out of rotation: reads go to the primary and see every write', async () => {
    await onReplica`select pg_wal_replay_pause()`;
    try {
      const res = await insert('while paused', '10.0.3.1');
      const { record } = (await res.json()) as { record: { id: string } };
      await vi.waitFor(async () => expect(await replicaState()).toBe('lagging'), { timeout: 10_000 });
      // Another client, which never wrote: the primary answers it.
      const primaryBefore = h.deps.readPools.readCounts().primary ?? 0;
      expect((await readRecord(record.id, '10.0.3.2')).status).toBe(200);
      expect((h.deps.readPools.readCounts().primary ?? 0) - primaryBefore).toBe(1);
    } finally {
      await onReplica`select pg_wal_replay_resume()`;
    }
    await vi.waitFor(async () => expect(await replicaState()).toBe('up'), { timeout: 10_000 });
  });

  it("site resolution and the Account API's list of sites land on the replica (counted there)", async () => {
    const { key } = await h.account();
    const slugs: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await publishFrom(h, key, '10.0.5.1', `<p>page ${i}</p>`);
      expect(res.status).toBe(201);
      slugs.push(((await res.json()) as { site: { slug: string } }).site.slug);
    }
    // Past the changes this node heard of: the replica may answer from here on.
    await replicaCaughtUp();
    const counted = h.deps.readPools.readCounts().replica1 ?? 0;
    const sitesBefore = await scansOnReplica('sites');
    const filesBefore = await scansOnReplica('site_files');
    for (const [i, slug] of slugs.entries()) {
      const page = await h.fetch(`/s/${slug}/`, { headers: from('10.0.5.2') });
      expect(page.status).toBe(200);
      expect(await page.text()).toContain(`page ${i}`);
    }
    const list = await h.fetch('/api/v1/sites', { key, headers: from('10.0.5.3') });
    expect(list.status).toBe(200);
    expect(((await list.json()) as { sites: { slug: string }[] }).sites.map((s) => s.slug).sort()).toEqual([...slugs].sort());
    // Each page: its site row and its file row; the list: one read.
    expect((h.deps.readPools.readCounts().replica1 ?? 0) - counted).toBeGreaterThanOrEqual(2 * slugs.length + 1);
    await vi.waitFor(
      async () => {
        expect((await scansOnReplica('sites')) - sitesBefore).toBeGreaterThanOrEqual(slugs.length + 1);
        expect((await scansOnReplica('site_files')) - filesBefore).toBeGreaterThanOrEqual(slugs.length);
      },
      { timeout: 10_000 },
    );
  });

  /**
   * A second node whose lag bound keeps a paused replica in rotation: every read below that sees a
   * write made while replay is paused was answered past it (the primary, after the bounded wait),
   * and would miss it if the write's position were not kept. The replica is checked to lack them.
   */
  describe('read-your-writes, with the replica paused and still in rotation', () => {
    let p: Harness;
    beforeAll(async () => {
      p = await startHarness(
        'postgres',
        {
          DATABASE_URL: primary.url,
          DATABASE_READ_URL: replica.url,
          SVC_REPLICA_MAX_LAG_MS: '600000',
          SVC_REPLICA_CHECK_MS: '50',
          SVC_REPLICA_WAIT_MS: '200',
          SVC_TRUST_PROXY: '1',
        },
        { database: await openDb({ databaseUrl: primary.url }), mount: (app, deps) => mountHostedMcp(app, deps) },
      );
      await vi.waitFor(async () => expect(await replicaState(p)).toBe('up'), { timeout: 10_000 });
    }, 60_000);
    afterAll(async () => {
      await p?.close();
    });

    /** Runs `during` with the replica's replay paused (resumed after, whatever happens). */
    async function whilePaused(during: () => Promise<void>): Promise<void> {
      await replicaCaughtUp();
      await onReplica`select pg_wal_replay_pause()`;
      try {
        await during();
        // Still in rotation (a check that timed out on a loaded machine may have taken it out for a moment).
        await vi.waitFor(async () => expect(await replicaState(p)).toBe('up'), { timeout: 10_000 });
      } finally {
        await onReplica`select pg_wal_replay_resume()`;
      }
      await vi.waitFor(async () => expect(await replicaState()).toBe('up'), { timeout: 10_000 });
    }

    const onReplicaSites = async (slug: string) => (await onReplica`select count(*)::int as n from sites where slug = ${slug}`)[0]!.n as number;

    it('a site published through the Account API: its writer sees the page, its account the list, any reader once the node heard of it', async () => {
      const { key } = await p.account();
      await whilePaused(async () => {
        const published = async () => ((await (await publishFrom(p, key, '10.0.6.1', '<p>fresh</p>')).json()) as { site: { slug: string } }).site.slug;
        const mine = await published();
        const page = await p.fetch(`/s/${mine}/`, { headers: from('10.0.6.1') });
        expect(page.status).toBe(200);
        expect(await page.text()).toContain('fresh');
        // The same account from another address (its dashboard, another tool): the list has it.
        const list = await p.fetch('/api/v1/sites', { key, headers: from('10.0.6.2') });
        expect(((await list.json()) as { sites: { slug: string }[] }).sites.map((s) => s.slug)).toEqual([mine]);
        // A reader that never wrote, on a site no one has read on this node: once its notification arrived.
        const other = await published();
        await vi.waitFor(async () => expect((await p.fetch(`/s/${other}/`, { headers: from('10.0.6.3') })).status).toBe(200), { timeout: 10_000 });
        expect(await onReplicaSites(mine)).toBe(0);
        expect(await onReplicaSites(other)).toBe(0);
      });
    });

    it('records inserted through the paid Agent API and through a hosted MCP tool: the writer reads them at once', async () => {
      const wallet = await fundedWallet(p, 1_000_000n);
      const pay = payV2(wallet);
      const app = (await (await pay(`${p.url}/api/x402/apps`, jsonInit('POST', { name: 'ryw', html: '<p>r</p>' }))).json()) as { app: { appId: string } };
      const created = await pay(
        `${p.url}/api/x402/apps/${app.app.appId}/tables`,
        jsonInit('POST', { name: 'Paid', schema: { fields: [{ name: 'text', label: 'Text', type: 'string' }] } }),
      );
      expect(created.status).toBe(201);
      const paidTable = ((await created.json()) as { table: { id: string; pathUrl: string } }).table;
      const owned = await makeTable(p, { name: 'Owned', schema: { fields: [{ name: 'text', label: 'Text', type: 'string' }] } });
      const mcp = new Client({ name: 'replica-test', version: '1.0.0' });
      await mcp.connect(
        new StreamableHTTPClientTransport(new URL(`${p.url}/mcp`), {
          requestInit: { headers: { authorization: `Bearer ${owned.key}`, ...from('10.0.6.5') } },
        }),
      );
      const texts = async (path: string, address: string) =>
        ((await (await p.fetch(path, { headers: from(address) })).json()) as { records: { fields: { text: string } }[] }).records.map((r) => r.fields.text);
      // Read once: this node caches the Table's row (a read on a row just looked up is the primary's outright).
      expect(await texts(new URL(paidTable.pathUrl).pathname, '10.0.6.9')).toEqual([]);
      try {
        await whilePaused(async () => {
          const inserted = await pay(`${p.url}/api/x402/tables/${paidTable.id}/records`, jsonInit('POST', { records: [{ text: 'paid' }] }, from('10.0.6.4')));
          expect(inserted.status).toBe(200);
          expect(await texts(new URL(paidTable.pathUrl).pathname, '10.0.6.4')).toEqual(['paid']);

          const result = await mcp.callTool({
            name: 'table_create_record',
            arguments: { appName: owned.siteSlug, table: owned.table.slug, record: { text: 'via mcp' } },
          });
          expect(result.isError ?? false).toBe(false);
          expect(await texts(owned.path, '10.0.6.5')).toEqual(['via mcp']);
          // Neither is on the paused replica.
          expect((await onReplica`select count(*)::int as n from table_records where fields->>'text' in ('paid', 'via mcp')`)[0]!.n).toBe(0);
        });
      } finally {
        await mcp.close();
      }
    }, 60_000);
  });

  it('stopping the replica loses nothing and serves on (no 5xx); it is back in rotation once started', async () => {
    const answers: number[] = [];
    const ids: string[] = [];
    let stopped = false;
    const load = (async () => {
      for (let i = 0; !stopped || i < 40; i++) {
        const res = await insert(`during ${i}`, '10.0.4.1');
        answers.push(res.status);
        if (res.status === 201) ids.push(((await res.json()) as { record: { id: string } }).record.id);
        answers.push((await h.fetch(t.path, { headers: from('10.0.4.2') })).status);
      }
    })();
    await replica.stop('immediate');
    await vi.waitFor(async () => expect(await replicaState()).toBe('down'), { timeout: 10_000 });
    stopped = true;
    await load;
    expect(answers.filter((s) => s >= 500)).toEqual([]);
    for (const id of ids) expect((await readRecord(id, '10.0.4.3')).status).toBe(200);
    await replica.start();
    await onReplica`select 1`.catch(() => {}); // its connection reopens
    await vi.waitFor(async () => expect(await replicaState()).toBe('up'), { timeout: 20_000 });
    for (const id of ids.slice(-5)) expect((await readRecord(id, '10.0.4.4')).status).toBe(200);
  }, 60_000);
});
