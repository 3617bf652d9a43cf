import { mediaTypeOf } from '../../shared/content-types.js';
import type { DataFileKind } from './records.js';

export interface KindInfo {
  kind: DataFileKind;
  /** Content-Type the upload URL is signed for. */
  contentType: string;
  label: string;
}

const KINDS: Record<DataFileKind, KindInfo> = {
  csv: { kind: 'csv', contentType: 'text/csv', label: 'CSV' },
  xlsx: { kind: 'xlsx', contentType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', label: 'XLSX' },
  json: { kind: 'json', contentType: 'application/json', label: 'JSON' },
  geojson: { kind: 'geojson', contentType: 'application/geo+json', label: 'GeoJSON' },
  shapefile: { kind: 'shapefile', contentType: 'application/zip', label: 'Shapefile ZIP' },
  parquet: { kind: 'parquet', contentType: 'application/vnd.apache.parquet', label: 'Parquet' },
  geoparquet: { kind: 'geoparquet', contentType: 'application/vnd.apache.parquet', label: 'GeoParquet' },
};

export const ACCEPTED_KINDS =
  'CSV (.csv, .tsv, .txt), XLSX (.xlsx), JSON (.json), GeoJSON (.geojson), Shapefile ZIP (.zip), Parquet (.parquet), GeoParquet (.geoparquet or .parquet with geo metadata)';

const BY_EXTENSION: Record<string, DataFileKind> = {
  csv: 'csv',
  tsv: 'csv',
  txt: 'csv',
  xlsx: 'xlsx',
  json: 'json',
  geojson: 'geojson',
  zip: 'shapefile',
  shz: 'shapefile',
  parquet: 'parquet',
  pq: 'parquet',
  geoparquet: 'geoparquet',
};

/** `fileType` may be a media type or a short name (`csv`, `GeoJSON`, `shapefile`, `geoparquet`…). */
const BY_TYPE: Record<string, DataFileKind> = {
  csv: 'csv',
  'text/csv': 'csv',
  'text/tab-separated-values': 'csv',
  'application/csv': 'csv',
  tsv: 'csv',
  xlsx: 'xlsx',
  excel: 'xlsx',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
  json: 'json',
  'application/json': 'json',
  'text/json': 'json',
  geojson: 'geojson',
  'application/geo+json': 'geojson',
  'application/vnd.geo+json': 'geojson',
  shapefile: 'shapefile',
  'shapefile zip': 'shapefile',
  shp: 'shapefile',
  zip: 'shapefile',
  'application/zip': 'shapefile',
  'application/x-zip-compressed': 'shapefile',
  parquet: 'parquet',
  'application/vnd.apache.parquet': 'parquet',
  'application/x-parquet': 'parquet',
  'application/parquet': 'parquet',
  geoparquet: 'geoparquet',
};

export function kindInfo(kind: DataFileKind): KindInfo {
  return KINDS[kind];
}

/**
 * The kind of a data file from its name (and the optional declared type, which wins when it names
 * an accepted kind). Null when neither names one. A `.json` file whose type says GeoJSON is GeoJSON.
 */
export function detectKind(fileName: string, fileType?: string): DataFileKind | null {
  const declared = fileType ? BY_TYPE[mediaTypeOf(fileType)] : undefined;
  const ext = /\.([A-Za-z0-9]+)$/.exec(fileName)?.[1]?.toLowerCase();
  const byName = ext ? BY_EXTENSION[ext] : undefined;
  if (declared && byName && declared !== byName) {
    // A generic declared type does not override a more specific extension (.geojson sent as application/json).
    if (declared === 'json' && byName === 'geojson') return 'geojson';
    if (declared === 'parquet' && byName === 'geoparquet') return 'geoparquet';
  }
  return declared ?? byName ?? null;
}

/**
 * A check of the first bytes against the kind, so a renamed PDF is refused with a clear message
 * before anything is parsed. Text formats are only checked for not being binary.
 */
export function sniffMismatch(kind: DataFileKind, head: Buffer): string | null {
  const zip = head.length >= 4 && head[0] === 0x50 && head[1] === 0x4b && (head[2] === 3 || head[2] === 5);
  const par1 = head.length >= 4 && head.subarray(0, 4).toString('latin1') === 'PAR1';
  switch (kind) {
    case 'xlsx':
    case 'shapefile':
      return zip ? null : `not a ZIP container, so not ${KINDS[kind].label}`;
    case 'parquet':
    case 'geoparquet':
      return par1 ? null : 'not a Parquet file (no PAR1 magic)';
    default: {
      if (zip || par1) return `looks like a binary ${zip ? 'ZIP' : 'Parquet'} file, not ${KINDS[kind].label}`;
      const sample = head.subarray(0, 4096);
      if (sample.includes(0)) return `contains NUL bytes: not ${KINDS[kind].label} text`;
      return null;
    }
  }
}

/** Text formats are streamed straight from the blob store; the others need a local spool file. */
export function needsSpool(kind: DataFileKind): boolean {
  return kind === 'parquet' || kind === 'geoparquet';
}
