import { sql } from 'drizzle-orm';
import type postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileStatement, type Database, executeCompiled, rowsOf, type SessionPool, takeRows } from '../../service/db/client.js';
import { openTestDatabase } from '../helpers/db.js';

/**
 * A session pool (the Table API's reads) keeps every statement prepared, at most `maxPrepared` per
 * connection: postgres.js as patched by bin/patch-deps.mjs forgets the least recently used and closes
 * it on the server (a Close message travelling with the next statement's, its CloseComplete told
 * from a cursor's). Here on one connection, with a bound of 3.
 */
describe.runIf(process.env.TEST_DATABASE_URL)('prepared statements of a session pool, bounded (postgres)', () => {
  let database: Database;
  let pool: SessionPool;
  beforeAll(async () => {
    database = await openTestDatabase('postgres');
    pool = database.openPool({ plan_cache_mode: 'force_custom_plan' }, 1, 3);
  });
  afterAll(async () => {
    await pool?.close();
    await database?.close();
  });

  const kept = async () =>
    rowsOf<{ statement: string }>(await pool.db.execute(sql`select statement from pg_prepared_statements order by prepare_time`)).map((r) => r.statement);
  /**
   * A statement whose text is its own for each `n` (n + 3 parameters), answering n + the sum of 0…n
   * in each of 5,000 rows: more than one read from the socket, so a statement resolved before its
   * last row would show.
   */
  const statement = (n: number) =>
    compileStatement(
      sql`select ${n}::int + ${sql.join(
        Array.from({ length: n + 1 }, (_, i) => sql`${i}::int`),
        sql` + `,
      )} as v, ${`text ${n}`}::text as t from generate_series(1, 5000)`,
    );
  const run = async (n: number) => {
    const rows = rowsOf<{ v: number; t: string }>(await executeCompiled(pool.db, statement(n)));
    expect(rows).toHaveLength(5000);
    expect(rows[4999]).toEqual({ v: n + (n * (n + 1)) / 2, t: `text ${n}` });
    return rows[0]!.v;
  };

  /** The `n` of each statement kept on the connection, oldest first (statement(n) has n + 3 parameters). */
  const keptNs = async () => (await kept()).map((t) => (t.match(/\$\d+/g) ?? []).length - 3);

  it('keeps the most recently used, closes the others on the server, and answers every statement right', async () => {
    for (let round = 0; round < 3; round++) {
      for (let n = 0; n < 8; n++) {
        await run(n);
        expect((await kept()).length).toBeLessThanOrEqual(3);
      }
    }
    expect(await keptNs()).toEqual([5, 6, 7]);
    // Used again, a kept statement becomes the most recent: the next new one closes the least recent (6).
    await run(5);
    await run(0);
    expect((await keptNs()).sort()).toEqual([0, 5, 7]);
    // Run again while the newest (left where it is), then another kept one: 5 is now the least recent.
    await run(0);
    await run(0);
    await run(7);
    await run(1);
    expect((await keptNs()).sort()).toEqual([0, 1, 7]);
  });

  it('a cursor on the same connection, among statements that close others, ends as it should', async () => {
    const client = (pool.db as unknown as { $client: postgres.Sql }).$client;
    for (let round = 0; round < 3; round++) {
      const batches: number[][] = [];
      const cursor = (async () => {
        for await (const rows of client.unsafe('select g from generate_series(1, 10) g').cursor(4)) batches.push(rows.map((r) => Number(r.g)));
      })();
      const answers = await Promise.all([10, 11, 12, 13, 14].map((n) => run(n + round * 5)));
      await cursor;
      expect(batches).toEqual([
        [1, 2, 3, 4],
        [5, 6, 7, 8],
        [9, 10],
      ]);
      expect(answers).toEqual([10, 11, 12, 13, 14].map((n) => n + round * 5).map((n) => n + (n * (n + 1)) / 2));
      expect((await kept()).length).toBeLessThanOrEqual(3);
    }
  });

  it("a read's rows are taken out of the driver's result: an array of their own, the result left empty (db/client.ts, takeRows)", async () => {
    const result = (await executeCompiled(pool.db, statement(2))) as unknown[];
    expect(result.length).toBe(5000);
    const rows = takeRows<{ v: number; t: string }>(result);
    expect(rows.length).toBe(5000);
    expect(rows[4999]).toEqual({ v: 5, t: 'text 2' });
    expect(result.length).toBe(0);
    expect(Object.getPrototypeOf(rows)).toBe(Array.prototype);
  });
});
