/**
 * Table API read throughput with one streaming replica against the primary alone: two `svc serve`
 * nodes on one primary (a PostgreSQL server and a `pg_basebackup -R` replica of it, started here on
 * ports of their own), one with DATABASE_READ_URL naming the replica; the same keyless list reads
 * (20 query strings, so reads are not all shared), loaded in turn, interleaved round by round.
 * On one machine both databases and both nodes share the same cores: this shows that reads move to
 * the replica and what routing costs, not the capacity a second machine adds.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { postgresBinaries, startPrivatePostgres } from '../test/helpers/private-postgres.js';
import { benchServiceEnv, cliPersonalKey, formatRatio, interleavedLoads, printTable, spawnService, waitForHttp } from './lib.js';

const ROUNDS = 3;
const SECONDS = 5;

export async function run(): Promise<void> {
  const found = postgresBinaries();
  if ('missing' in found) {
    console.log(`skipped: ${found.missing}`);
    return;
  }
  const primary = await startPrivatePostgres();
  const replica = await primary.replica();
  const nodes: ChildProcess[] = [];
  const dirs: string[] = [];
  try {
    const alone = await benchServiceEnv('replicas-primary', { DATABASE_URL: primary.url });
    const withReplica = await benchServiceEnv('replicas-replica', { DATABASE_URL: primary.url, DATABASE_READ_URL: replica.url });
    dirs.push(alone.dir, withReplica.dir);
    const key = cliPersonalKey(alone.env);
    for (const s of [alone, withReplica]) {
      nodes.push(spawnService(s.env));
      await waitForHttp(`${s.base}/readyz`);
    }
    const api = (path: string, body: unknown) =>
      fetch(`${alone.base}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const { site } = (await (await api('/api/v1/sites', { requestId: 'bench-replicas', html: '<p>bench</p>' })).json()) as { site: { id: string } };
    const tableRes = await api(`/api/v1/sites/${site.id}/tables`, {
      name: 'Items',
      schema: {
        fields: [
          { name: 'name', label: 'Name', type: 'string' },
          { name: 'n', label: 'N', type: 'number' },
        ],
      },
    });
    const { table } = (await tableRes.json()) as { table: { pathUrl: string; writeKey: string } };
    const path = new URL(table.pathUrl).pathname;
    for (let i = 0; i < 10; i++) {
      const records = Array.from({ length: 50 }, (_, j) => ({ name: `item ${i * 50 + j}`, n: i * 50 + j }));
      await fetch(`${alone.base}${path}`, {
        method: 'POST',
        headers: { 'x-svc-write-key': table.writeKey, 'content-type': 'application/json' },
        body: JSON.stringify({ records }),
      });
    }
    // Each node reads the table once (its row cached), then the replica answers the keyless reads.
    for (const s of [alone, withReplica]) await fetch(`${s.base}${path}`);
    await new Promise((resolve) => setTimeout(resolve, 1000)); // the replica replays the load and is checked
    const paths = Array.from({ length: 20 }, (_, i) => `${path}?limit=20&offset=${i * 20}`);
    const targets = [
      { label: 'primary alone', url: alone.base, options: { connections: 32, seconds: SECONDS, paths } },
      { label: 'one replica', url: withReplica.base, options: { connections: 32, seconds: SECONDS, paths } },
    ];
    const result = await interleavedLoads(targets, ROUNDS);
    printTable(
      `Table API keyless list reads (20 pages of 20 records, 32 connections, ${ROUNDS} interleaved rounds of ${SECONDS} s)`,
      result.medians,
      'primary alone',
    );
    console.log(`one replica / primary alone, req/s: ${formatRatio(result.ratio('one replica', 'primary alone'))}`);
    const metrics = await (await fetch(`${withReplica.base}/metrics`)).text();
    console.log(
      `reads by pool on the node with the replica: ${metrics
        .split('\n')
        .filter((l) => l.startsWith('svc_public_reads_total'))
        .join(', ')}`,
    );
  } finally {
    for (const node of nodes) node.kill('SIGTERM');
    await Promise.all(nodes.map((n) => new Promise((resolve) => (n.exitCode !== null ? resolve(null) : n.once('exit', resolve)))));
    await replica.close();
    await primary.close();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  }
}
