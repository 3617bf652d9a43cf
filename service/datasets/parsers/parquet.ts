import { asyncBufferFromFile, parquetMetadataAsync, parquetRead, parquetReadObjects, parquetSchema } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { DataFileError, type ParseLimits, type SourceRecord } from '../records.js';
import { featureFields, isGeometry, type GeoJsonGeometry } from './geometry.js';

/**
 * Rows decoded at a time. hyparquet decodes a whole column chunk for any slice of its row group, so
 * slicing a group costs a decode per slice: groups up to this size are read whole (one decode), larger
 * ones in slices of it (bounding the objects alive at once).
 */
const SLICE_ROWS = 262_144;

export interface ParquetInfo {
  /** The GeoParquet primary geometry column, when the file has `geo` metadata. */
  geometryColumn: string | null;
  rows: number;
}

type ParquetFile = Awaited<ReturnType<typeof asyncBufferFromFile>>;
type ParquetMetadata = Awaited<ReturnType<typeof parquetMetadataAsync>>;

async function readFooter(file: ParquetFile): Promise<ParquetMetadata> {
  try {
    return await parquetMetadataAsync(file);
  } catch (e) {
    throw new DataFileError(`not a readable Parquet file: ${(e as Error).message}`);
  }
}

/** Row count and whether this is GeoParquet (and its geometry column), from the footer. */
function infoOf(metadata: ParquetMetadata): ParquetInfo {
  const geo = metadata.key_value_metadata?.find((kv) => kv.key === 'geo')?.value;
  let geometryColumn: string | null = null;
  if (geo) {
    try {
      const parsed = JSON.parse(geo) as { primary_column?: string; columns?: Record<string, { encoding?: string }> };
      geometryColumn = parsed.primary_column ?? Object.keys(parsed.columns ?? {})[0] ?? null;
    } catch {
      throw new DataFileError('the GeoParquet "geo" metadata is not valid JSON');
    }
  }
  return { geometryColumn, rows: Number(metadata.num_rows) };
}

/** Reads the footer: row count and whether this is GeoParquet (and its geometry column). */
export async function inspectParquet(path: string): Promise<ParquetInfo> {
  return infoOf(await readFooter(await asyncBufferFromFile(path)));
}

/**
 * Parquet by hyparquet (pure JS, reads DuckDB/Arrow/Spark files) with hyparquet-compressors (snappy,
 * gzip, zstd, brotli, lz4). Parquet needs random access to its footer and column chunks, so the
 * file is read from a local spool file, one row group (in slices of 256k rows) at a time: memory is
 * bounded by a row group's column data, not the file. INT64 arrives as BigInt and is kept exact.
 * GeoParquet: hyparquet decodes the WKB geometry column to GeoJSON, which is stored as for GeoJSON.
 */
export async function* parseParquet(path: string, limits: ParseLimits): AsyncGenerator<SourceRecord> {
  const file = await asyncBufferFromFile(path);
  const metadata = await readFooter(file);
  const info = infoOf(metadata);
  checkSize(metadata, limits);
  let row = 0;
  for (const [s, end] of slices(metadata)) {
    let rows: Record<string, unknown>[];
    try {
      rows = (await parquetReadObjects({ file, metadata, compressors, rowStart: s, rowEnd: end })) as Record<string, unknown>[];
    } catch (e) {
      throw new DataFileError(`cannot decode rows ${s + 1}–${end}: ${(e as Error).message}`, { row: s + 1 });
    }
    for (const r of rows) {
      row++;
      if (info.geometryColumn) {
        const { [info.geometryColumn]: g, ...props } = r;
        if (g !== null && g !== undefined && !isGeometry(g)) throw new DataFileError('the geometry could not be decoded', { row, column: info.geometryColumn });
        yield { row, fields: featureFields(props, (g ?? null) as GeoJsonGeometry | null) };
      } else {
        yield { row, fields: r };
      }
    }
  }
}

/** Rows of a Parquet file by columns: `columns[i]` holds column `names[i]` of rows firstRow…firstRow+length-1. */
export interface ParquetColumnSlice {
  names: string[];
  /** 1-based number of the slice's first row. */
  firstRow: number;
  length: number;
  /** Arrays or typed arrays as hyparquet decoded them (undefined and null: no value). */
  columns: ArrayLike<unknown>[];
}

/** Keeps the first slice between a sample read and the full read that follows it (one decode). */
export interface ParquetSliceCache {
  first?: ParquetColumnSlice;
}

