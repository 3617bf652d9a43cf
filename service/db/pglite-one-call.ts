import { parse, protocol, type PGlite, type Results, type Transaction } from '@electric-sql/pglite';

/**
 * PGlite's `query()` runs a statement as six separate calls into its wasm PostgreSQL (parse, describe
 * the statement to learn the parameters' types, bind, describe the portal, execute, sync), and for
 * each query drizzle sends it also copies its table of ~320 type parsers (drizzle passes a few parsers
 * of its own, which PGlite merges into a fresh copy every time). Measured on this machine: 0.26–0.33
 * ms a one-row select, against 0.06–0.07 ms for the same messages sent in one call
 * (docs/performance.md, "PGlite statements").
 *
 * This client sends the same extended-protocol messages (Parse, Bind, Describe, Execute, Sync) as one
 * buffer, under the same locks PGlite's own `query()` takes, and parses the answer with PGlite's own
 * result parser and its parsers merged once. What it changes: parameters are sent as text without
 * asking their types first, the way postgres.js sends them to a PostgreSQL server (null, strings,
 * numbers, bigints, booleans and Dates; PostgreSQL infers each parameter's type from the statement,
 * as it does for PGlite's own path). A query with any other parameter (an object, an array, bytes)
 * or any option beyond `rowMode` and `parsers` (a COPY's `blob`) goes to PGlite's `query()` as before.
 */
export interface QueryClient {
  query<T>(text: string, params?: unknown[], options?: QueryOptions): Promise<Results<T>>;
}
export interface OneCallClient extends QueryClient {
  transaction<T>(fn: (tx: QueryClient) => Promise<T>): Promise<T>;
  /** PGlite's own, unchanged: several statements in one string, no parameters. */
  exec: PGlite['exec'];
  readonly closed: boolean;
}
type QueryOptions = NonNullable<Parameters<PGlite['query']>[2]>;
type Parsers = Parameters<typeof parse.parseResults>[1];

export function oneCallClient(pg: PGlite): OneCallClient {
  const merged = new Map<string, Parsers>();
  /** PGlite's parsers with the query's own on top, merged once per set of type ids (drizzle sends the same few with every query). */
  const parsersFor = (own: QueryOptions['parsers']): Parsers => {
    if (!own) return pg.parsers;
    const key = Object.keys(own).join(',');
    let m = merged.get(key);
    if (!m) {
      m = { ...pg.parsers, ...own };
      merged.set(key, m);
    }
    return m;
  };

  const run = async <T>(text: string, values: (string | null)[], options: QueryOptions | undefined): Promise<Results<T>> => {
    const { serialize } = protocol;
    const message = concat([serialize.parse({ text }), serialize.bind({ values }), serialize.describe({ type: 'P' }), serialize.execute({}), serialize.sync()]);
    let messages: Awaited<ReturnType<PGlite['execProtocol']>>['messages'];
    try {
      ({ messages } = await pg.execProtocol(message, { syncToFs: false }));
    } catch (e) {
      throw Object.assign(e as Error, { query: text, params: values, queryOptions: options });
    }
    return parse.parseResults(messages, parsersFor(options?.parsers), { rowMode: options?.rowMode })[0] as Results<T>;
  };

  const clientOf = (inTransaction: Transaction | undefined): QueryClient => ({
    async query<T>(text: string, params: unknown[] = [], options?: QueryOptions): Promise<Results<T>> {
      const values = textValues(params);
      if (!values || (options && Object.keys(options).some((k) => k !== 'rowMode' && k !== 'parsers'))) {
        return inTransaction ? inTransaction.query<T>(text, params, options) : pg.query<T>(text, params, options);
      }
      if (inTransaction) {
        if (inTransaction.closed) throw new Error('Transaction is closed');
        return pg.runExclusive(() => run<T>(text, values, options));
      }
      await pg._checkReady();
      return pg._runExclusiveTransaction(async () => {
        const result = await pg.runExclusive(() => run<T>(text, values, options));
        await pg.syncToFs();
        return result;
      });
    },
  });

  return {
    ...clientOf(undefined),
    transaction: (fn) => pg.transaction((tx) => fn(clientOf(tx))),
    exec: (text, options) => pg.exec(text, options),
    get closed() {
      return pg.closed;
    },
  };
}

/** The parameters as PostgreSQL's text format, or undefined when one needs PGlite's typed serializers. */
function textValues(params: unknown[]): (string | null)[] | undefined {
  const out: (string | null)[] = new Array(params.length);
  for (let i = 0; i < params.length; i++) {
    const v = params[i];
    if (v === null || v === undefined) out[i] = null;
    else if (typeof v === 'string') out[i] = v;
    else if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') out[i] = String(v);
    else if (v instanceof Date && !Number.isNaN(v.getTime())) out[i] = v.toISOString();
    else return undefined;
  }
  return out;
}

function concat(parts: Uint8Array[]): Uint8Array {
  let size = 0;
  for (const p of parts) size += p.length;
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
