import fs from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator';
import { PgDialect, type PgDatabase, type PgQueryResultHKT, type PgTransaction } from 'drizzle-orm/pg-core';
import { fillPlaceholders, is, Placeholder, type ExtractTablesWithRelations, type SQL } from 'drizzle-orm';
import { PgliteSession } from 'drizzle-orm/pglite/session';
import { PostgresJsSession } from 'drizzle-orm/postgres-js/session';
import postgres from 'postgres';
import * as schema from './schema/index.js';
import { packagePath } from '../kernel/package-root.js';
import { oneCallClient, type QueryClient } from './pglite-one-call.js';

export type Schema = typeof schema;
/** One handle type for both drivers: shared query code never knows which one it talks to. */
export type Db = PgDatabase<PgQueryResultHKT, Schema>;
export type Tx = PgTransaction<PgQueryResultHKT, Schema, ExtractTablesWithRelations<Schema>>;
/** Query code takes either the database or an open transaction. */
export type DbOrTx = Db | Tx;

export const MIGRATIONS_DIR = packagePath('drizzle');

/**
 * The driver's own connection behind a handle (inside a transaction or savepoint: that transaction's
 * connection), for the one thing drizzle cannot say: COPY. Reached through drizzle's typed `_.session`;
 * drizzle declares PGlite's session client private (it is a plain property), hence the one cast,
 * kept here beside the code that creates both drivers. The dataset tests fail if drizzle changes it.
 */
export type DriverConnection = { postgres: postgres.Sql } | { pglite: QueryClient };

export function driverConnectionOf(db: DbOrTx): DriverConnection {
  const session = db._.session;
  if (is(session, PostgresJsSession)) return { postgres: session.client as postgres.Sql };
  if (is(session, PgliteSession)) return { pglite: (session as unknown as { client: QueryClient }).client };
  throw new Error('COPY needs a postgres.js or PGlite drizzle handle');
}

export interface Database {
  db: Db;
  kind: 'pglite' | 'postgres';
  /**
   * A second handle whose connections start with these session settings (PostgreSQL: its own pool
   * of at most `poolMax` connections, the settings sent once in each connection's start-up message,
   * so a statement needs no transaction to run under them). PGlite has one in-process connection and
   * no timers during a statement: it answers its own handle and ignores the settings. PostgreSQL:
   * each connection keeps at most `maxPrepared` statements prepared (SESSION_POOL_PREPARED).
   */
  openPool(settings: Record<string, string>, poolMax: number, maxPrepared?: number): SessionPool;
  /**
   * LISTENs on `channel` until the returned function is called: `onMessage` gets each payload sent
   * with `pg_notify`, by any node, after the sending transaction committed. `onListening` runs each
   * time the subscription is (re)established: PostgreSQL keeps no notification for a session that
   * was not listening, so what came meanwhile is lost and the caller must assume anything changed.
   */
  listen(channel: string, onMessage: (payload: string) => void, onListening: () => void): () => Promise<void>;
  close(): Promise<void>;
}

export interface SessionPool {
  db: Db;
  close(): Promise<void>;
}

export interface OpenDbOptions {
  /** `postgres://…` for a server; otherwise PGlite in `dataDir` (or in memory when omitted). */
  databaseUrl?: string;
  dataDir?: string;
  /** A `dumpDataDir()` tarball to start PGlite from (tests clone a migrated template this way). */
  loadDataDir?: Blob;
  /**
   * PGlite with `dataDir`: fills the database directory, absent or empty, with a migrated template
   * (service/db/pglite-template.ts) instead of initdb; false when there is none for this build. Not
   * called when the directory holds a database.
   */
  template?: (dir: string) => boolean;
  migrate?: boolean;
  /** PostgreSQL: connections this node opens at most (default 10). */
  poolMax?: number;
  /** PGlite: its buffer pool (postgres `shared_buffers`; default PGLITE_SHARED_BUFFERS). */
  sharedBuffers?: string;
}

