import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import type { BlobStore } from '../storage/blob-store.js';
import { CopyBinaryRows } from '../db/column-storage.js';
import { needsSpool, sniffMismatch } from './formats.js';
import {
  coerceRecord,
  coerceValue,
  fitsType,
  schemaOf,
  SchemaInferrer,
  typeOfValue,
  widen,
  type FieldType,
  type InferredSchema,
  type ValueSource,
} from './infer.js';
import { parseCsv } from './parsers/csv.js';
import { parseGeoJson, parseJson } from './parsers/json.js';
// Parquet, Shapefile and XLSX parsers load with their first file (their libraries weigh megabytes).
import type { ParquetColumnSlice, ParquetSliceCache } from './parsers/parquet.js';
import { DataFileError, type DataFileKind, type ParseLimits, type SourceRecord } from './records.js';

/** A data file ready to be read (twice: once to infer, once to load). */
export interface PreparedFile {
  kind: DataFileKind;
  valueSource: ValueSource;
  records(): AsyncIterable<SourceRecord>;
  /** The same records by columns, a slice of rows at a time (at most `maxRows`), for formats that read faster so (plain Parquet). */
  columnSlices?(maxRows?: number): AsyncIterable<ParquetColumnSlice>;
  close(): Promise<void>;
}

export interface PrepareOptions {
  limits: ParseLimits;
  /** XLSX: the sheet to read (default: the first). */
  sheet?: string;
  /** Where spool files go (default: the OS temp folder). */
  tmpRoot?: string;
}

/** Anything that can (re)open the file's bytes as a stream: the blob store, or a local file in tests. */
export type OpenStream = () => Promise<Readable>;

export function blobOpener(blobs: BlobStore, key: string): OpenStream {
  return async () => {
    const s = await blobs.getStream(key);
    if (!s) throw new DataFileError('the uploaded file is gone');
    return s;
  };
}

async function readHead(open: OpenStream, bytes = 4096): Promise<Buffer> {
  const s = await open();
  const parts: Buffer[] = [];
  let n = 0;
  try {
    for await (const c of s as AsyncIterable<Buffer>) {
      parts.push(c);
      n += c.length;
      if (n >= bytes) break;
    }
  } finally {
    s.destroy();
  }
  return Buffer.concat(parts).subarray(0, bytes);
}

/**
 * Makes a file readable record by record. Text formats (CSV, JSON, GeoJSON) and XLSX stream from
 * the store on each pass. Parquet is spooled once to a local file (it needs random access);
 * a Shapefile ZIP is unzipped once, streaming, into a temp folder. Both are removed by `close`.
 */
export async function prepareDataFile(open: OpenStream, declared: DataFileKind, options: PrepareOptions): Promise<PreparedFile> {
  const head = await readHead(open);
  if (head.length === 0) throw new DataFileError('the file is empty');
  const mismatch = sniffMismatch(declared, head);
  if (mismatch) throw new DataFileError(`the file is ${mismatch}`);
  const { limits } = options;
  const tmpDir = await fsp.mkdtemp(path.join(options.tmpRoot ?? os.tmpdir(), 'svc-dataset-'));
  const close = () => fsp.rm(tmpDir, { recursive: true, force: true });
  try {
    if (needsSpool(declared)) {
      const file = path.join(tmpDir, 'data.parquet');
      await pipeline(await open(), fs.createWriteStream(file));
      const { inspectParquet, parseParquet, parseParquetColumns } = await import('./parsers/parquet.js');
      const info = await inspectParquet(file);
      const sliceCache: ParquetSliceCache = {};
      return {
        kind: info.geometryColumn ? 'geoparquet' : 'parquet',
        valueSource: 'typed',
        records: () => parseParquet(file, limits),
        ...(info.geometryColumn ? {} : { columnSlices: (maxRows?: number) => parseParquetColumns(file, limits, maxRows, sliceCache) }),
        close,
      };
    }
    if (declared === 'shapefile') {
      const { extractShapefileZip, readShapefile } = await import('./parsers/shapefile.js');
      const extracted = await extractShapefileZip(await open(), tmpDir, limits);
      return { kind: 'shapefile', valueSource: 'typed', records: () => readShapefile(extracted, limits), close };
    }
    const textual: Record<string, (s: Readable) => AsyncIterable<SourceRecord>> = {
      csv: (s) => parseCsv(s, limits),
      json: (s) => parseJson(s, limits),
      geojson: (s) => parseGeoJson(s, limits),
    };
    if (declared === 'xlsx') {
      const { parseXlsx } = await import('./parsers/xlsx.js');
      return { kind: 'xlsx', valueSource: 'typed', records: () => parseXlsx(open, limits, options.sheet), close };
    }
    const parse = textual[declared];
    if (!parse) throw new DataFileError(`no parser for the format ${declared}`);
    return {
      kind: declared,
      valueSource: declared === 'csv' ? 'text' : 'typed',
      async *records() {
        yield* parse(await open());
      },
      close,
    };
  } catch (e) {
    await close();
    throw e;
  }
}

