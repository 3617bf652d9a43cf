/**
 * What every format parser produces: an async iterable of source records, each with where it came
 * from in the file, so an error can say "row 1234" (or "line 88") instead of "somewhere".
 */
export interface SourceRecord {
  /** 1-based position of the record among the data records (header excluded). */
  row: number;
  /** 1-based line (CSV, JSON) or sheet row (XLSX) where the record starts, when the format has lines. */
  line?: number;
  /** Column name → value. Values are what the format gives: strings (CSV), numbers, booleans, Dates, objects. */
  fields: Record<string, unknown>;
}

export type DataFileKind = 'csv' | 'xlsx' | 'json' | 'geojson' | 'shapefile' | 'parquet' | 'geoparquet';

export interface ParseLocation {
  row?: number;
  line?: number;
  column?: string;
  sheet?: string;
  entry?: string;
}

/**
 * A file that cannot be turned into records. Carries the location; the conversion turns it into a
 * 400 `data_file_invalid` (nothing is loaded, nothing is charged).
 */
export class DataFileError extends Error {
  constructor(
    message: string,
    readonly location: ParseLocation = {},
  ) {
    super(message);
    this.name = 'DataFileError';
  }

  /** "row 12 (line 13): …" — the location first, so it is never lost in a long message. */
  get described(): string {
    const where: string[] = [];
    if (this.location.sheet) where.push(`sheet "${this.location.sheet}"`);
    if (this.location.entry) where.push(`entry ${this.location.entry}`);
    if (this.location.row !== undefined) where.push(`row ${this.location.row}`);
    if (this.location.line !== undefined) where.push(`line ${this.location.line}`);
    if (this.location.column !== undefined) where.push(`column "${this.location.column}"`);
    return where.length ? `${where.join(', ')}: ${this.message}` : this.message;
  }
}

/**
 * The `sheet` asked for is not in the workbook: the caller's argument is wrong, not the file
 * (answered as a validation error on `sheet`, naming the sheets there are).
 */
export class SheetNotFound extends DataFileError {}

/** Limits every parser honours; they keep a hostile file from exhausting memory or disk. */
export interface ParseLimits {
  /** Largest number of data records loaded from one file. */
  maxRecords: number;
  /** Largest number of columns. */
  maxColumns: number;
  /** Largest single JSON record / CSV field, in bytes. */
  maxRecordBytes: number;
  /** Largest total uncompressed size of the entries read from a ZIP (Shapefile). */
  maxUncompressedBytes: number;
}

export const DEFAULT_PARSE_LIMITS: ParseLimits = {
  maxRecords: 5_000_000,
  maxColumns: 500,
  maxRecordBytes: 8 * 1024 * 1024,
  maxUncompressedBytes: 2 * 1024 * 1024 * 1024,
};
