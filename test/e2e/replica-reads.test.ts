import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openDb } from '../../service/db/client.js';
import { startHarness, type Harness } from '../helpers/harness.js';
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

  beforeAll(async () => {
    primary = await startPrivatePostgres();
    replica = await primary.replica();
    onReplica = postgres(replica.url, { max: 1, onnotice: () => {} });
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
    await h?.close();
    await replica?.close();
    await primary?.close();
  });

  const from = (address: string) => ({ 'x-forwarded-for': address });
  const insert = (text: string, address: string) => h.fetch(t.path, { method: 'POST', headers: from(address), json: { record: { text } } });
  const readRecord = (id: string, address: string) => h.fetch(`${t.path}/${id}`, { headers: from(address) });

  async function replicaState(): Promise<string | undefined> {
    const body = (await (await h.fetch('/readyz')).json()) as { replicas?: { state: string }[] };
    return body.replicas?.[0]?.state;
  }

  /** Index and sequential scans of the records' table on the replica, as the replica counts them. */
  async function scansOnReplica(): Promise<number> {
    const [row] =
      await onReplica`select coalesce(sum(coalesce(idx_scan, 0) + coalesce(seq_scan, 0)), 0)::int as n from pg_stat_user_tables where relname = 'table_records'`;
    return row!.n as number;
  }

  it('public reads land on the replica (counted there); /readyz and /metrics show it', async () => {
    expect((await insert('hello', '10.0.0.1')).status).toBe(201);
    const before = await scansOnReplica();
    const counted = h.deps.readPools.readCounts().replica1 ?? 0;
    for (let i = 0; i < 20; i++) {
      const res = await h.fetch(t.path, { headers: from('10.0.1.1') });
      expect(res.status).toBe(200);
    }
    expect((h.deps.readPools.readCounts().replica1 ?? 0) - counted).toBeGreaterThanOrEqual(20);
    // The replica's own statistics (flushed by its backends within a second or so).
    await vi.waitFor(async () => expect((await scansOnReplica()) - before).toBeGreaterThanOrEqual(20), { timeout: 10_000 });
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
