import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../service/accounts/accounts.js';
import { createPersonalKey } from '../../service/accounts/personal-keys.js';
import { loadConfig } from '../../service/config.js';
import { openDb, rowsOf } from '../../service/db/client.js';
import { SCOPES } from '../../shared/scopes.js';
import { createEmptyPostgresDatabase } from '../helpers/db.js';
import { startNode } from '../helpers/nodes.js';
import { PoolNestingError } from '../helpers/pool-nesting.js';

// A real node (`svc serve`) with SVC_DATABASE_POOL_MAX=1 on a new PostgreSQL database. It used to
// wait for good at start-up: the migration lock held the pool's only connection while the
// migrations waited for another. Anything that holds a connection of a pool and then asks the same
// pool for a second one (a transaction that queries the pool outside itself) hangs the same way, so
// every request here has a deadline.
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
});

const DEADLINE_MS = 15_000;

it('SVC_DATABASE_POOL_MAX: 1 is accepted; 0, a pool that never connects (every query would wait for good), is refused at start', () => {
  expect(loadConfig({ SVC_DATABASE_POOL_MAX: '1' }).databasePoolMax).toBe(1);
  expect(loadConfig({}).databasePoolMax).toBe(10);
  expect(() => loadConfig({ SVC_DATABASE_POOL_MAX: '0' })).toThrow(/SVC_DATABASE_POOL_MAX: at least 1 connection per pool/);
});

describe.runIf(process.env.TEST_DATABASE_URL)('a node with a pool of one connection (PostgreSQL)', { timeout: 120_000 }, () => {
  it('starts on an empty database, answers /healthz and /readyz, and writes and reads through the Account API and the Table API', async () => {
    const db = await createEmptyPostgresDatabase();
    cleanups.push(db.drop);
    const node = await startNode(db.url, { SVC_DATABASE_POOL_MAX: '1' }, { startTimeoutMs: 45_000 });
    cleanups.push(node.stop);
    const call = async (path: string, init: RequestInit = {}) => {
      try {
        return await fetch(`${node.url}${path}`, { ...init, signal: AbortSignal.timeout(DEADLINE_MS) });
      } catch (e) {
        throw new Error(`${init.method ?? 'GET'} ${path}: ${(e as Error).message}; the node's log:\n${node.log().slice(-3000)}`);
      }
    };
    expect(await (await call('/healthz')).json()).toEqual({ ok: true });
    expect((await call('/readyz')).status).toBe(200);

    const direct = await openDb({ databaseUrl: db.url, migrate: false, poolMax: 1 });
    cleanups.push(() => direct.close());
    const account = await createAccount(direct.db, { email: 'pool-of-one@example.com' });
    const { secret: key } = await createPersonalKey(direct.db, { accountId: account.id, name: 'pool', scopes: [...SCOPES] });
    const json = (method: string, body: unknown, headers: Record<string, string> = {}) => ({
      method,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
      body: JSON.stringify(body),
    });

    const published = await call('/api/v1/sites', json('POST', { requestId: 'one', html: '<h1>one</h1>' }));
    expect(published.status).toBe(201);
    const { site } = await published.json();
    const made = await call(
      `/api/v1/sites/${site.id}/tables`,
      json('POST', { name: 'Notes', schema: { fields: [{ name: 'a', label: 'A', type: 'string' }] } }),
    );
    expect(made.status).toBe(201);
    const { table } = await made.json();
    const tablePath = new URL(table.pathUrl).pathname;
    const writeKey = { 'x-svc-write-key': table.writeKey };

    // Writes and reads at once: the one connection serves them in turn.
    const written = await Promise.all(['x', 'y', 'z'].map((a) => call(tablePath, json('POST', { record: { a } }, writeKey))));
    expect(written.map((r) => r.status)).toEqual([201, 201, 201]);
    const [first] = await Promise.all(written.map((r) => r.json()));
    const recordId = first.record.id as string;
    const updated = await call(`${tablePath}/${recordId}`, json('PATCH', { fields: { a: 'x2' } }, writeKey));
    expect(updated.status).toBe(200);

    const [list, one, sites] = await Promise.all([
      call(tablePath),
      call(`${tablePath}/${recordId}`),
      call('/api/v1/sites', { headers: { authorization: `Bearer ${key}` } }),
    ]);
    expect(list.status).toBe(200);
    expect((await list.json()).records.map((r: { fields: { a: string } }) => r.fields.a).sort()).toEqual(['x2', 'y', 'z']);
    expect(one.status).toBe(200);
    expect((await one.json()).record.fields).toEqual({ a: 'x2' });
    expect((await sites.json()).total).toBe(1);

    expect((await call(`${tablePath}/${recordId}`, { method: 'DELETE', headers: writeKey })).status).toBe(200);
    expect((await call(`/s/${site.slug}/`)).status).toBe(200);
  });

  it('in the tests, a statement on a pool inside a transaction of that same pool fails at once (test/helpers/pool-nesting.ts)', async () => {
    const db = await createEmptyPostgresDatabase();
    cleanups.push(db.drop);
    const database = await openDb({ databaseUrl: db.url, poolMax: 1 });
    cleanups.push(() => database.close());
    const nested = database.db.transaction(async (tx) => {
      await tx.execute(sql`select 1`);
      await database.db.execute(sql`select 2`); // the pool, not tx: waits for good at a pool of one
    });
    // Refused before it is sent (drizzle wraps the error in its own).
    const refused = await nested.then(
      () => undefined,
      (e: Error) => e,
    );
    expect(refused?.cause ?? refused).toBeInstanceOf(PoolNestingError);
    // Through the transaction, and on the pool once it has ended: as usual.
    const n = await database.db.transaction(async (tx) => rowsOf<{ n: number }>(await tx.execute(sql`select 3 as n`))[0]!.n);
    expect(n).toBe(3);
    expect(rowsOf<{ n: number }>(await database.db.execute(sql`select 4 as n`))[0]!.n).toBe(4);
  });
});