/**
 * The same values as parseParquet for a plain (not Geo) Parquet file, a slice of rows at a time as
 * columns: no object per row is built, which is most of the cost of reading a big file row by row.
 * `maxRows` stops early (the schema guess); with a `cache`, the slice such a read decoded is kept for
 * the next read, which starts with it.
 */
export async function* parseParquetColumns(
  path: string,
  limits: ParseLimits,
  maxRows = Infinity,
  cache?: ParquetSliceCache,
): AsyncGenerator<ParquetColumnSlice> {
  const file = await asyncBufferFromFile(path);
  const metadata = await readFooter(file);
  checkSize(metadata, limits);
  const names = parquetSchema(metadata).children.map((c) => c.element.name);
  const index = new Map(names.map((n, i) => [n, i]));
  const read = async (s: number, end: number): Promise<ParquetColumnSlice> => {
    const parts: ColumnPart[][] = names.map(() => []);
    try {
      await parquetRead({
        file,
        metadata,
        compressors,
        rowStart: s,
        rowEnd: end,
        onChunk: ({ columnName, columnData, rowStart }) => parts[index.get(columnName)!]!.push({ rowStart, data: columnData }),
      });
    } catch (e) {
      throw new DataFileError(`cannot decode rows ${s + 1}–${end}: ${(e as Error).message}`, { row: s + 1 });
    }
    const columns = parts.map((p, i) => {
      const rows = rowsOf(p, s, end);
      if (rows.length !== end - s)
        throw new DataFileError(`column "${names[i]}" holds ${rows.length} values for rows ${s + 1}–${end}`, { row: s + 1, column: names[i] });
      return rows;
    });
    return { names, firstRow: s + 1, length: end - s, columns };
  };
  for (const [s, end] of slices(metadata)) {
    if (s >= maxRows) return;
    const slice = s === 0 && cache?.first ? cache.first : await read(s, end);
    if (cache && s === 0) cache.first = maxRows < end ? slice : undefined;
    if (maxRows < end) {
      yield { ...slice, length: maxRows - s };
      return;
    }
    yield slice;
  }
}

interface ColumnPart {
  rowStart: number;
  data: ArrayLike<unknown>;
}

/** The values of rows [s, end) from the decoded parts of a column (which may reach outside it). */
function rowsOf(parts: ColumnPart[], s: number, end: number): ArrayLike<unknown> {
  const only = parts.length === 1 ? parts[0]! : undefined;
  if (only && only.rowStart === s && only.data.length === end - s) return only.data;
  parts.sort((a, b) => a.rowStart - b.rowStart);
  const typed = sameTypedArray(parts);
  if (typed) {
    // Pages of a column without nulls (bin/patch-deps.mjs): copied whole, never boxed.
    const out = new typed(end - s);
    let at = 0;
    for (const { rowStart, data } of parts) {
      const from = Math.max(s, rowStart) - rowStart;
      const to = Math.min(end, rowStart + data.length) - rowStart;
      if (to <= from) continue;
      out.set((data as Float64Array).subarray(from, to), at);
      at += to - from;
    }
    return at === out.length ? out : out.subarray(0, at);
  }
  const out: unknown[] = [];
  for (const { rowStart, data } of parts) {
    const to = Math.min(end, rowStart + data.length);
    for (let r = Math.max(s, rowStart); r < to; r++) out.push(data[r - rowStart]);
  }
  return out;
}

type TypedArrayClass = new (length: number) => Float64Array;

/** The typed array class every part is an instance of, or null (a plain array among them, or two kinds). */
function sameTypedArray(parts: ColumnPart[]): TypedArrayClass | null {
  const first = parts[0]?.data;
  if (!ArrayBuffer.isView(first)) return null;
  const kind = first.constructor as TypedArrayClass;
  return parts.every((p) => p.data.constructor === kind) ? kind : null;
}

function checkSize(metadata: ParquetMetadata, limits: ParseLimits): void {
  const columns = parquetSchema(metadata).children.length;
  if (columns > limits.maxColumns) throw new DataFileError(`the file has ${columns} columns; at most ${limits.maxColumns} are allowed`);
  const total = Number(metadata.num_rows);
  if (total > limits.maxRecords) throw new DataFileError(`the file has ${total} records; at most ${limits.maxRecords} are allowed`);
}

/** [start, end) row ranges: each row group whole, or in SLICE_ROWS slices when larger. */
function* slices(metadata: ParquetMetadata): Generator<[number, number]> {
  let start = 0;
  for (const group of metadata.row_groups) {
    const groupRows = Number(group.num_rows);
    for (let s = start; s < start + groupRows; s += SLICE_ROWS) yield [s, Math.min(start + groupRows, s + SLICE_ROWS)];
    start += groupRows;
  }
}
