import type { Db, DbOrTx } from './client.js';

/**
 * A statement built once per database handle, kept as drizzle's prepared query and run with
 * placeholder values: drizzle builds a statement's text from its query builder on every run
 * (0.06–0.17 ms of CPU for the payment rows' statements), which a hot path pays on every request.
 * The text is the same every run, so PGlite keeps it prepared (pglite-one-call.ts); on PostgreSQL
 * drizzle sends a named statement, which postgres.js prepares once per connection (a handful, for
 * the few statements built this way). A transaction is a handle of its own, built for on first use.
 */
export function preparedOn<T>(build: (db: Db) => T): (db: DbOrTx) => T {
  const built = new WeakMap<DbOrTx, T>();
  return (db) => {
    let statement = built.get(db);
    if (statement === undefined) {
      statement = build(db as Db);
      built.set(db, statement);
    }
    return statement;
  };
}