/**
 * Pass one: every record parsed (any error surfaces here, before a write) and the schema inferred.
 * With `sampleRecords`, only the first records: a guess (`complete` false when the file had more).
 */
export async function inferSchema(file: PreparedFile, limits: ParseLimits, sampleRecords = Infinity): Promise<InferredSchema & { complete: boolean }> {
  if (file.columnSlices && sampleRecords !== Infinity) return inferColumns(file.columnSlices(sampleRecords + 1), sampleRecords);
  const inferrer = new SchemaInferrer(file.valueSource, limits.maxColumns);
  let complete = true;
  for await (const r of file.records()) {
    if (inferrer.records >= sampleRecords) {
      complete = false;
      break;
    }
    inferrer.add(r);
  }
  return { ...usable(inferrer.result()), complete };
}

/** A schema a Table can be made of: at least one record and one field. */
function usable(schema: InferredSchema): InferredSchema {
  if (schema.records === 0) throw new DataFileError('the file holds no records');
  if (schema.fields.length === 0) throw new DataFileError('the records have no fields');
  return schema;
}

/** Pass two: the records as Table field values under `schema`, in batches. */
export async function* coercedBatches(file: PreparedFile, schema: InferredSchema, batchSize: number): AsyncGenerator<Record<string, unknown>[]> {
  const types = new Map<string, FieldType>(schema.fields.map((f) => [f.name, f.type]));
  let batch: Record<string, unknown>[] = [];
  for await (const r of file.records()) {
    batch.push(coerceRecord(r, schema, types, file.valueSource));
    if (batch.length >= batchSize) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length) yield batch;
}

/** inferSchema over column slices (typed values): the same schema as over their records. */
async function inferColumns(slices: AsyncIterable<ParquetColumnSlice>, sampleRecords: number): Promise<InferredSchema & { complete: boolean }> {
  let names: string[] = [];
  let types: (FieldType | null)[] = [];
  let records = 0;
  for await (const slice of slices) {
    if (records === 0) {
      names = slice.names;
      types = names.map(() => null);
    }
    const n = Math.min(slice.length, sampleRecords - records);
    for (let c = 0; c < names.length; c++) {
      const column = slice.columns[c]!;
      let t = types[c] ?? null;
      for (let r = 0; r < n; r++) {
        const v = typeOfValue(column[r], 'typed');
        if (v !== null && v !== t) t = widen(t, v);
      }
      types[c] = t;
    }
    records += slice.length;
  }
  return {
    ...usable(
      schemaOf(
        names.map((n, i) => [n, types[i] ?? null]),
        Math.min(records, sampleRecords),
      ),
    ),
    complete: records <= sampleRecords,
  };
}

/** Thrown by `copyChunks` in `verify` mode: a record does not fit the guessed schema. */
export class GuessMissed extends Error {}

