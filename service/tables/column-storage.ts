import { once } from 'node:events';
import { sql, type SQL } from 'drizzle-orm';
import { FIELD_NAME_PATTERN, type FieldType, type TableField } from '../../shared/tables/schema.js';
import type { DbOrTx } from '../db/client.js';
import { rowsOf } from '../db/client.js';

/**
 * Column storage: a table's records in a PostgreSQL table of their own, `svc_datasets."<table id>"`,
 * with one typed column per field and `id` (1…N in load order). Datasets use it: they are read-only
 * and big, so their rows are loaded with COPY (the fastest way into PostgreSQL) into typed columns,
 * with no index to maintain during the load but the primary key built after it. Hand-made Tables keep
 * the shared JSONB `table_records` (storage `records`). The query compiler (query.ts) reads both.
 *
 * Values are stored so that ordering and comparison match the `records` storage exactly: text in C
 * collation, numbers as float8, dates and datetimes as `date`/`timestamptz` (rendered back as
 * `YYYY-MM-DD` and `YYYY-MM-DDTHH:MM:SS.mmmZ`, the Tables wire format), json as jsonb.
 */

export const COLUMN_STORAGE_SCHEMA = 'svc_datasets';
const TABLE_ID = /^tbl_[a-z0-9]{8,32}$/;

/** The qualified, quoted name of a table's column storage (the id is checked, never trusted). */
export function columnTableName(tableId: string): string {
  if (!TABLE_ID.test(tableId)) throw new Error(`unsafe table id ${tableId}`);
  return `${COLUMN_STORAGE_SCHEMA}."${tableId}"`;
}

export function quoteColumn(name: string): string {
  if (!FIELD_NAME_PATTERN.test(name)) throw new Error(`unsafe field name ${name}`);
  return `"${name}"`;
}

const SQL_TYPES: Record<FieldType, string> = {
  string: 'text collate "C"',
  number: 'float8',
  integer: 'float8',
  boolean: 'boolean',
  date: 'date',
  // Milliseconds, as the Tables wire format shows them: what is stored is what a cursor names.
  datetime: 'timestamptz(3)',
  json: 'jsonb',
};

/**
 * Creates the (empty) column table; `id` is an identity filled in load order. Its sequence caches
 * 10,000 values: one COPY still numbers 1…N without gaps (one session), and a million-row load
 * spends 0.5 s less in nextval.
 */
export async function createColumnTable(db: DbOrTx, tableId: string, fields: readonly Pick<TableField, 'name' | 'type'>[]): Promise<void> {
  const columns = fields.map((f) => `${quoteColumn(f.name)} ${SQL_TYPES[f.type]}`);
  await db.execute(sql.raw(`create table ${columnTableName(tableId)} (id bigint generated always as identity (cache 10000), ${columns.join(', ')})`));
}

/**
 * After the load: the primary key (one sorted build: cheaper than maintaining it row by row) and
 * planner statistics from a small sample (3,000 rows instead of 30,000: enough for the plans the
 * Table API needs, ~30 ms instead of ~250 ms on a million rows; autovacuum refines them later).
 */
export async function finishColumnTable(db: DbOrTx, tableId: string): Promise<void> {
  await db.execute(sql.raw(`alter table ${columnTableName(tableId)} add primary key (id)`));
  await db.execute(sql`select set_config('default_statistics_target', '10', true)`);
  await db.execute(sql.raw(`analyze ${columnTableName(tableId)}`));
}

export async function dropColumnTable(db: DbOrTx, tableId: string): Promise<void> {
  await db.execute(sql.raw(`drop table if exists ${columnTableName(tableId)}`));
}

/** Drops the column tables of a site's tables (before the site's rows are deleted). */
export async function dropColumnTablesOfSite(db: DbOrTx, siteId: string): Promise<void> {
  const rows = rowsOf<{ id: string }>(await db.execute(sql`select id from tables where site_id = ${siteId} and storage = 'columns'`));
  for (const r of rows) await dropColumnTable(db, r.id);
}

// ---------------------------------------------------------------------------------------------
// COPY

export type CopyFormat =
  /** CSV as PostgreSQL reads it: the file's own bytes (the datasets CSV fast path). */
  | { kind: 'csv'; delimiter: string; header: boolean; encoding: 'UTF8' }
  /** PostgreSQL's binary format, tuples written by `CopyBinaryRows` (header and trailer added here). */
  | { kind: 'binary' };

function copyOptions(format: CopyFormat, columns: readonly string[], header: boolean): string {
  if (format.kind === 'binary') return `(format binary)`;
  if (!/^[,;\t|]$/.test(format.delimiter)) throw new Error(`unexpected CSV delimiter ${JSON.stringify(format.delimiter)}`);
  // FORCE_NULL: a quoted empty cell ("") is null too, as in the papaparse path (empty = null).
  return `(format csv, header ${header}, delimiter '${format.delimiter}', quote '"', encoding '${format.encoding}', force_null (${columns.map(quoteColumn).join(', ')}))`;
}

