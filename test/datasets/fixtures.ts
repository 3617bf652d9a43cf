/**
 * Data files of every accepted kind, written by the tests themselves (libraries or by hand, no
 * downloads). Every fixture holds the same five cities so each format is queried the same way.
 */
import zlib from 'node:zlib';
import ExcelJS from 'exceljs';
import { zipSync } from 'fflate';
import { ByteWriter, geojsonToWkb, parquetWrite } from 'hyparquet-writer';
import shpwrite from '@mapbox/shp-write';

export interface City {
  name: string;
  country: string;
  population: number;
  area: number;
  capital: boolean;
  founded: string; // YYYY-MM-DD
  lon: number;
  lat: number;
}

export const CITIES: City[] = [
  { name: 'Berlin', country: 'DE', population: 3_645_000, area: 891.8, capital: true, founded: '1237-10-28', lon: 13.405, lat: 52.52 },
  { name: 'Hamburg', country: 'DE', population: 1_841_000, area: 755.2, capital: false, founded: '0808-01-01', lon: 9.993, lat: 53.551 },
  { name: 'Paris', country: 'FR', population: 2_161_000, area: 105.4, capital: true, founded: '0250-06-15', lon: 2.352, lat: 48.857 },
  { name: 'Lyon', country: 'FR', population: 513_000, area: 47.87, capital: false, founded: '0043-10-09', lon: 4.835, lat: 45.764 },
  { name: 'Zürich, "Downtown"', country: 'CH', population: 421_000, area: 87.88, capital: false, founded: '1218-02-01', lon: 8.541, lat: 47.377 },
];

