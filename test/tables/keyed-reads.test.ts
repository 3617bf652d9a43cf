import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Clock } from '../../service/kernel/clock.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { getJson, makeTable, type TableFixture } from './helpers.js';

// A read with a personal key (x-svc-api-key): each node keeps the keys it looked up lately, and a
// read with a kept key is one statement that checks, inside it, that the key and its account are
// still the rows the node read (svc_personal_key_current, migration 0014; read-keys.ts). A change
// made anywhere (here: straight in the database, as another node would) refuses the next read.
describe.each(dbKinds())('Table API reads with a personal key (%s)', (kind) => {
  let h: Harness;
  let t: TableFixture;
  let offsetMs = 0;
  const clock: Clock = { now: () => new Date(Date.now() + offsetMs) };
  const names = (body: { records: { fields: { name: string } }[] }) => body.records.map((r) => r.fields.name);
  const secretTable = (name: string) => makeTable(h, { name, requireReadKey: true, schema: { fields: [{ name: 'name', label: 'Name', type: 'string' }] } });

  beforeAll(async () => {
    h = await startHarness(kind, {}, { clock });
    t = await secretTable('Secrets');
    const res = await h.fetch(t.path, { method: 'POST', headers: { 'x-svc-write-key': t.table.writeKey }, json: { record: { name: 'Rex' } } });
    expect(res.status).toBe(201);
  });
  afterAll(async () => h?.close());

  /** Counts the personal-key lookups (main handle) and the Table API read statements (table-lists.ts `statements`) from now on. */
  function countStatements() {
    const db = h.deps.db as unknown as { execute: (q: unknown) => Promise<unknown> };
    const execute = db.execute;
    const statements = h.deps.tableLists.statements;
    const run = statements.run;
    const seen = { lookups: 0, reads: 0 };
    db.execute = function (this: unknown, q: unknown) {
      if (JSON.stringify((q as { queryChunks?: unknown }).queryChunks ?? '').includes('personal_keys')) seen.lookups++;
      return execute.call(this, q);
    };
    statements.run = (statement, values) => {
      seen.reads++;
      return run(statement, values);
    };
    return {
      seen,
      restore: () => {
        db.execute = execute;
        statements.run = run;
      },
    };
  }

  it('a key read with before is not looked up again: a list and a record are one statement each', async () => {
    const key = { 'x-svc-api-key': t.key };
    expect((await getJson(h, t.path, key)).status).toBe(200); // the node keeps the key
    const counted = countStatements();
    try {
      const list = await getJson(h, t.path, key);
      expect(list.status).toBe(200);
      expect(names(list.body)).toEqual(['Rex']);
      const record = await getJson(h, `${t.path}/${list.body.records[0].id}`, key);
      expect(record.status).toBe(200);
      expect(record.body.record.fields.name).toBe('Rex');
      expect(counted.seen).toEqual({ lookups: 0, reads: 2 });
    } finally {
      counted.restore();
    }
  });

  it('a key revoked elsewhere is refused at its next read, and its rows are never sent', async () => {
    const other = await secretTable('Revoked');
    const key = { 'x-svc-api-key': other.key };
    expect((await getJson(h, other.path, key)).status).toBe(200);
    expect((await getJson(h, other.path, key)).status).toBe(200); // read with the kept key
    await h.deps.db.execute(sql`update personal_keys set revoked_at = now() where account_id = ${other.accountId}`);
    for (const path of [other.path, `${other.path}/1`]) {
      const refused = await getJson(h, path, key);
      expect(refused.status).toBe(401);
      expect(refused.body.error.message).toContain('the key is revoked');
      expect(JSON.stringify(refused.body)).not.toContain('Rex');
    }
  });

  it('a key whose account is suspended elsewhere is refused at its next read', async () => {
    const other = await secretTable('Suspended');
    const key = { 'x-svc-api-key': other.key };
    expect((await getJson(h, other.path, key)).status).toBe(200);
    expect((await getJson(h, other.path, key)).status).toBe(200); // read with the kept key
    await h.deps.db.execute(sql`update accounts set suspended_at = now(), suspension_reason = 'spam' where id = ${other.accountId}`);
    const refused = await getJson(h, other.path, key);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('account_suspended');
    await h.deps.db.execute(sql`update accounts set suspended_at = null, suspension_reason = null where id = ${other.accountId}`);
    expect((await getJson(h, other.path, key)).status).toBe(200);
  });

  it('a kept key is looked up again after a minute, which records its use', async () => {
    const other = await secretTable('Used');
    const key = { 'x-svc-api-key': other.key };
    const lastUsed = async () =>
      (await h.deps.db.execute(sql`select last_used_at::text as at from personal_keys where account_id = ${other.accountId}`)) as unknown;
    expect((await getJson(h, other.path, key)).status).toBe(200);
    const before = JSON.stringify(await lastUsed());
    offsetMs += 61_000;
    const counted = countStatements();
    try {
      expect((await getJson(h, other.path, key)).status).toBe(200);
      expect(counted.seen).toEqual({ lookups: 1, reads: 1 });
      expect((await getJson(h, other.path, key)).status).toBe(200); // kept again, with the version its use made
      expect(counted.seen).toEqual({ lookups: 1, reads: 2 });
    } finally {
      counted.restore();
    }
    expect(JSON.stringify(await lastUsed())).not.toBe(before);
  });

  it('another account’s key is refused every time, and never has a read run for it', async () => {
    const stranger = { 'x-svc-api-key': (await h.account()).key };
    const counted = countStatements();
    try {
      for (let i = 0; i < 3; i++) expect((await getJson(h, t.path, stranger)).status).toBe(403);
      // Three lookups each: the fast path's, whose refusal goes to the app, which asks on this node's
      // cached table row and again on a fresh one.
      expect(counted.seen).toEqual({ lookups: 9, reads: 0 });
    } finally {
      counted.restore();
    }
  });
});
