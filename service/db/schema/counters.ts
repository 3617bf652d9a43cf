import { bigint, pgTable, primaryKey, smallint, text } from 'drizzle-orm/pg-core';

/**
 * Exact counts of what an owner, a site or a Table holds, kept by triggers in the same transaction as
 * the change (migration 0011), so reading one costs the same at 10 records as at 10 million.
 *
 * `subject` names what is counted: `table:<id>`, `site:<id>`, or an owner key (`acct:<id>`,
 * `wallet:<0x…>`, the same key `ownerKey` gives). `metric` is what: `records`, `tables`, `sites`,
 * `files`, `bytes`, `functions`. A count is the sum of its shards: each database session adds to the shard of its
 * own backend (`pg_backend_pid() % 64`), so 32 inserts in flight into one Table update 32 different
 * rows and do not wait for each other's commits the way one hot row would make them.
 *
 * `svc-agent-host recount` recomputes every row from the data (service/db/counters.ts).
 */
export const usageCounters = pgTable(
  'usage_counters',
  {
    subject: text('subject').notNull(),
    metric: text('metric').notNull(),
    shard: smallint('shard').notNull(),
    value: bigint('value', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ name: 'usage_counters_pkey', columns: [t.subject, t.metric, t.shard] })],
);
