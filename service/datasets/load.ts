import { sql } from 'drizzle-orm';
import type { DbOrTx, Tx } from '../db/client.js';
import { isDataException } from '../db/client.js';
import { copyIntoColumnTable, copyTakesStatements, createColumnTable, finishColumnTable, loadedCount } from '../db/column-storage.js';
import { sameFields, type InferredSchema } from './infer.js';
import { csvRecordChunks, scanCsvForCopy, type CsvCopyPlan } from './parsers/csv-scan.js';
import { copyChunks, GuessMissed, inferSchema, type OpenStream, type PreparedFile } from './pipeline.js';
import { DataFileError, type ParseLimits } from './records.js';

/**
 * Loading a data file into a dataset's column table (service/db/column-storage.ts). The schema
 * is inferred over every record (docs/datasets.md), but the file is read once when it can be:
 *
 * - **CSV fast path.** The schema is guessed from the first MiB (csv-scan.ts), the table created
 *   with it and the file's own bytes handed to `COPY … FORMAT csv` (PostgreSQL parses them) while,
 *   at the same time, the scan reads the whole file: it checks every record and infers the final
 *   schema. Same schema as the guess (the usual case): done, in about the time of the COPY alone.
 *   A column widened further down: the COPY is rolled back (savepoint) and run again with the
 *   final schema. A file the scan does not accept: the two-pass path.
 * - **Guess and verify** (every other kind): the schema is inferred from the first
 *   GUESS_RECORDS records; one pass parses the file, checks every value against the guess and
 *   sends binary COPY. A record the guess does not hold (a wider type, a new column): rolled back,
 *   and the two-pass path.
 * - **Two passes**: pass one parses every record and infers the schema (a bad file fails before a
 *   row is written); pass two parses again, coerces and sends binary COPY.
 */

/** How much of a CSV the schema guess reads. */
export const CSV_SAMPLE_BYTES = 1024 * 1024;
/** How many records the schema guess of the other kinds reads. */
export const GUESS_RECORDS = 10_000;

export interface FirstPass {
  /** The schema to create the table with: over every record, or a guess (`complete` false). */
  schema: InferredSchema;
  complete: boolean;
  /** The CSV fast path's plan (its schema is `schema`). */
  csv: CsvCopyPlan | null;
}

export interface Loaded {
  count: number;
  /** The final schema, over every record (its fields differ from a guess the file proved wrong). */
  schema: InferredSchema;
}

export async function firstPass(file: PreparedFile, open: OpenStream, limits: ParseLimits): Promise<FirstPass> {
  if (file.kind === 'csv') {
    const csv = await scanCsvForCopy(await open(), limits, { sampleBytes: CSV_SAMPLE_BYTES });
    if (csv) return { schema: csv.schema, complete: csv.complete, csv };
    const schema = await inferSchema(file, limits);
    return { schema, complete: true, csv: null };
  }
  const guess = await inferSchema(file, limits, GUESS_RECORDS);
  return { schema: guess, complete: guess.complete, csv: null };
}

/** Loads every record of `file` into the (new) column table of `tableId`, inside `db` (a transaction). */
export async function loadColumns(db: DbOrTx, tableId: string, file: PreparedFile, first: FirstPass, open: OpenStream, limits: ParseLimits): Promise<Loaded> {
  // Date-times without a zone are UTC, as the general path reads them.
  await db.execute(sql`select set_config('TimeZone', 'UTC', true)`);
  let schema = first.schema;
  if (first.csv) {
    const csv = await loadCsvWithCopy(db, tableId, first.csv, open, limits);
    if ('count' in csv) return csv;
    schema = csv.full?.schema ?? (await inferSchema(file, limits));
  } else if (!first.complete) {
    const loaded = await inSavepoint(db, (sp) => loadRecords(sp, tableId, file, first.schema, true));
    if (loaded) return loaded;
    schema = await inferSchema(file, limits);
  }
  try {
    return await loadRecords(db, tableId, file, schema, false);
  } catch (e) {
    throw refusedValue(e) ?? e;
  }
}

/** Parses `file` here and COPYs its records (binary) into a new column table under `schema`. */
async function loadRecords(db: DbOrTx, tableId: string, file: PreparedFile, schema: InferredSchema, verify: boolean): Promise<Loaded> {
  await createColumnTable(db, tableId, schema.fields);
  await copyIntoColumnTable(
    db,
    tableId,
    schema.fields.map((f) => f.name),
    { kind: 'binary' },
    copyChunks(file, schema, verify),
  );
  await finishColumnTable(db, tableId);
  const count = await loadedCount(db, tableId);
  return { count, schema: { ...schema, records: count } };
}

/**
 * Runs `fn` in a savepoint: its result, or null (everything it did rolled back, the table and its
 * identity sequence too) when the guess missed or PostgreSQL refused a value (a data exception).
 */
async function inSavepoint<T>(db: DbOrTx, fn: (sp: DbOrTx) => Promise<T>): Promise<T | null> {
  try {
    return await (db as Tx).transaction(fn);
  } catch (e) {
    if (e instanceof GuessMissed || isDataException(e)) return null;
    throw e;
  }
}

/**
 * The CSV fast path. Answers the load, or (when it cannot finish) the complete scan, null when the
 * scan refused the file: the caller then takes the general path.
 */
async function loadCsvWithCopy(
  db: DbOrTx,
  tableId: string,
  guess: CsvCopyPlan,
  open: OpenStream,
  limits: ParseLimits,
): Promise<Loaded | { full: CsvCopyPlan | null }> {
  const whole = guess.complete ? Promise.resolve(guess) : scanCsvForCopy(await open(), limits);
  whole.catch(() => {}); // awaited below; never an unhandled rejection meanwhile
  const attempt = (plan: CsvCopyPlan): Promise<Loaded | null> =>
    inSavepoint(db, async (sp) => {
      await createColumnTable(sp, tableId, plan.schema.fields);
      const bytes = (await open()) as AsyncIterable<Buffer>;
      const format = { kind: 'csv', delimiter: plan.delimiter, header: plan.header, encoding: 'UTF8' } as const;
      await copyIntoColumnTable(
        sp,
        tableId,
        plan.schema.fields.map((f) => f.name),
        format,
        copyTakesStatements(sp) ? csvRecordChunks(bytes) : bytes,
      );
      const full = await whole;
      if (!full || !sameFields(full.schema, plan.schema)) throw new GuessMissed();
      await finishColumnTable(sp, tableId);
      return { count: await loadedCount(sp, tableId), schema: full.schema };
    });
  const loaded = await attempt(guess);
  if (loaded) return loaded;
  const full = await whole;
  if (full && !sameFields(full.schema, guess.schema)) {
    const again = await attempt(full);
    if (again) return again;
  }
  return { full };
}

/**
 * A value PostgreSQL refused on the two-pass path (a data exception; our rules should never let
 * one through) as a DataFileError naming the record: COPY's "line" of a binary tuple is the record.
 */
function refusedValue(e: unknown): DataFileError | null {
  if (!isDataException(e)) return null;
  let err = e as { message?: string; where?: string; cause?: unknown };
  if (!err.where && err.cause) err = err.cause as typeof err;
  const at = /line (\d+)(?:, column (\w+))?/.exec(err.where ?? '');
  return new DataFileError(`the database refused a value: ${err.message ?? 'invalid value'}`, at ? { row: Number(at[1]), column: at[2] } : {});
}