function csvCell(v: string, delim: string): string {
  return /["\n\r]/.test(v) || v.includes(delim) ? `"${v.replace(/"/g, '""')}"` : v;
}

/** CSV with a BOM, the given delimiter, CRLF line ends and a quoted field holding a delimiter and quotes. */
export function citiesCsv(delim = ',', bom = true): Buffer {
  const lines = [['name', 'country', 'population', 'area', 'capital', 'founded', 'lon', 'lat'].join(delim)];
  for (const c of CITIES) {
    lines.push(
      [c.name, c.country, String(c.population), String(c.area), String(c.capital), c.founded, String(c.lon), String(c.lat)]
        .map((v) => csvCell(v, delim))
        .join(delim),
    );
  }
  return Buffer.from(`${bom ? '\ufeff' : ''}${lines.join('\r\n')}\r\n`, 'utf8');
}

export async function citiesXlsx(sheetName = 'Cities', withFirstSheet?: string): Promise<Buffer> {
  const wb = new ExcelJS.Workbook();
  if (withFirstSheet) {
    const other = wb.addWorksheet(withFirstSheet);
    other.addRow(['note']);
    other.addRow(['this sheet is not the data']);
  }
  const ws = wb.addWorksheet(sheetName);
  ws.addRow(['name', 'country', 'population', 'area', 'capital', 'founded', 'lon', 'lat']);
  for (const c of CITIES) ws.addRow([c.name, c.country, c.population, c.area, c.capital, new Date(`${c.founded}T00:00:00Z`), c.lon, c.lat]);
  ws.getColumn(6).numFmt = 'yyyy-mm-dd';
  // A formula: its cached result is the value.
  ws.getCell('I1').value = 'density';
  for (let i = 0; i < CITIES.length; i++) {
    ws.getCell(`I${i + 2}`).value = { formula: `C${i + 2}/D${i + 2}`, result: Math.round(CITIES[i]!.population / CITIES[i]!.area) } as ExcelJS.CellFormulaValue;
  }
  return Buffer.from(await wb.xlsx.writeBuffer());
}

export function citiesJson(wrapped = false): Buffer {
  const records = CITIES.map((c) => ({ ...c, tags: { eu: c.country !== 'CH' } }));
  return Buffer.from(JSON.stringify(wrapped ? { meta: { source: 'test', list: [1, 2] }, data: records } : records, null, 2));
}

export function citiesGeoJson(): Buffer {
  return Buffer.from(
    JSON.stringify({
      type: 'FeatureCollection',
      features: [
        ...CITIES.map((c) => ({
          type: 'Feature',
          properties: { name: c.name, country: c.country, population: c.population, capital: c.capital, founded: c.founded },
          geometry: { type: 'Point', coordinates: [c.lon, c.lat] },
        })),
        {
          type: 'Feature',
          properties: { name: 'Lake', country: 'CH', population: 0, capital: false, founded: null },
          geometry: {
            type: 'Polygon',
            coordinates: [
              [
                [8, 47],
                [9, 47],
                [9, 48],
                [8, 47],
              ],
            ],
          },
        },
      ],
    }),
  );
}

export async function citiesShapefileZip(): Promise<Buffer> {
  const gj = {
    type: 'FeatureCollection',
    features: CITIES.map((c) => ({
      type: 'Feature',
      properties: { name: c.name.replace(/[^A-Za-z ,"]/g, 'u'), country: c.country, population: c.population, capital: c.capital },
      geometry: { type: 'Point', coordinates: [c.lon, c.lat] },
    })),
  };
  const out = await shpwrite.zip(gj as never, { outputType: 'nodebuffer', compression: 'DEFLATE', folder: 'layer', types: { point: 'cities' } });
  return Buffer.from(out as Uint8Array);
}

/** LZ4 block with literals only: valid LZ4_RAW that any decoder must read. */
function lz4Literals(input: Uint8Array): Uint8Array {
  const n = input.length;
  const out: number[] = [];
  out.push((Math.min(n, 15) << 4) | 0);
  if (n >= 15) {
    let rest = n - 15;
    while (rest >= 255) {
      out.push(255);
      rest -= 255;
    }
    out.push(rest);
  }
  const head = Uint8Array.from(out);
  const res = new Uint8Array(head.length + n);
  res.set(head);
  res.set(input, head.length);
  return res;
}

/** A zstd frame of raw (stored) blocks: valid ZSTD that any decoder must read. */
function zstdRaw(input: Uint8Array): Uint8Array {
  const parts: Uint8Array[] = [];
  const header = Buffer.alloc(9);
  header.writeUInt32LE(0xfd2fb528, 0);
  header[4] = 0xa0; // single segment, 4-byte content size
  header.writeUInt32LE(input.length, 5);
  parts.push(header);
  const MAX = 128 * 1024;
  for (let off = 0; off < input.length || off === 0; off += MAX) {
    const chunk = input.subarray(off, Math.min(input.length, off + MAX));
    const last = off + MAX >= input.length ? 1 : 0;
    const bh = (chunk.length << 3) | last;
    parts.push(Uint8Array.from([bh & 0xff, (bh >> 8) & 0xff, (bh >> 16) & 0xff]), chunk);
    if (input.length === 0) break;
  }
  return Buffer.concat(parts);
}

export const PARQUET_CODECS = ['UNCOMPRESSED', 'SNAPPY', 'GZIP', 'BROTLI', 'ZSTD', 'LZ4_RAW'] as const;
export type ParquetCodec = (typeof PARQUET_CODECS)[number];

const compressors = {
  GZIP: (b: Uint8Array) => new Uint8Array(zlib.gzipSync(b)),
  BROTLI: (b: Uint8Array) => new Uint8Array(zlib.brotliCompressSync(b)),
  ZSTD: zstdRaw,
  LZ4_RAW: lz4Literals,
};

function writeParquet(
  columnData: Parameters<typeof parquetWrite>[0]['columnData'],
  codec: ParquetCodec,
  kvMetadata?: { key: string; value: string }[],
  rowGroupSize?: number,
): Buffer {
  const writer = new ByteWriter();
  parquetWrite({ writer, columnData, codec, compressors, kvMetadata, rowGroupSize });
  return Buffer.from(writer.getBuffer());
}

export function citiesParquet(codec: ParquetCodec = 'SNAPPY', rowGroupSize?: number): Buffer {
  return writeParquet(
    [
      { name: 'name', data: CITIES.map((c) => c.name), type: 'STRING' },
      { name: 'country', data: CITIES.map((c) => c.country), type: 'STRING' },
      { name: 'population', data: CITIES.map((c) => BigInt(c.population)), type: 'INT64' },
      { name: 'area', data: CITIES.map((c) => c.area), type: 'DOUBLE' },
      { name: 'capital', data: CITIES.map((c) => c.capital), type: 'BOOLEAN' },
      { name: 'seen_at', data: CITIES.map((_, i) => new Date(Date.UTC(2024, 0, 1 + i, 12, 30))), type: 'TIMESTAMP' },
      { name: 'lon', data: CITIES.map((c) => c.lon), type: 'DOUBLE' },
      { name: 'lat', data: CITIES.map((c) => c.lat), type: 'DOUBLE' },
    ],
    codec,
    undefined,
    rowGroupSize,
  );
}

/** GeoParquet 1.1: WKB in a plain BYTE_ARRAY column, described by the `geo` file metadata. */
/**
 * `rows` rows of every plain column kind, in row groups of `rowGroupSize`: n INT64 (one null), price
 * DOUBLE (whole numbers; `lastPrice` for the last row), flag BOOLEAN (null every 5th), name STRING
 * (empty every 7th), at TIMESTAMP, meta JSON.
 */
export function mixedParquet(rows: number, lastPrice: number, rowGroupSize = 4000): Buffer {
  const idx = Array.from({ length: rows }, (_, i) => i);
  return writeParquet(
    [
      { name: 'n', data: idx.map((i) => (i === 3 ? null : BigInt(i))), type: 'INT64' },
      { name: 'price', data: idx.map((i) => (i === rows - 1 ? lastPrice : i % 100)), type: 'DOUBLE' },
      { name: 'flag', data: idx.map((i) => (i % 5 === 0 ? null : i % 2 === 0)), type: 'BOOLEAN' },
      { name: 'name', data: idx.map((i) => (i % 7 === 0 ? '' : `row ${i}`)), type: 'STRING' },
      { name: 'at', data: idx.map((i) => new Date(Date.UTC(2024, 0, 1, 12, 0, i % 60))), type: 'TIMESTAMP' },
      { name: 'meta', data: idx.map((i) => ({ i, even: i % 2 === 0 })), type: 'JSON' },
    ],
    'SNAPPY',
    undefined,
    rowGroupSize,
  );
}

export function citiesGeoParquet(codec: ParquetCodec = 'SNAPPY'): Buffer {
  const geo = { version: '1.1.0', primary_column: 'geom', columns: { geom: { encoding: 'WKB', geometry_types: ['Point', 'Polygon'] } } };
  const geoms = [
    ...CITIES.map((c) => ({ type: 'Point', coordinates: [c.lon, c.lat] })),
    {
      type: 'Polygon',
      coordinates: [
        [
          [8, 47],
          [9, 47],
          [9, 48],
          [8, 47],
        ],
      ],
    },
  ];
  return writeParquet(
    [
      { name: 'name', data: [...CITIES.map((c) => c.name), 'Lake'], type: 'STRING' },
      { name: 'population', data: [...CITIES.map((c) => c.population), 0], type: 'INT32' },
      { name: 'geom', data: geoms.map((g) => geojsonToWkb(g as never)), type: 'BYTE_ARRAY' },
    ],
    codec,
    [{ key: 'geo', value: JSON.stringify(geo) }],
  );
}

/** A zip whose one entry inflates to `size` bytes of zeros (a zip bomb in miniature). */
export function zipBomb(size: number): Buffer {
  return Buffer.from(zipSync({ 'bomb/layer.shp': new Uint8Array(size), 'bomb/layer.dbf': new Uint8Array(10) }, { level: 9 }));
}

export function zipOf(files: Record<string, Uint8Array | string>): Buffer {
  const entries: Record<string, Uint8Array> = {};
  for (const [k, v] of Object.entries(files)) entries[k] = typeof v === 'string' ? new TextEncoder().encode(v) : v;
  return Buffer.from(zipSync(entries));
}