/** The raw driver behind a drizzle handle: postgres.js (`unsafe`) or PGlite (`query` with a blob). */
interface PostgresJsQuery {
  writable(): Promise<NodeJS.WritableStream & { destroy(e?: Error): void }>;
  reject(e: unknown): void;
}
interface PostgresJsClient {
  unsafe(query: string): PostgresJsQuery;
}
interface PgliteClient {
  query(query: string, params?: unknown[], options?: { blob?: Blob }): Promise<unknown>;
}

function driverOf(db: DbOrTx): { postgres: PostgresJsClient } | { pglite: PgliteClient } {
  const client = (db as unknown as { session?: { client?: unknown } }).session?.client as Record<string, unknown> | undefined;
  if (client && typeof client.unsafe === 'function') return { postgres: client as unknown as PostgresJsClient };
  if (client && typeof client.query === 'function') return { pglite: client as unknown as PgliteClient };
  throw new Error('COPY needs a postgres.js or PGlite drizzle handle');
}

/** True when COPY data goes a statement at a time (PGlite): chunks must end on record boundaries. */
export function copyTakesStatements(db: DbOrTx): boolean {
  return 'pglite' in driverOf(db);
}

/** Records in a finished column table: ids are 1…N in load order, so the largest id (an index lookup). */
export async function loadedCount(db: DbOrTx, tableId: string): Promise<number> {
  const [row] = rowsOf<{ n: string | number | null }>(await db.execute(sql.raw(`select max(id) as n from ${columnTableName(tableId)}`)));
  return Number(row?.n ?? 0);
}

/**
 * Streams `chunks` into the column table with COPY, inside `db` (run it in a transaction: a COPY
 * that fails leaves nothing). On PostgreSQL the bytes go to `COPY … FROM STDIN` as they come; PGlite
 * takes one `COPY … FROM '/dev/blob'` per chunk, so each chunk must end on a record boundary (the
 * header, when there is one, is in the first chunk).
 */
export async function copyIntoColumnTable(db: DbOrTx, tableId: string, columns: readonly string[], format: CopyFormat, chunks: AsyncIterable<Buffer>): Promise<void> {
  const target = `${columnTableName(tableId)} (${columns.map(quoteColumn).join(', ')})`;
  const driver = driverOf(db);
  const binary = format.kind === 'binary';
  if ('postgres' in driver) {
    const header = format.kind === 'csv' && format.header;
    const query = driver.postgres.unsafe(`copy ${target} from stdin with ${copyOptions(format, columns, header)}`);
    // postgres.js resolves the query with the stream as soon as COPY starts, and a server error that
    // ends the COPY (a value the column refuses) then rejects an already-resolved promise: lost, and
    // the stream never finishes. Its `reject` is where that error goes, so we listen there.
    const refused = new Promise<never>((_, reject) => {
      const own = query.reject;
      query.reject = (e: unknown) => {
        reject(e);
        own(e);
      };
    });
    refused.catch(() => {});
    const writable = await query.writable();
    const failed = Promise.race([refused, new Promise<never>((_, reject) => writable.on('error', reject))]);
    failed.catch(() => {});
    const done = new Promise<void>((resolve) => writable.on('finish', resolve));
    const write = async (chunk: Buffer) => {
      if (!writable.write(chunk)) await Promise.race([once(writable, 'drain'), failed]);
    };
    try {
      if (binary) await write(COPY_BINARY_HEADER);
      for await (const chunk of chunks) await write(chunk);
      if (binary) await write(COPY_BINARY_TRAILER);
    } catch (e) {
      writable.destroy(e as Error);
      await failed.catch(() => {}); // the server's answer to the abort: the connection is free again
      throw e;
    }
    writable.end();
    await Promise.race([done, failed]);
    return;
  }
  let first = true;
  for await (const chunk of chunks) {
    const header = format.kind === 'csv' && format.header && first;
    first = false;
    const blob = binary ? new Blob([COPY_BINARY_HEADER, new Uint8Array(chunk), COPY_BINARY_TRAILER]) : new Blob([new Uint8Array(chunk)]);
    await driver.pglite.query(`copy ${target} from '/dev/blob' with ${copyOptions(format, columns, header)}`, [], { blob });
  }
}

// PostgreSQL's binary COPY: a signature, flags and extension length; per tuple a field count and,
// per field, a length (-1: null) and the value in the type's binary form; -1 at the end.
const COPY_BINARY_HEADER = Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)]);
const COPY_BINARY_TRAILER = Buffer.from([0xff, 0xff]);
/** 2000-01-01, PostgreSQL's epoch for dates and timestamps. */
const PG_EPOCH_MS = Date.UTC(2000, 0, 1);
const PG_EPOCH_DAYS = PG_EPOCH_MS / 86_400_000;

