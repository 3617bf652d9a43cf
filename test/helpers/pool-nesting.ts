import { AsyncLocalStorage } from 'node:async_hooks';
import { PostgresJsSession } from 'drizzle-orm/postgres-js/session';

/**
 * PostgreSQL, in every test: a statement sent to a pool while a transaction of that same pool is
 * open in the same chain of calls (a transaction's body querying `deps.db` instead of its `tx`) is
 * refused with an error naming it. The transaction holds one of the pool's connections until it
 * ends, and the statement waits for another: with SVC_DATABASE_POOL_MAX=1 the node waits for good,
 * and with any pool size as many such requests at once as the pool has connections do too (the
 * migration lock did this at start-up: test/e2e/pool-of-one.test.ts). Only what runs in the
 * transaction's own async context is seen: a promise it awaits that another request began is not.
 */
interface OpenTransaction {
  pool: object;
  open: boolean;
}

type PoolClient = { unsafe: (...args: unknown[]) => unknown; begin?: unknown };
type TransactionOf = (this: { client: PoolClient }, fn: (tx: unknown) => Promise<unknown>, config?: unknown) => Promise<unknown>;

const INSTALLED = Symbol.for('svc.test.poolNestingGuard');
const open = new AsyncLocalStorage<OpenTransaction[]>();
const guarded = new WeakSet<object>();

export class PoolNestingError extends Error {
  override name = 'PoolNestingError';
}

function refuseInsideOwnTransaction(pool: object, what: string): void {
  if (!(open.getStore() ?? []).some((t) => t.open && t.pool === pool)) return;
  throw new PoolNestingError(
    `${what} on a PostgreSQL pool inside a transaction of that same pool: it waits for a second connection while the transaction holds one ` +
      '(with SVC_DATABASE_POOL_MAX=1, for good); query through the transaction instead',
  );
}

export function guardPoolNesting(): void {
  const proto = PostgresJsSession.prototype as unknown as { transaction: TransactionOf } & Record<symbol, boolean>;
  if (proto[INSTALLED]) return; // setup files run once per test file in a worker that keeps its modules
  proto[INSTALLED] = true;
  const transaction = proto.transaction;
  proto.transaction = function (fn, config) {
    const pool = this.client;
    // The pool itself (postgres.js's top-level client, the one with `begin`), not a transaction's.
    if (typeof pool.begin === 'function' && !guarded.has(pool)) {
      guarded.add(pool);
      const unsafe = pool.unsafe;
      pool.unsafe = (...args: unknown[]) => {
        refuseInsideOwnTransaction(pool, 'a statement');
        return unsafe.apply(pool, args);
      };
    }
    refuseInsideOwnTransaction(pool, 'a transaction');
    const mark: OpenTransaction = { pool, open: true };
    return transaction.call(
      this,
      (tx) =>
        open.run([...(open.getStore() ?? []), mark], async () => {
          try {
            return await fn(tx);
          } finally {
            mark.open = false;
          }
        }),
      config,
    );
  };
}