/**
 * PGlite's buffer pool. PostgreSQL's default, 128MB, is zeroed at every start inside the wasm
 * memory: ~115 MB more resident and ~0.3 s more start-up than 32MB (docs/performance.md, "PGlite's
 * buffer pool"). An embedded database serves one node; its files are in the OS page cache anyway.
 */
export const PGLITE_SHARED_BUFFERS = '32MB';

/**
 * Named statements each connection of a session pool keeps prepared: the Table API's reads, whose
 * texts name fields and tables, so a node serving many tables and queries would otherwise keep every
 * one of them on every connection. The least recently used beyond this is closed on the server
 * (postgres.js as patched by bin/patch-deps.mjs, option `max_prepared`). docs/performance.md,
 * "Table API reads" (issue 53).
 */
export const SESSION_POOL_PREPARED = 200;

/** Seconds to wait for a PostgreSQL connection before the request fails (503 with Retry-After). */
const CONNECT_TIMEOUT_SECONDS = 5;
/**
 * Seconds before a closed connection tries again: postgres.js grows this to 20 s after repeated
 * failures, and every query waiting for that connection waits too. Capped at half a second, a request
 * during an outage fails fast (503) and the node is back within half a second of its database.
 */
const reconnectBackoff = (retries: number) => Math.min(3 ** retries / 100, 0.5);
/** Every node that starts takes this lock before migrating: one migrates, the others then find nothing to do. */
const MIGRATION_LOCK = 'svc:migrations';

export async function openDb(options: OpenDbOptions): Promise<Database> {
  const { databaseUrl, migrate = true } = options;
  if (databaseUrl && /^postgres(ql)?:\/\//.test(databaseUrl)) {
    const connect = (max: number, connection: Record<string, string> = {}, maxPrepared?: number) =>
      postgres(databaseUrl, {
        max,
        // The session pools (the Table API's reads): every statement kept prepared, at most
        // SESSION_POOL_PREPARED per connection (`executeCompiled`; bin/patch-deps.mjs).
        ...(maxPrepared ? { max_prepared: maxPrepared } : {}),
        connect_timeout: CONNECT_TIMEOUT_SECONDS,
        backoff: reconnectBackoff,
        onnotice: () => {},
        connection,
        // postgres.js reads the server's array types with a query of its own on each new connection;
        // under a session statement_timeout that query can be cancelled (an unhandled rejection).
        // A session pool reads records, never arrays, so it skips that query.
        fetch_types: Object.keys(connection).length === 0,
      });
    const client = connect(options.poolMax ?? 10);
    const db = drizzlePostgres(client, { schema }) as unknown as Db;
    if (migrate) await migrateUnderLock(databaseUrl, db);
    return {
      db,
      kind: 'postgres',
      openPool: (settings, poolMax, maxPrepared = SESSION_POOL_PREPARED) => {
        const pool = connect(poolMax, settings, maxPrepared);
        return { db: drizzlePostgres(pool, { schema }) as unknown as Db, close: () => pool.end({ timeout: 5 }) };
      },
      listen: (channel, onMessage, onListening) => listenOnOwnConnection(databaseUrl, channel, onMessage, onListening),
      close: () => client.end({ timeout: 5 }),
    };
  }
  if (databaseUrl) throw new Error(`DATABASE_URL must start with postgres:// or postgresql:// (got "${databaseUrl.split(':')[0]}:…")`);
  const dir = options.dataDir === undefined ? undefined : path.join(options.dataDir, 'db');
  if (dir !== undefined && !options.loadDataDir && isEmptyDir(dir)) options.template?.(dir);
  if (dir !== undefined) fs.mkdirSync(dir, { recursive: true });
  const client = await PGlite.create({
    dataDir: dir,
    loadDataDir: options.loadDataDir,
    startParams: [...PGlite.defaultStartParams, '-c', `shared_buffers=${options.sharedBuffers ?? PGLITE_SHARED_BUFFERS}`],
  });
  // drizzle calls only `query` and `transaction` on its client: one call into PGlite per statement,
  // and statements kept prepared (parsed and planned once).
  const db = drizzlePglite(oneCallClient(client, { prepare: true }) as unknown as PGlite, { schema }) as unknown as Db;
  if (migrate) await migratePglite(db as never, { migrationsFolder: MIGRATIONS_DIR });
  return {
    db,
    kind: 'pglite',
    // The Table API's reads: the same database, with statements never kept prepared, so each read is
    // planned for its own values (as on PostgreSQL, whose read pool forces custom plans).
    openPool: () => ({ db: drizzlePglite(oneCallClient(client) as unknown as PGlite, { schema }) as unknown as Db, close: async () => {} }),
    listen: (channel, onMessage, onListening) => {
      const subscribed = client.listen(channel, onMessage).then((unsubscribe) => {
        onListening();
        return unsubscribe;
      });
      return async () => (await subscribed)();
    },
    close: async () => {
      if (!client.closed) await client.close();
    },
  };
}

