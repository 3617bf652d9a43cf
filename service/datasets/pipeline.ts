import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import type { BlobStore } from '../storage/blob-store.js';
import { copyTextLine } from '../tables/column-storage.js';
import { needsSpool, sniffMismatch } from './formats.js';
import { coerceRecord, SchemaInferrer, type FieldType, type InferredSchema, type ValueSource } from './infer.js';
import { parseCsv } from './parsers/csv.js';
import { parseGeoJson, parseJson } from './parsers/json.js';
import { inspectParquet, parseParquet } from './parsers/parquet.js';
import { extractShapefileZip, readShapefile, type ExtractedShapefile } from './parsers/shapefile.js';
import { parseXlsx } from './parsers/xlsx.js';
import { DataFileError, type DataFileKind, type ParseLimits, type SourceRecord } from './records.js';

/** A data file ready to be read (twice: once to infer, once to load). */
export interface PreparedFile {
  kind: DataFileKind;
  valueSource: ValueSource;
  records(): AsyncIterable<SourceRecord>;
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
      const info = await inspectParquet(file);
      return {
        kind: info.geometryColumn ? 'geoparquet' : 'parquet',
        valueSource: 'typed',
        records: () => parseParquet(file, limits),
        close,
      };
    }
    if (declared === 'shapefile') {
      const extracted: ExtractedShapefile = await extractShapefileZip(await open(), tmpDir, limits);
      return { kind: 'shapefile', valueSource: 'typed', records: () => readShapefile(extracted, limits), close };
    }
    const textual: Record<string, (s: Readable) => AsyncIterable<SourceRecord>> = {
      csv: (s) => parseCsv(s, limits),
      json: (s) => parseJson(s, limits),
      geojson: (s) => parseGeoJson(s, limits),
      xlsx: (s) => parseXlsx(s, limits, options.sheet),
    };
    const parse = textual[declared];
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

/** Pass one: every record parsed (any error surfaces here, before a write) and the schema inferred. */
export async function inferSchema(file: PreparedFile, limits: ParseLimits): Promise<InferredSchema> {
  const inferrer = new SchemaInferrer(file.valueSource, limits.maxColumns);
  for await (const r of file.records()) inferrer.add(r);
  const schema = inferrer.result();
  if (schema.records === 0) throw new DataFileError('the file holds no records');
  if (schema.fields.length === 0) throw new DataFileError('the records have no fields');
  return schema;
}

/** Pass two: the records as Table field values under `schema`, in batches. */
export async function* coercedBatches(
  file: PreparedFile,
  schema: InferredSchema,
  batchSize: number,
): AsyncGenerator<Record<string, unknown>[]> {
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

/**
 * Pass two of the general path: the records as PostgreSQL COPY text, one chunk per batch of records,
 * read ahead so parsing overlaps with the database's work.
 */
export async function* copyTextChunks(file: PreparedFile, schema: InferredSchema): AsyncGenerator<Buffer> {
  const names = schema.fields.map((f) => f.name);
  const types = schema.fields.map((f) => f.type);
  const values: unknown[] = new Array(names.length);
  for await (const batch of readAhead(coercedBatches(file, schema, 5000), 3)) {
    let text = '';
    for (const record of batch) {
      for (let i = 0; i < names.length; i++) values[i] = record[names[i]];
      text += copyTextLine(values, types);
    }
    yield Buffer.from(text);
  }
}

/**
 * Reads up to `depth` items ahead of the consumer, so parsing the next batches (CPU, this process)
 * overlaps with inserting the current one (I/O, the database's process). Memory: `depth` items.
 */
export async function* readAhead<T>(source: AsyncIterable<T>, depth: number): AsyncGenerator<T> {
  const it = source[Symbol.asyncIterator]();
  const queue: Promise<IteratorResult<T>>[] = [];
  const more = () => {
    const p = it.next();
    p.catch(() => {}); // observed when its turn comes; never an unhandled rejection meanwhile
    queue.push(p);
  };
  try {
    for (let i = 0; i < depth; i++) more();
    for (;;) {
      const r = await queue.shift()!;
      if (r.done) return;
      more();
      yield r.value;
    }
  } finally {
    await it.return?.(undefined);
  }
}
