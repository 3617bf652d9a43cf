import { parse, protocol, type PGlite, type Results, type Transaction } from '@electric-sql/pglite';
import { LruMap } from '../../shared/lru-map.js';

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
 *
 * With `prepare`, reads and writes of rows are kept prepared, by text (the 256 most recently used):
 * parsing, analysing and planning a statement inside the wasm PostgreSQL cost 0.05–0.35 ms of every
 * run (more than executing it, for the statements a request makes), a named statement's Bind and
 * Execute 0.03–0.09 ms (docs/performance.md, "PGlite statements"). PostgreSQL's plan cache switches a
 * statement to a generic plan when that is no worse; statements whose plan must see their values
 * (the Table API's reads) go through a client without `prepare`.
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

export function oneCallClient(pg: PGlite, options: { prepare?: boolean } = {}): OneCallClient {
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

  const statements = options.prepare ? new PreparedStatements() : undefined;

  /** Sends `parts` (and any Close of an evicted statement first) in one call; PGlite's error gets the query attached. */
  const send = async (parts: Uint8Array[], text: string, values: (string | null)[], queryOptions: QueryOptions | undefined) => {
    const closes = statements?.takeEvicted().map((name) => protocol.serialize.close({ type: 'S', name })) ?? [];
    try {
      return (await pg.execProtocol(concat([...closes, ...parts]), { syncToFs: false })).messages;
    } catch (e) {
      throw Object.assign(e as Error, { query: text, params: values, queryOptions });
    }
  };

  const run = async <T>(text: string, values: (string | null)[], queryOptions: QueryOptions | undefined): Promise<Results<T>> => {
    const { serialize } = protocol;
    const execute = [serialize.describe({ type: 'P' }), serialize.execute({}), serialize.sync()];
    const unnamed = () => send([serialize.parse({ text }), serialize.bind({ values }), ...execute], text, values, queryOptions);
    const name = statements && PREPARABLE.test(text) ? await preparedName(text, values, queryOptions) : undefined;
    let messages: Awaited<ReturnType<typeof send>>;
    if (name === undefined) messages = await unnamed();
    else {
      try {
        messages = await send([serialize.bind({ statement: name, values }), ...execute], text, values, queryOptions);
      } catch (e) {
        // A schema change that alters the statement's result columns (0A000): forget it, run it afresh.
        if ((e as { code?: string }).code !== '0A000') throw e;
        statements!.forget(text);
        messages = await unnamed();
      }
    }
    return parse.parseResults(messages, parsersFor(queryOptions?.parsers), { rowMode: queryOptions?.rowMode })[0] as Results<T>;
  };

  /**
   * The name of `text` prepared in this session, preparing it first with a Parse of its own, so a
   * statement counts as prepared only once PostgreSQL holds it. A Parse that fails throws what the
   * statement run unnamed would (its syntax, relations and types are checked there either way).
   */
  const preparedName = async (text: string, values: (string | null)[], queryOptions: QueryOptions | undefined): Promise<string> => {
    const known = statements!.nameOf(text);
    if (known) return known;
    const name = statements!.nextName();
    await send([protocol.serialize.parse({ name, text }), protocol.serialize.sync()], text, values, queryOptions);
    statements!.add(text, name);
    return name;
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

/** Statements worth keeping prepared: reads and writes of rows (not DDL, not transaction control). */
const PREPARABLE = /^\s*(select|insert|update|delete|with)\b/i;

/**
 * The statements this session keeps prepared, by text: the most recently used `capacity` (each
 * holds its parse tree and plans in PGlite's memory, which never shrinks). An evicted statement is
 * closed with the next call.
 */
class PreparedStatements {
  private readonly names: LruMap<string, string>;
  private evicted: string[] = [];
  private counter = 0;

  constructor(capacity = 256) {
    this.names = new LruMap(capacity, (_text, name) => this.evicted.push(name));
  }

  nameOf(text: string): string | undefined {
    return this.names.get(text);
  }

  nextName(): string {
    return `svc_${++this.counter}`;
  }

  add(text: string, name: string): void {
    this.names.set(text, name);
  }

  forget(text: string): void {
    const name = this.names.get(text);
    if (name === undefined) return;
    this.names.delete(text);
    this.evicted.push(name);
  }

  takeEvicted(): string[] {
    if (this.evicted.length === 0) return [];
    const out = this.evicted;
    this.evicted = [];
    return out;
  }
}
