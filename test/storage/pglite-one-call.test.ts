import fs from 'node:fs';
import { PGlite, types } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { oneCallClient, type OneCallClient } from '../../service/db/pglite-one-call.js';

/** A PGlite from the migrated template, and the number of calls made into its wasm PostgreSQL so far. */
async function countedPglite(): Promise<{ pg: PGlite; calls: () => number }> {
  const pg = await PGlite.create({ loadDataDir: new Blob([fs.readFileSync(inject('pgliteTemplate'))]) });
  let calls = 0;
  const raw = pg.execProtocolRaw.bind(pg);
  pg.execProtocolRaw = (message, options) => {
    calls++;
    return raw(message, options);
  };
  return { pg, calls: () => calls };
}

// The client drizzle uses on PGlite: each statement is one call into the wasm database, and every
// answer, error, lock and notification is what PGlite's own query() gives.
describe('PGlite statements in one call', () => {
  let pg: PGlite;
  let fast: OneCallClient;
  let calls = () => 0;
  // drizzle's parsers: dates and times stay strings
  const drizzleParsers = { [types.TIMESTAMP]: (v: string) => v, [types.TIMESTAMPTZ]: (v: string) => v, [types.DATE]: (v: string) => v };

  beforeAll(async () => {
    ({ pg, calls } = await countedPglite());
    fast = oneCallClient(pg);
    await pg.exec(`create table probe (id int primary key, name text unique, doc jsonb, at timestamptz, tags text[], big int8, ok bool, price numeric(10,2))`);
  });
  afterAll(async () => pg?.close());

  /** Both clients' answers to the same statement, the fast one asserted to be one call. */
  async function both(text: string, params: unknown[] = [], options?: Parameters<PGlite['query']>[2]) {
    const before = calls();
    const mine = await fast.query(text, params, options);
    expect(calls() - before).toBe(1);
    const theirs = await pg.query(text, params, options);
    return { mine, theirs };
  }

  it('answers every column type, in both row modes and with drizzle parsers, exactly as PGlite query() does', async () => {
    await pg.query(
      `insert into probe values (1, 'ann', '{"a":[1,"x"],"n":null}', '2026-11-26T10:00:00Z', '{x,"y z"}', 9007199254740993, true, 12.5), (2, null, null, null, null, null, null, null)`,
    );
    const text = 'select id, name, doc, at, tags, big, ok, price, at::date as day from probe order by id';
    for (const options of [undefined, { rowMode: 'array' as const }, { rowMode: 'array' as const, parsers: drizzleParsers }, { parsers: drizzleParsers }]) {
      const { mine, theirs } = await both(text, [], options);
      expect(mine).toEqual(theirs);
      expect(mine.rows).toHaveLength(2);
    }
    const { mine } = await both(text, [], { parsers: drizzleParsers });
    expect(mine.rows[0]).toMatchObject({ doc: { a: [1, 'x'], n: null }, at: '2026-11-26 10:00:00+00', tags: ['x', 'y z'], big: 9007199254740993n, ok: true });
  });

  it('sends strings, numbers, bigints, booleans, Dates and nulls as PGlite does', async () => {
    const params = ["it's ‘quoted’ \\ and ünïcode 🎉", 42, 12345678901234567890n, false, new Date('2026-01-02T03:04:05.678Z'), null, undefined, 1.5];
    const text =
      'select $1::text as s, $2::int as n, $3::numeric as big, $4::bool as b, $5::timestamptz as at, $6::text as nul, $7::int as undef, $8::float8 as f';
    const { mine, theirs } = await both(text, params);
    expect(mine).toEqual(theirs);
    expect(mine.rows[0]).toMatchObject({ s: params[0], n: 42, b: false, nul: null, undef: null, f: 1.5 });
    // A parameter whose type PostgreSQL infers from the statement
    expect((await both('select count(*)::int as n from probe where id = $1 and ok = $2', [1, true])).mine.rows).toEqual([{ n: 1 }]);
  });

  it('counts the rows an insert, update or delete touched', async () => {
    const inserted = await fast.query('insert into probe (id, name) values ($1, $2), ($3, $4)', [10, 'a10', 11, 'a11']);
    expect(inserted).toMatchObject({ affectedRows: 2, command: 'INSERT', rowCount: 2 });
    const updated = await fast.query<{ id: number }>('update probe set ok = $1 where id >= $2 returning id', [true, 10]);
    expect(updated).toMatchObject({ affectedRows: 2, command: 'UPDATE', rows: [{ id: 10 }, { id: 11 }] });
    expect(await fast.query('delete from probe where id >= $1', [10])).toMatchObject({ affectedRows: 2, command: 'DELETE' });
  });

  it('hands objects, arrays and options it does not take to PGlite query()', async () => {
    const before = calls();
    const r = await fast.query<{ doc: unknown; tags: string[] }>('select $1::jsonb as doc, $2::text[] as tags', [{ k: [1, 2] }, ['a', 'b c']]);
    expect(r.rows).toEqual([{ doc: { k: [1, 2] }, tags: ['a', 'b c'] }]);
    expect(calls() - before).toBeGreaterThan(1); // PGlite's own path: one call per message
  });

  it('an error carries its SQLSTATE and statement, and the next statement runs normally', async () => {
    await fast.query('insert into probe (id, name) values ($1, $2)', [20, 'dup']);
    const err = await fast.query('insert into probe (id, name) values ($1, $2)', [21, 'dup']).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: '23505', query: 'insert into probe (id, name) values ($1, $2)' });
    expect((await fast.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
    expect(pg.isInTransaction()).toBe(false);
  });

  it('a transaction that fails writes nothing; one that commits writes everything', async () => {
    const failed = await fast
      .transaction(async (tx) => {
        await tx.query('insert into probe (id, name) values ($1, $2)', [30, 'first']);
        await tx.query('insert into probe (id, name) values ($1, $2)', [31, 'dup']); // taken above
      })
      .catch((e: unknown) => e);
    expect(failed).toMatchObject({ code: '23505' });
    expect((await fast.query('select count(*)::int as n from probe where id = $1', [30])).rows).toEqual([{ n: 0 }]);
    await fast.transaction(async (tx) => {
      await tx.query('insert into probe (id, name) values ($1, $2)', [30, 'first']);
      await tx.query('insert into probe (id, name) values ($1, $2)', [31, 'second']);
    });
    expect((await fast.query('select count(*)::int as n from probe where id in ($1, $2)', [30, 31])).rows).toEqual([{ n: 2 }]);
  });

  it('a statement sent while a transaction is open runs after it, never inside it', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const order: string[] = [];
    const tx = fast.transaction(async (t) => {
      await t.query('insert into probe (id, name) values ($1, $2)', [40, 'in-tx']);
      await held;
      order.push('commit');
    });
    await new Promise((r) => setTimeout(r, 10));
    const outside = fast.query<{ n: number }>('select count(*)::int as n from probe where id = $1', [40]).then((r) => {
      order.push('outside');
      return r.rows[0]!.n;
    });
    await new Promise((r) => setTimeout(r, 30));
    expect(order).toEqual([]); // still waiting for the transaction
    release();
    await tx;
    expect(await outside).toBe(1);
    expect(order).toEqual(['commit', 'outside']);
  });

  it('delivers notifications a statement raises', async () => {
    const heard: string[] = [];
    const unlisten = await pg.listen('probe_channel', (payload) => heard.push(payload));
    await fast.query('select pg_notify($1, $2)', ['probe_channel', 'hello']);
    await new Promise((r) => setTimeout(r, 10));
    expect(heard).toEqual(['hello']);
    await unlisten();
  });
});