function isEmptyDir(dir: string): boolean {
  try {
    return fs.readdirSync(dir).length === 0;
  } catch {
    return true; // absent
  }
}

/**
 * A LISTEN on a connection of its own, re-established whenever that connection closes (the database
 * restarted, a network fault): every second until it answers. postgres.js's own `listen` gives up
 * after one failed re-listen, so a node would stop hearing for good after an outage.
 */
function listenOnOwnConnection(databaseUrl: string, channel: string, onMessage: (payload: string) => void, onListening: () => void): () => Promise<void> {
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  // `onnotify` and `onclose` are the options postgres.js's own `listen` is built on (parsed by
  // postgres() in 3.x, absent from its types); a pool of one connection that only ever LISTENs.
  const notifications = {
    onnotify: (name: string, payload: string) => {
      if (name === channel) onMessage(payload);
    },
    onclose: () => subscribeSoon(250),
  };
  const connection = postgres(databaseUrl, {
    // No idle timeout (the default): a LISTEN connection is idle by nature. No maximum lifetime.
    max: 1,
    max_lifetime: null,
    connect_timeout: CONNECT_TIMEOUT_SECONDS,
    backoff: reconnectBackoff,
    fetch_types: false,
    onnotice: () => {},
    ...(notifications as object),
  });
  const subscribe = async () => {
    retry = undefined;
    if (stopped) return;
    try {
      await connection.unsafe(`listen "${channel.replace(/"/g, '""')}"`);
      if (!stopped) onListening();
    } catch {
      subscribeSoon(1000);
    }
  };
  const subscribeSoon = (ms: number) => {
    if (!stopped && !retry) retry = setTimeout(() => void subscribe(), ms).unref();
  };
  void subscribe();
  return async () => {
    stopped = true;
    clearTimeout(retry);
    await connection.end({ timeout: 1 });
  };
}

/**
 * Migrations hold a session advisory lock on a connection of their own, so nodes starting together on
 * an empty database do not run the same DDL at once (which fails on duplicate objects). That
 * connection is outside the node's pool, opened for the lock and closed once it is released, while
 * the migrations run on the pool: a lock connection taken from the pool itself (`reserve()`) left a
 * pool of one (SVC_DATABASE_POOL_MAX=1) no connection to migrate with, and the node waited for good.
 * A client of one connection runs its statements on that connection, in order, so the unlock goes
 * where the lock is without `reserve()` (which never settles on a fresh client with `fetch_types`
 * off: porsager/postgres#751).
 */
async function migrateUnderLock(databaseUrl: string, db: Db): Promise<void> {
  const lockConnection = postgres(databaseUrl, {
    max: 1,
    connect_timeout: CONNECT_TIMEOUT_SECONDS,
    fetch_types: false,
    onnotice: () => {},
  });
  try {
    await lockConnection`select pg_advisory_lock(hashtextextended(${MIGRATION_LOCK}, 0))`;
    await migratePostgres(db as never, { migrationsFolder: MIGRATIONS_DIR });
  } finally {
    await lockConnection`select pg_advisory_unlock(hashtextextended(${MIGRATION_LOCK}, 0))`.catch(() => {});
    await lockConnection.end({ timeout: 5 });
  }
}

