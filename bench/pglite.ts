/**
 * PGlite statements: the same drizzle queries through PGlite's own `query()` (six calls into the wasm
 * database per statement, its parser table copied per query) and through the client svc gives drizzle
 * (service/db/pglite-one-call.ts: one call; svc's main handle also keeps statements prepared, its
 * Table API reads do not). One in-memory PGlite, one table, the three clients on it, interleaved
 * rounds; p50 per statement.
 */
import { PGlite } from '@electric-sql/pglite';
import { eq, sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/pglite';
import { integer, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { oneCallClient } from '../service/db/pglite-one-call.js';

const ROUNDS = 5;
const PER_ROUND = 600;

const items = pgTable('bench_items', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  qty: integer('qty').notNull(),
  doc: jsonb('doc'),
  at: timestamp('at', { withTimezone: true }).notNull(),
});

function p50(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

export async function run(): Promise<void> {
  const pg = await PGlite.create();
  await pg.exec('create table bench_items (id text primary key, name text not null, qty integer not null, doc jsonb, at timestamptz not null)');
  const clients = {
    'PGlite query()': drizzle(pg),
    'one call': drizzle(oneCallClient(pg) as unknown as PGlite),
    'one call, prepared (svc)': drizzle(oneCallClient(pg, { prepare: true }) as unknown as PGlite),
  };
  let n = 0;
  const cases: [string, (db: (typeof clients)[keyof typeof clients]) => Promise<unknown>][] = [
    ['select one row by primary key', (db) => db.select().from(items).where(eq(items.id, 'fixed'))],
    ['insert one row', (db) => db.insert(items).values({ id: `r${n++}`, name: 'bench', qty: 1, doc: { a: [1, 2], b: 'text' }, at: new Date() })],
    [
      'update one row, returning it',
      (db) =>
        db
          .update(items)
          .set({ qty: sql`${items.qty} + 1` })
          .where(eq(items.id, 'fixed'))
          .returning(),
    ],
    [
      'transaction: two statements',
      (db) =>
        db.transaction(async (tx) => {
          await tx.select().from(items).where(eq(items.id, 'fixed'));
          await tx.update(items).set({ name: 'b' }).where(eq(items.id, 'fixed'));
        }),
    ],
  ];
  await clients['PGlite query()'].insert(items).values({ id: 'fixed', name: 'bench', qty: 0, doc: { k: 'v' }, at: new Date() });
  const times = new Map<string, number[]>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const [label, fn] of cases) {
      for (const [client, db] of Object.entries(clients)) {
        const key = `${label}|${client}`;
        const xs = times.get(key) ?? [];
        for (let i = 0; i < PER_ROUND; i++) {
          const t = performance.now();
          await fn(db);
          xs.push(performance.now() - t);
        }
        times.set(key, xs);
      }
    }
  }
  console.log(`drizzle on one in-memory PGlite, ${ROUNDS} interleaved rounds × ${PER_ROUND} statements; p50 ms`);
  const names = Object.keys(clients);
  console.log(`${'statement'.padEnd(34)} ${names.map((c) => c.padStart(c.length + 2)).join('')}   ratio of the last`);
  for (const [label] of cases) {
    const figures = names.map((c) => p50(times.get(`${label}|${c}`)!));
    const cells = figures.map((f, i) => f.toFixed(3).padStart(names[i]!.length + 2)).join('');
    console.log(`${label.padEnd(34)} ${cells}   ${(figures.at(-1)! / figures[0]!).toFixed(2)}x`);
  }
  await pg.close();
}