// With `prepare` (the service's main handle on PGlite), reads and writes of rows are parsed and
// planned once and then run by name. Everything a caller sees must stay what the unnamed path gives.
describe('PGlite statements kept prepared', () => {
  let pg: PGlite;
  let prepared: OneCallClient;
  let plain: OneCallClient;
  let calls = () => 0;
  const preparedCount = async () => (await pg.query<{ n: number }>('select count(*)::int as n from pg_prepared_statements')).rows[0]!.n;

  beforeAll(async () => {
    ({ pg, calls } = await countedPglite());
    prepared = oneCallClient(pg, { prepare: true });
    plain = oneCallClient(pg);
    await pg.exec(`create table item (id int primary key, name text unique, price float8)`);
  });
  afterAll(async () => pg?.close());

  it('answers as the unnamed path does, and a statement run again is one call', async () => {
    const insert = 'insert into item (id, name, price) values ($1, $2, $3) returning id, name';
    for (let id = 1; id <= 3; id++) {
      const r = await prepared.query(insert, [id, `n${id}`, id * 1.5]);
      expect(r).toMatchObject({ rows: [{ id, name: `n${id}` }], affectedRows: 1 });
    }
    const select = 'select id, name, price from item where price > $1 order by id';
    for (const min of [0, 2, 4]) expect(await prepared.query(select, [min])).toEqual(await plain.query(select, [min]));
    const before = calls();
    await prepared.query(select, [1]);
    expect(calls() - before).toBe(1);
    expect(await preparedCount()).toBe(2);
  });

  it('an error keeps its SQLSTATE, also when the statement fails to prepare inside a transaction', async () => {
    const dup = await prepared.query('insert into item (id, name, price) values ($1, $2, $3) returning id, name', [9, 'n1', 1]).catch((e: unknown) => e);
    expect(dup).toMatchObject({ code: '23505' });
    const missing = await prepared
      .transaction(async (tx) => {
        await tx.query('select id from item where id = $1', [1]);
        await tx.query('select id from no_such_table where id = $1', [1]);
      })
      .catch((e: unknown) => e);
    expect(missing).toMatchObject({ code: '42P01', query: 'select id from no_such_table where id = $1' });
    expect(pg.isInTransaction()).toBe(false);
  });

  it('a statement first prepared in a transaction that rolled back still runs afterwards', async () => {
    const text = 'select name from item where id = $1';
    await prepared
      .transaction(async (tx) => {
        await tx.query(text, [1]);
        throw new Error('roll back');
      })
      .catch(() => undefined);
    expect((await prepared.query(text, [2])).rows).toEqual([{ name: 'n2' }]);
  });

  it('a schema change that alters the result columns is answered with the new columns', async () => {
    const text = 'select * from item where id = $1';
    expect(Object.keys((await prepared.query<Record<string, unknown>>(text, [1])).rows[0]!)).toEqual(['id', 'name', 'price']);
    await pg.exec('alter table item add column colour text');
    expect(Object.keys((await prepared.query<Record<string, unknown>>(text, [1])).rows[0]!)).toEqual(['id', 'name', 'price', 'colour']);
  });

  it('keeps at most 256 statements prepared, closing the least recently used, and never DDL', async () => {
    for (let i = 0; i < 300; i++) await prepared.query(`select $1::int + ${i} as n`, [1]);
    await prepared.query('select 1 as one');
    expect(await preparedCount()).toBeLessThanOrEqual(256);
    expect((await prepared.query<{ n: number }>('select $1::int + 0 as n', [1])).rows).toEqual([{ n: 1 }]); // evicted, prepared again
    await prepared.query('create table ddl_probe (id int)');
    const names = (await pg.query<{ statement: string }>('select statement from pg_prepared_statements')).rows.map((r) => r.statement);
    expect(names.some((s) => /create table/i.test(s))).toBe(false);
  });
});