/**
 * The row of a statement that always returns one (`insert … returning`, an update of a row the
 * transaction holds): none means the database broke that promise, an internal error.
 */
export function onlyRow<T>(rows: T[], what: string): T {
  const row = rows[0];
  if (row === undefined) throw new Error(`${what}: the statement returned no row`);
  return row;
}

/** The number a `select count(*)` (or `sum`) as `n` returned; 0 when it returned no row or null. */
export function countOf(rows: { n: number | string | null }[]): number {
  return Number(rows[0]?.n ?? 0);
}

/**
 * A statement rendered once to its text and parameters, to be run many times: rendering a drizzle
 * `sql` template (walking its chunks, numbering its parameters) costs more than a short read's own
 * JavaScript (docs/performance.md, "Table API reads"). A value that differs per run is a
 * `sql.placeholder(name)`, filled by `executeCompiled`.
 */
export interface CompiledStatement {
  sql: string;
  params: unknown[];
  /**
   * PostgreSQL: kept prepared on each connection that runs it (a named statement: parsed once per
   * connection, then only bound and run). postgres.js keeps every named statement of a connection
   * for the connection's life, so only a statement whose text is one of a few (the same for any
   * table and any value, its values all parameters) may be: see `compileStatement`'s callers.
   */
  prepared: boolean;
  /**
   * Its best plan is the same whatever its parameters (a record by primary key; a page in key order
   * that nothing narrows; a statement whose values are written in its text, `inline`): it may run
   * where plans are reused (`reusePlansOn`), skipping the planning a custom plan costs at each run.
   */
  keyPlan: boolean;
}

const dialect = new PgDialect();

/**
 * `inline`: the statement's values are written in its text as literals (`inlineValues`), only its
 * placeholders left as parameters; it then runs where plans are reused (`keyPlan`). A statement with
 * a value that has no literal here is compiled as it is, its values parameters.
 */
export function compileStatement(statement: SQL, options: { prepared?: boolean; keyPlan?: boolean; inline?: boolean } = {}): CompiledStatement {
  const query = dialect.sqlToQuery(statement);
  const inlined = options.inline ? inlineValues(query) : null;
  if (inlined) return { ...inlined, prepared: false, keyPlan: true };
  return { ...query, prepared: options.prepared ?? false, keyPlan: options.keyPlan ?? false };
}

/**
 * `query` with each of its values written in its text where its parameter was, as the literal
 * PostgreSQL reads as the same value (`literalOf`); its placeholders stay parameters, numbered
 * anew. Null when a value has no literal: the statement keeps its parameters.
 *
 * Why: a statement whose values are parameters is planned at every run on the Table API's read pool
 * (it forces custom plans: a generic plan cannot see which values a filter names), and planning a
 * read of a Table with field indexes took ~0.2 ms of a 1 ms read at 1,000,000 records, each index
 * weighed. Written in the text, the values are seen by the one plan PostgreSQL keeps for the
 * statement (a statement without parameters gets no custom plans): it is planned once per
 * connection, as the statement of a server written by hand with its values in the text is
 * (docs/performance.md, "Table API reads", issue 53). Each set of values is then a statement text of
 * its own: a connection keeps the most recently used (SESSION_POOL_PREPARED).
 *
 * Only texts this service compiles come here: their only `$` followed by digits are parameters
 * (drizzle writes them; names and string constants in them are the compiler's, never a `$`).
 */
function inlineValues(query: { sql: string; params: unknown[] }): { sql: string; params: unknown[] } | null {
  const literals = query.params.map((v) => (is(v, Placeholder) ? null : literalOf(v)));
  if (literals.some((l) => l === undefined)) return null;
  const params: unknown[] = [];
  const renumbered = new Map<number, number>();
  const sql = query.sql.replace(/\$(\d+)/g, (_, n: string) => {
    const i = Number(n) - 1;
    const literal = literals[i];
    if (literal) return literal;
    let k = renumbered.get(i);
    if (k === undefined) {
      params.push(query.params[i]);
      k = params.length;
      renumbered.set(i, k);
    }
    return `$${k}`;
  });
  return { sql, params };
}

