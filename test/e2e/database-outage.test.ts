import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../service/accounts/accounts.js';
import { createPersonalKey } from '../../service/accounts/personal-keys.js';
import { openDb } from '../../service/db/client.js';
import { SCOPES } from '../../shared/scopes.js';
import { isNetworkFault, isPostgresClosedSocketWrite } from '../../cli/process-faults.js';
import { createEmptyPostgresDatabase } from '../helpers/db.js';
import { startNode, type ServiceNode } from '../helpers/nodes.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';

// Two real nodes (`svc serve`) on one new PostgreSQL database: they start together on the empty
// database (the migration lock lets one migrate), then the database goes away under node A's write
// traffic (a TCP proxy drops every connection and refuses new ones) and comes back.
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
});

async function node(databaseUrl: string): Promise<ServiceNode> {
  const started = await startNode(databaseUrl);
  cleanups.push(started.stop);
  return started;
}

describe.runIf(process.env.TEST_DATABASE_URL)('database outage with two nodes (PostgreSQL)', { timeout: 240_000 }, () => {
  it('both nodes start on an empty database; an outage answers 503 with Retry-After, then the node recovers, losing nothing acknowledged', async () => {
    const db = await createEmptyPostgresDatabase();
    cleanups.push(db.drop);
    const pgPort = Number(new URL(db.url).port || 5432);
    const proxy = await startTcpProxy(pgPort, new URL(db.url).hostname);
    cleanups.push(proxy.close);
    const viaProxy = new URL(db.url);
    viaProxy.host = `127.0.0.1:${proxy.port}`;

    const [a, b] = await Promise.all([node(viaProxy.toString()), node(db.url)]);

    const direct = await openDb({ databaseUrl: db.url, migrate: false });
    cleanups.push(() => direct.close());
    const account = await createAccount(direct.db, { email: 'outage@example.com' });
    const { secret: key } = await createPersonalKey(direct.db, { accountId: account.id, name: 'outage', scopes: [...SCOPES] });
    const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const publish = async (i: number) => {
      const t0 = Date.now();
      const res = await fetch(`${a.url}/api/v1/sites`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ requestId: `o-${i}`, html: `<p>${i}</p>` }),
      }).catch((e: Error) => {
        // A node that dropped the connection: say why, from its own log.
        throw new Error(
          `publish ${i}: ${e.message} (${(e.cause as Error)?.message}); node A exit ${a.child.exitCode ?? 'none'}, its log:\n${a.log().slice(-3000)}`,
        );
      });
      const body = await res.json();
      return { status: res.status, ms: Date.now() - t0, retryAfter: res.headers.get('retry-after'), id: body.site?.id as string | undefined };
    };
    expect((await publish(0)).status).toBe(201);

    // Writes in flight when the database goes away, and more while it is gone.
    const inFlight = Promise.all([...Array(12).keys()].map((i) => publish(100 + i)));
    await new Promise((r) => setTimeout(r, 30));
    await proxy.cut();
    const during = await Promise.all([...Array(6).keys()].map((i) => publish(200 + i)));
    const results = [...(await inFlight), ...during];
    for (const r of results) {
      expect([201, 503]).toContain(r.status);
      // Nothing waits past the 5 s connect timeout (the reconnect backoff is capped at 0.5 s).
      expect(r.ms).toBeLessThan(6000);
      if (r.status === 503) expect(r.retryAfter).toBe('5');
    }
    for (const r of during) expect(r.status).toBe(503);
    const ready = await fetch(`${a.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ ok: false, database: 'down' });
    expect(a.child.exitCode).toBeNull();
    // The other node, on its own connections, never noticed.
    expect((await fetch(`${b.url}/readyz`)).status).toBe(200);

    await proxy.restore();
    let back = 0;
    for (let i = 0; i < 40 && back !== 201; i++) {
      back = (await publish(300 + i)).status;
      if (back !== 201) await new Promise((r) => setTimeout(r, 250));
    }
    expect(back).toBe(201);
    expect((await fetch(`${a.url}/readyz`)).status).toBe(200);
    expect(a.child.exitCode).toBeNull();

    // Every acknowledged site exists, as node B sees it.
    const list = await (await fetch(`${b.url}/api/v1/sites?limit=200`, { headers: auth })).json();
    const ids = new Set(list.sites.map((s: { id: string }) => s.id));
    for (const r of results.filter((x) => x.status === 201)) expect(ids.has(r.id)).toBe(true);
    expect(a.log()).not.toMatch(/uncaught exception/);
  });
});

describe.runIf(process.env.TEST_DATABASE_URL)('LISTEN across an outage (PostgreSQL)', { timeout: 60_000 }, () => {
  it('a subscription is established again when its connection comes back, says so, and hears what is sent after', async () => {
    const db = await createEmptyPostgresDatabase();
    cleanups.push(db.drop);
    const proxy = await startTcpProxy(Number(new URL(db.url).port || 5432), new URL(db.url).hostname);
    cleanups.push(proxy.close);
    const viaProxy = new URL(db.url);
    viaProxy.host = `127.0.0.1:${proxy.port}`;
    const listening = await openDb({ databaseUrl: viaProxy.toString() });
    cleanups.push(() => listening.close());
    const sender = await openDb({ databaseUrl: db.url, migrate: false });
    cleanups.push(() => sender.close());

    const heard: string[] = [];
    let established = 0;
    const stop = listening.listen(
      'svc_test_channel',
      (p) => heard.push(p),
      () => established++,
    );
    cleanups.push(stop);
    const until = async (what: () => boolean, label: string) => {
      for (let i = 0; i < 100 && !what(); i++) await new Promise((r) => setTimeout(r, 100));
      expect(what(), label).toBe(true);
    };
    await until(() => established === 1, 'listening');
    await sender.db.execute(sql`select pg_notify('svc_test_channel', 'one')`);
    await until(() => heard.includes('one'), 'first message');

    await proxy.cut();
    await sender.db.execute(sql`select pg_notify('svc_test_channel', 'lost')`);
    await proxy.restore();
    await until(() => established === 2, 'listening again after the outage');
    await sender.db.execute(sql`select pg_notify('svc_test_channel', 'two')`);
    await until(() => heard.includes('two'), 'a message after the outage');
    expect(heard).toEqual(['one', 'two']);
  });
});

describe('database driver faults the process survives', () => {
  it('is recognised by its stack in the driver, and nothing else is', () => {
    const fault = new TypeError("Cannot read properties of null (reading 'write')");
    fault.stack = `TypeError: Cannot read properties of null (reading 'write')\n    at nextWrite (/app/node_modules/postgres/src/connection.js:255:22)\n    at Immediate.<anonymous>`;
    expect(isPostgresClosedSocketWrite(fault)).toBe(true);
    const ours = new TypeError("Cannot read properties of null (reading 'write')");
    ours.stack = `TypeError: Cannot read properties of null (reading 'write')\n    at save (/app/service/sites/sites.ts:10:1)`;
    expect(isPostgresClosedSocketWrite(ours)).toBe(false);
    expect(isPostgresClosedSocketWrite(new Error('boom'))).toBe(false);
  });

  it('a socket-level network fault is survived, whatever its port; other errors are not', () => {
    const fault = (message: string, code: string, syscall: string) => Object.assign(new Error(message), { code, syscall });
    expect(isNetworkFault(fault('connect ECONNREFUSED 127.0.0.1:40621', 'ECONNREFUSED', 'connect'))).toBe(true);
    expect(isNetworkFault(fault('read ECONNRESET', 'ECONNRESET', 'read'))).toBe(true);
    expect(isNetworkFault(fault('write EPIPE', 'EPIPE', 'write'))).toBe(true);
    expect(isNetworkFault(fault("ENOENT: no such file or directory, open 'x'", 'ENOENT', 'open'))).toBe(false);
    expect(isNetworkFault(fault('read ECONNRESET', 'ECONNRESET', 'open'))).toBe(false);
    expect(isNetworkFault(new Error('read ECONNRESET'))).toBe(false);
    expect(isNetworkFault('ECONNRESET')).toBe(false);
  });
});
