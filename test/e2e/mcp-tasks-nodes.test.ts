import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from '../helpers/cluster.js';
import { rpc2026 } from '../mcp/rpc-2026.js';

// A task of the hosted /mcp (MCP Tasks extension) started on one node and followed on another: two
// real service processes on one PostgreSQL database. PostgreSQL only: PGlite is one process's own.

const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } };

const rpc = (base: string, key: string, method: string, params: Record<string, unknown>) =>
  rpc2026(`${base}/mcp?toolsets=default,datasets`, method, params, { key, capabilities: TASKS });

describe.skipIf(!process.env.TEST_DATABASE_URL)('an MCP task across two nodes', { timeout: 180_000 }, () => {
  let cluster: Cluster;
  let key: string;

  beforeAll(async () => {
    cluster = await startCluster(2);
    key = await cluster.accountKey();
  });
  afterAll(() => cluster?.close());

  it('started on node A, answered by node B, and still there once A has stopped', async () => {
    const [a, b] = cluster.nodes as [(typeof cluster.nodes)[0], (typeof cluster.nodes)[0]];
    const site = await fetch(`${a.url}/api/v1/sites`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ requestId: `nodes-${Date.now()}`, html: '<h1>two nodes</h1>' }),
    });
    const appId = ((await site.json()) as { site: { id: string } }).site.id;
    const csv = ['name,qty', ...Array.from({ length: 2000 }, (_, i) => `item ${i},${i}`)].join('\n');
    const started = await rpc(a.url, key, 'tools/call', { name: 'account_create_dataset', arguments: { appId, fileName: 'items.csv', content: csv } });
    expect(started.result).toMatchObject({ resultType: 'task', status: 'working' });
    const taskId = String(started.result!.taskId);

    let seen: Record<string, unknown> | undefined;
    for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
      seen = (await rpc(b.url, key, 'tasks/get', { taskId })).result;
      if (seen?.status !== 'working') break;
    }
    expect(seen).toMatchObject({ status: 'completed', taskId });
    const dataset = (seen!.result as { structuredContent: { dataset: { pathUrl: string } } }).structuredContent.dataset;
    const page = (await (await fetch(`${dataset.pathUrl.replace(new URL(dataset.pathUrl).origin, b.url)}?limit=1&sortField=qty&sortDir=desc`)).json()) as {
      records: { fields: { qty: number } }[];
    };
    expect(page.records[0]!.fields.qty).toBe(1999);

    await a.stop();
    expect((await rpc(b.url, key, 'tasks/get', { taskId })).result).toMatchObject({ status: 'completed', taskId });
  });
});
