import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { getJson, makeTable, type TableFixture } from './helpers.js';

type Prepared = { execute: (values?: unknown) => Promise<unknown> };
type Session = { prepareQuery: (...args: unknown[]) => Prepared };

// A read with a personal key (x-svc-api-key) is two statements: the key's lookup, then the read. A
// key this node let read the site lately has its read start beside the lookup (read-key-hints.ts);
// the answer still waits for the lookup, and a key refused there gets the refusal, never the rows.
describe.each(dbKinds())('Table API reads with a personal key (%s)', (kind) => {
  let h: Harness;
  let t: TableFixture;
  const names = (body: { records: { fields: { name: string } }[] }) => body.records.map((r) => r.fields.name);

  beforeAll(async () => {
    h = await startHarness(kind);
    t = await makeTable(h, { name: 'Secrets', requireReadKey: true, schema: { fields: [{ name: 'name', label: 'Name', type: 'string' }] } });
    const res = await h.fetch(t.path, { method: 'POST', headers: { 'x-svc-write-key': t.table.writeKey }, json: { record: { name: 'Rex' } } });
    expect(res.status).toBe(201);
  });
  afterAll(async () => h?.close());

  /** Holds every personal-key lookup on the main handle until `release`; counts the reads run meanwhile. */
  function holdLookups() {
    const db = h.deps.db as unknown as { execute: (q: unknown) => Promise<unknown> };
    const execute = db.execute;
    const reads = h.deps.tableReads._.session as unknown as Session;
    const prepareQuery = reads.prepareQuery;
    let open!: () => void;
    const released = new Promise<void>((r) => (open = r));
    const seen = { lookups: 0, reads: 0 };
    db.execute = function (this: unknown, q: unknown) {
      const text = JSON.stringify((q as { queryChunks?: unknown }).queryChunks ?? '');
      if (!text.includes('personal_keys')) return execute.call(this, q);
      seen.lookups++;
      return released.then(() => execute.call(this, q));
    };
    reads.prepareQuery = function (this: unknown, ...args: unknown[]) {
      seen.reads++;
      return prepareQuery.apply(this, args);
    };
    return {
      seen,
      release: () => open(),
      restore: () => {
        db.execute = execute;
        reads.prepareQuery = prepareQuery;
      },
    };
  }

  it('a key let in before has its read run beside its lookup, answered once the lookup lets it in', async () => {
    const key = { 'x-svc-api-key': t.key };
    const first = await getJson(h, t.path, key); // the node learns the key reads this site
    expect(first.status).toBe(200);
    const held = holdLookups();
    try {
      let answered = false;
      const second = getJson(h, t.path, key).then((r) => {
        answered = true;
        return r;
      });
      await expect.poll(() => held.seen).toEqual({ lookups: 1, reads: 1 }); // the read ran while the lookup is held
      await new Promise((r) => setTimeout(r, 50));
      expect(answered).toBe(false); // and waits for it
      held.release();
      const r = await second;
      expect(r.status).toBe(200);
      expect(names(r.body)).toEqual(['Rex']);
    } finally {
      held.restore();
    }
  });

  it('a key revoked since is refused even though its read already ran, and its next read waits for the lookup', async () => {
    const other = await makeTable(h, { name: 'Other', requireReadKey: true, schema: { fields: [{ name: 'name', label: 'Name', type: 'string' }] } });
    const key = { 'x-svc-api-key': other.key };
    expect((await getJson(h, other.path, key)).status).toBe(200);
    await h.deps.db.execute(sql`update personal_keys set revoked_at = now() where account_id = ${other.accountId}`);
    const refused = await getJson(h, other.path, key);
    expect(refused.status).toBe(401);
    expect(JSON.stringify(refused.body)).not.toContain('records');
    // The refusal dropped the hint: the next read runs only after its lookup.
    const held = holdLookups();
    try {
      const again = getJson(h, other.path, key);
      await expect.poll(() => held.seen.lookups).toBe(1);
      await new Promise((r) => setTimeout(r, 50));
      expect(held.seen.reads).toBe(0);
      held.release();
      expect((await again).status).toBe(401);
    } finally {
      held.restore();
    }
  });

  it('another account’s key is refused every time, and never has a read run for it', async () => {
    const stranger = { 'x-svc-api-key': (await h.account()).key };
    const held = holdLookups();
    held.release();
    try {
      for (let i = 0; i < 3; i++) expect((await getJson(h, t.path, stranger)).status).toBe(403);
      // Three lookups each: the fast path's, whose refusal goes to the app, which asks on this node's
      // cached table row and again on a fresh one.
      expect(held.seen).toEqual({ lookups: 9, reads: 0 });
    } finally {
      held.restore();
    }
  });
});