/**
 * The literal PostgreSQL reads as `v` sent as a parameter by postgres.js (which sends a string or a
 * number as text of no declared type, for the statement to type, and declares a boolean's, a bigint's
 * and a date's type); undefined for any other value. A string is an escape string literal (E'…',
 * every backslash and quote doubled), read alike whatever the server's
 * `standard_conforming_strings`; one holding a NUL (which no PostgreSQL text holds, and which would
 * end the statement's text) has none.
 */
function literalOf(v: unknown): string | undefined {
  if (v === null) return 'null';
  if (typeof v === 'string') return v.includes('\0') ? undefined : `E'${v.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
  if (typeof v === 'number') return `'${String(v)}'`;
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'bigint') return `'${v}'::int8`;
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? undefined : `'${v.toISOString()}'::timestamptz`;
  return undefined;
}

/** Each read pool's twin whose sessions reuse plans (`reusePlansOn`). */
const planReusing = new WeakMap<object, DbOrTx>();

/**
 * Statements of `pool` whose plan cannot depend on their values (`keyPlan`) run on `twin` instead: a
 * pool of the same server whose sessions keep PostgreSQL's default plan cache (`plan_cache_mode =
 * auto`), where `pool`'s force custom plans (a generic plan cannot see which JSONB values a filter
 * names). A record by id is then planned once per connection, not at every read (cli/runtime.ts).
 */
export function reusePlansOn(pool: DbOrTx, twin: DbOrTx): void {
  planReusing.set(pool, twin);
}

/**
 * Whether statements run on `pool` with `keyPlan` are planned once per connection and text: a
 * PostgreSQL pool with a plan-reusing twin (PGlite plans each statement at every run).
 */
export function keepsPlans(pool: DbOrTx): boolean {
  const twin = planReusing.get(pool);
  return twin !== undefined && postgresClientOf(twin._.session) !== null;
}

/**
 * Runs a compiled statement, without rendering it again: a `prepared` one as a named statement
 * (PGlite keeps its own statements). On PostgreSQL it is the driver call `db.execute` ends in
 * (postgres.js's `unsafe`: the same rows; its errors as they are, not wrapped in drizzle's, which
 * `sqlStateOf` and the others here read alike) without drizzle's layers around it (its tracing
 * spans, cache and logger: ~15 µs of a short read, docs/performance.md); on PGlite, drizzle's.
 */
export function executeCompiled(db: DbOrTx, statement: CompiledStatement, values?: Record<string, unknown>): Promise<unknown> {
  const session = ((statement.keyPlan && planReusing.get(db)) || db)._.session;
  const client = postgresClientOf(session);
  if (!client) return session.prepareQuery(statement, undefined, undefined, false).execute(values);
  const params = values ? fillPlaceholders(statement.params, values) : statement.params;
  // Never the simple protocol, which postgres.js takes for a statement without parameters (one whose
  // values are all in its text, `inlineValues`): it cannot be kept prepared, so it was planned at every
  // run. (`simple` is an option of postgres.js's `unsafe` its types leave out.)
  const options = { prepare: statement.prepared || keepsFewPrepared(client), simple: false } as postgres.UnsafeQueryOptions;
  return client.unsafe(statement.sql, params as postgres.ParameterOrJSON<never>[], options);
}

/**
 * Whether `client` keeps a bounded number of named statements per connection (a session pool, with
 * postgres.js patched: `options.max_prepared`), so that any statement may be kept prepared there:
 * parsed once per connection, its row description kept, where an unnamed one is parsed and
 * described at every run. Without the patch, as before: only statements of a fixed text.
 */
function keepsFewPrepared(client: postgres.Sql): boolean {
  let few = boundedClients.get(client);
  if (few === undefined) {
    const max = (client.options as { max_prepared?: unknown }).max_prepared;
    few = typeof max === 'number' && max > 0;
    boundedClients.set(client, few);
  }
  return few;
}

const boundedClients = new WeakMap<postgres.Sql, boolean>();

/** A session's postgres.js client (null for PGlite), found once per session. */
const postgresClients = new WeakMap<object, postgres.Sql | null>();

function postgresClientOf(session: DbOrTx['_']['session']): postgres.Sql | null {
  let client = postgresClients.get(session);
  if (client === undefined) {
    client = is(session, PostgresJsSession) ? (session.client as postgres.Sql) : null;
    postgresClients.set(session, client);
  }
  return client;
}

/** Normalises `db.execute()` results: PGlite returns `{rows}`, postgres.js an array. */
export function rowsOf<T>(result: unknown): T[] {
  const r = result as { rows?: T[] } | T[];
  return Array.isArray(r) ? r : (r.rows ?? []);
}

/**
 * The rows of a statement's result, taken out of it: an array of their own, the driver's result left
 * empty. For the Table API's reads, which keep nothing of a result once answered. A postgres.js
 * result stays reachable after its read until a full collection (through what exactly was not found;
 * the query, a promise, holds it as its value, and an isolated loop of queries stops keeping rows
 * when the query resolves with an empty array, or when its result is emptied once read). Its rows
 * then survived each young-generation collection, copied, then promoted to die in the old one: with
 * pages of 50 records, 1.9 MB surviving each scavenge of 8–10 ms; taken out, 0.25 MB and 2 ms, and
 * ~110 µs less of the process's CPU per read (docs/performance.md, issue 53).
 */
export function takeRows<T>(result: unknown): T[] {
  if (!Array.isArray(result)) return rowsOf<T>(result);
  // Copied by hand: `splice` on the driver's Array subclass takes the generic path (its species,
  // its length set element by element), 5–10 µs for a page where this loop takes 1.
  const rows = new Array<T>(result.length);
  for (let i = 0; i < rows.length; i++) rows[i] = result[i] as T;
  result.length = 0;
  return rows;
}

/** The SQLSTATE of a database error (looking through drizzle's wrapping), under either driver. */
export function sqlStateOf(err: unknown): string | undefined {
  let e: unknown = err;
  for (let i = 0; i < 4 && e; i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** True for a data exception (SQLSTATE class 22): a value a column type or function refused. */
export function isDataException(err: unknown): boolean {
  return sqlStateOf(err)?.startsWith('22') ?? false;
}

/** True for a NUL character (U+0000) in text or JSON, which PostgreSQL cannot store (22021, 22P05). */
export function isNulCharacter(err: unknown): boolean {
  const state = sqlStateOf(err);
  return state === '22P05' || (state === '22021' && /0x00/.test(messageChain(err)));
}

/** postgres.js error codes for a connection that failed or went away. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
]);

/**
 * True when the database could not be reached or went away mid-query (SQLSTATE class 08, a server
 * shutting down or starting 57P01–57P03, or a driver connection error): the request may succeed
 * later, so it is answered 503 with Retry-After, not 500.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const state = sqlStateOf(err);
  if (state?.startsWith('08') || state === '57P01' || state === '57P02' || state === '57P03') return true;
  let e: unknown = err;
  for (let i = 0; i < 4 && e; i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && CONNECTION_CODES.has(code)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

function messageChain(err: unknown): string {
  const parts: string[] = [];
  let e: unknown = err;
  for (let i = 0; i < 4 && e; i++) {
    parts.push(String((e as { message?: unknown }).message ?? ''));
    e = (e as { cause?: unknown }).cause;
  }
  return parts.join(' | ');
}

/** True when the error is a Postgres unique violation (SQLSTATE 23505), under either driver. */
export function isUniqueViolation(err: unknown): boolean {
  return sqlStateOf(err) === '23505';
}
