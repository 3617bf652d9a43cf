import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CoalescedReads } from '../../service/tables/coalesced-reads.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { getJson, makeTable } from './helpers.js';

/** A promise a test settles by hand. */
function gate<T = void>(): { promise: Promise<T>; open: (value: T) => void; fail: (e: unknown) => void } {
  let open!: (value: T) => void;
  let fail!: (e: unknown) => void;
  const promise = new Promise<T>((a, b) => {
    open = a;
    fail = b;
  });
  return { promise, open, fail };
}

describe('CoalescedReads', () => {
  it('reads share a run that has not started; one that arrives after it started gets the next run', async () => {
    const arrivals: boolean[] = [];
    const reads = new CoalescedReads<string>((shared) => arrivals.push(shared));
    const runs: ReturnType<typeof gate<string>>[] = [];
    const run = () => {
      const g = gate<string>();
      runs.push(g);
      return g.promise;
    };
    const first = reads.read('k', run);
    const joined = reads.read('k', run); // before the run started: it shares it
    await vi.waitFor(() => expect(runs).toHaveLength(1));
    const later = [reads.read('k', run), reads.read('k', run), reads.read('k', run)];
    await new Promise((r) => setTimeout(r, 20));
    expect(runs).toHaveLength(1); // nothing more starts while the first runs
    runs[0]!.open('before');
    expect(await first).toBe('before');
    expect(await joined).toBe('before');
    await vi.waitFor(() => expect(runs).toHaveLength(2));
    runs[1]!.open('after');
    expect(await Promise.all(later)).toEqual(['after', 'after', 'after']);
    expect(arrivals).toEqual([false, true, false, true, true]);
    // Idle again: the next read runs on its own.
    expect(await reads.read('k', async () => 'fresh')).toBe('fresh');
  });

  it('a failed run fails only its own readers; other keys never wait on each other', async () => {
    const reads = new CoalescedReads<string>();
    const held = gate<string>();
    let started = false;
    const failing = reads.read('a', () => {
      started = true;
      return held.promise;
    });
    await vi.waitFor(() => expect(started).toBe(true));
    const next = reads.read('a', async () => 'next');
    expect(await reads.read('b', async () => 'other key')).toBe('other key');
    held.fail(new Error('statement timeout'));
    await expect(failing).rejects.toThrow('statement timeout');
    expect(await next).toBe('next');
  });
});

describe.each(dbKinds())('Table API: identical reads at once (%s)', (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(kind);
  });
  afterAll(async () => h?.close());

  const shared = async () => (await h.deps.metrics.tableReads.get()).values.find((v) => v.labels.run === 'shared')?.value ?? 0;
  const names = (body: { records: { fields: { name: string } }[] }) => body.records.map((r) => r.fields.name);

  it('share a statement, and each sees every write acknowledged before it was sent', async () => {
    const t = await makeTable(h, { name: 'Pets', schema: { fields: [{ name: 'name', label: 'Name', type: 'string' }] } });
    const insert = (name: string) => h.fetch(t.path, { method: 'POST', headers: { 'x-svc-write-key': t.table.writeKey }, json: { record: { name } } });
    expect((await insert('Rex')).status).toBe(201);
    expect(names((await getJson(h, t.path)).body)).toEqual(['Rex']);

    // The next read statement runs, then its answer is held back until the test lets it go.
    // Every read's statements run through `tableLists.statements` (table-lists.ts).
    const statementsOf = h.deps.tableLists.statements;
    const run = statementsOf.run;
    const release = gate();
    let statements = 0;
    statementsOf.run = async (statement, values) => {
      const n = ++statements;
      const answer = await run(statement, values);
      if (n === 1) await release.promise;
      return answer;
    };
    try {
      const first = getJson(h, t.path);
      await vi.waitFor(() => expect(statements).toBe(1));
      expect((await insert('Tom')).status).toBe(201); // acknowledged while the first read is held
      const sharedBefore = await shared();
      const later = Array.from({ length: 10 }, () => getJson(h, t.path));
      // The first of the ten gathers the next statement, the other nine join it.
      await vi.waitFor(async () => expect((await shared()) - sharedBefore).toBe(9));
      expect(statements).toBe(1);
      release.open();
      expect(names((await first).body)).toEqual(['Rex']); // its statement ran before the write
      for (const r of await Promise.all(later)) {
        expect(r.status).toBe(200);
        expect(names(r.body)).toEqual(['Rex', 'Tom']);
      }
      expect(statements).toBe(2);
    } finally {
      statementsOf.run = run;
    }
  });
});