/**
 * The records as binary COPY tuples under `schema`, about 1 MiB per chunk. `verify`: the schema is
 * a guess from the first records, and every value is checked against it (a value of a wider type, or
 * a column the guess has not seen, throws GuessMissed); the guess holds exactly when inferring over
 * every record would have given the same schema.
 */
export async function* copyChunks(file: PreparedFile, schema: InferredSchema, verify: boolean): AsyncGenerator<Buffer> {
  const types = schema.fields.map((f) => f.type);
  const labels: string[] = new Array(types.length);
  for (const [label, name] of schema.nameOf) labels[schema.fields.findIndex((f) => f.name === name)] = label;
  const rows = new CopyBinaryRows(types);
  const values: unknown[] = new Array(types.length).fill(null);
  const source = file.valueSource;
  if (file.columnSlices) {
    for await (const slice of file.columnSlices()) {
      yield* sliceChunks(slice, labels, types, rows, verify);
      if (rows.size >= 1 << 20) yield rows.take();
    }
    if (rows.size > 0) yield rows.take();
    return;
  }
  const known = new Set(labels);
  for await (const record of file.records()) {
    const { fields } = record;
    let present = 0;
    for (let i = 0; i < labels.length; i++) {
      const label = labels[i]!;
      const type = types[i]!;
      const v = fields[label];
      if (v === undefined) {
        values[i] = null;
        if (label in fields) present++;
        continue;
      }
      present++;
      if (verify && !fitsType(type, v, source)) throw new GuessMissed();
      values[i] = coerceValue(v, type, source, record, label);
    }
    // A key the schema does not know: the record has more keys than the schema's it holds.
    if (countKeys(fields, present + 1) > present) {
      const extra = Object.keys(fields).find((k) => !known.has(k))!;
      if (verify) throw new GuessMissed();
      throw new DataFileError('column appeared that was not there on the first read', { row: record.row, column: extra });
    }
    rows.add(values);
    if (rows.size >= 1 << 20) yield rows.take();
  }
  if (rows.size > 0) yield rows.take();
}

/** copyChunks for a slice of columns (typed values): each column checked whole, then the rows written. */
function* sliceChunks(slice: ParquetColumnSlice, labels: string[], types: FieldType[], rows: CopyBinaryRows, verify: boolean): Generator<Buffer> {
  if (slice.names.length !== labels.length || labels.some((l) => !slice.names.includes(l))) {
    if (verify) throw new GuessMissed();
    throw new DataFileError('the columns changed between the two reads of the file');
  }
  const columns = labels.map((l) => slice.columns[slice.names.indexOf(l)]!);
  if (verify) {
    for (let c = 0; c < columns.length; c++) {
      const column = columns[c]!;
      const type = types[c]!;
      for (let r = 0; r < slice.length; r++) if (!fitsType(type, column[r], 'typed')) throw new GuessMissed();
    }
  }
  const at: SourceRecord = { row: 0, fields: {} };
  const values: unknown[] = new Array(types.length);
  for (let r = 0; r < slice.length; r++) {
    at.row = slice.firstRow + r;
    for (let c = 0; c < columns.length; c++) {
      const v = columns[c]![r];
      const t = types[c]!;
      // What coerceValue answers, without the call for the common cases.
      if (typeof v === 'number' && (t === 'number' || t === 'integer')) values[c] = Number.isFinite(v) ? v : null;
      else if (typeof v === 'string' && t === 'string') values[c] = v === '' ? null : v;
      // A decoded date or timestamp goes to the tuple as it is (CopyBinaryRows), not through ISO text.
      else if (v instanceof Date && (t === 'date' || t === 'datetime')) values[c] = Number.isNaN(v.getTime()) ? null : v;
      else values[c] = coerceValue(v, t, 'typed', at, labels[c]!);
    }
    rows.add(values);
    if (rows.size >= 1 << 20) yield rows.take();
  }
}

/** The number of keys of `o`, counting no further than `atMost`. */
function countKeys(o: Record<string, unknown>, atMost: number): number {
  let n = 0;
  for (const _ in o) if (++n >= atMost) break;
  return n;
}