/** Days since 1970-01-01 of a proleptic Gregorian date (any year; Date.UTC maps years 0–99 to 19xx). */
function daysFromCivil(y: number, m: number, d: number): number {
  y -= m <= 2 ? 1 : 0;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

/**
 * Writes records as binary COPY tuples. Values are the Tables wire values of each field's type
 * (numbers, booleans, `YYYY-MM-DD`, ISO date-times, strings, JSON values) — no number is printed
 * and parsed again. `take` hands over what was written so far.
 */
export class CopyBinaryRows {
  private buf = Buffer.allocUnsafe(1 << 20);
  private pos = 0;

  constructor(private readonly types: readonly FieldType[]) {}

  get size(): number {
    return this.pos;
  }

  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  private text(s: string, prefix?: number): void {
    this.room(5 + s.length * 3);
    const buf = this.buf;
    const at = this.pos;
    let start = at + 4;
    if (prefix !== undefined) buf[start++] = prefix;
    // Short ASCII strings (most cells) are copied here: cheaper than a call into the encoder each.
    let n = 0;
    const len = s.length;
    if (len <= 64) {
      for (; n < len; n++) {
        const c = s.charCodeAt(n);
        if (c > 127) break;
        buf[start + n] = c;
      }
    }
    if (n < len) n = buf.write(s, start, 'utf8');
    buf.writeInt32BE(start + n - at - 4, at);
    this.pos = start + n;
  }

  add(values: readonly unknown[]): void {
    const { types } = this;
    // The largest fixed-size tuple: 2 + 12 per field; text reserves its own room.
    this.room(2 + 12 * types.length);
    let buf = this.buf;
    buf.writeInt16BE(types.length, this.pos);
    this.pos += 2;
    for (let i = 0; i < types.length; i++) {
      const v = values[i];
      if (v === null || v === undefined) {
        buf.writeInt32BE(-1, this.pos);
        this.pos += 4;
        continue;
      }
      switch (types[i]) {
        case 'number':
        case 'integer':
          buf.writeInt32BE(8, this.pos);
          buf.writeDoubleBE(v as number, this.pos + 4);
          this.pos += 12;
          break;
        case 'boolean':
          buf.writeInt32BE(1, this.pos);
          buf[this.pos + 4] = v ? 1 : 0;
          this.pos += 5;
          break;
        case 'date': {
          const s = v as string;
          const days = daysFromCivil(Number(s.slice(0, 4)), Number(s.slice(5, 7)), Number(s.slice(8, 10))) - PG_EPOCH_DAYS;
          buf.writeInt32BE(4, this.pos);
          buf.writeInt32BE(days, this.pos + 4);
          this.pos += 8;
          break;
        }
        case 'datetime': {
          const ms = Date.parse(v as string);
          buf.writeInt32BE(8, this.pos);
          buf.writeBigInt64BE(BigInt(ms - PG_EPOCH_MS) * 1000n, this.pos + 4);
          this.pos += 12;
          break;
        }
        case 'json':
          this.text(JSON.stringify(v), 1); // jsonb's binary form: version 1, then the text
          this.room(12 * (types.length - i));
          buf = this.buf; // the buffer may have grown
          break;
        default:
          this.text(v as string);
          this.room(12 * (types.length - i));
          buf = this.buf;
      }
    }
  }

  /** The tuples written since the last take. */
  take(): Buffer {
    const out = this.buf.subarray(0, this.pos);
    this.buf = Buffer.allocUnsafe(this.buf.length);
    this.pos = 0;
    return out;
  }
}

// ---------------------------------------------------------------------------------------------
// Reading (the query compiler's side)

/** A field's value as the Table API answers it (dates rendered in the Tables wire format). */
export function columnOutputExpr(name: string, type: FieldType): SQL {
  const c = `r.${quoteColumn(name)}`;
  if (type === 'date') return sql.raw(`to_char(${c}, 'YYYY-MM-DD')`);
  if (type === 'datetime') return sql.raw(`to_char(${c} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`);
  return sql.raw(c);
}

/** The select list of a record page: id and every field, aliased by field name. */
export function columnSelectList(fields: readonly Pick<TableField, 'name' | 'type'>[]): SQL {
  return sql.join([sql.raw('r.id'), ...fields.map((f) => sql`${columnOutputExpr(f.name, f.type)} as ${sql.raw(quoteColumn(f.name))}`)], sql`, `);
}

/** A selected row → the record's `fields` (null values left out, as the records storage does). */
export function columnRowFields(row: Record<string, unknown>, fields: readonly Pick<TableField, 'name'>[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    const v = row[f.name];
    if (v !== null && v !== undefined) out[f.name] = v;
  }
  return out;
}
