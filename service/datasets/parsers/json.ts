import type { Readable } from 'node:stream';
import { DataFileError, type ParseLimits, type SourceRecord } from '../records.js';
import { featureFields, isGeometry } from './geometry.js';
import { scanJsonRecords, type JsonScanResult } from './json-stream.js';

/**
 * JSON: an array of objects, or an object holding one (`{"data": [...]}` — the first property whose
 * value is an array of objects). Each object's own properties are the fields; nested objects and
 * arrays become `json` fields.
 */
export async function* parseJson(input: Readable, limits: ParseLimits): AsyncGenerator<SourceRecord> {
  const scan: JsonScanResult = { key: null, rootStrings: new Map() };
  for await (const el of scanJsonRecords(input, limits, scan)) {
    yield { row: el.index, line: el.line, fields: el.value as Record<string, unknown> };
  }
}

/**
 * GeoJSON: a FeatureCollection, streamed feature by feature. Properties become
 * fields; the geometry is kept as GeoJSON plus longitude/latitude for points.
 */
export async function* parseGeoJson(input: Readable, limits: ParseLimits): AsyncGenerator<SourceRecord> {
  const scan: JsonScanResult = { key: null, rootStrings: new Map() };
  let n = 0;
  for await (const el of scanJsonRecords(input, limits, scan, 'features')) {
    const f = el.value as { type?: unknown; properties?: unknown; geometry?: unknown };
    if (f.type !== 'Feature') throw new DataFileError('element of "features" is not a GeoJSON Feature', { row: el.index, line: el.line });
    if (f.properties !== null && f.properties !== undefined && (typeof f.properties !== 'object' || Array.isArray(f.properties))) {
      throw new DataFileError('"properties" must be an object or null', { row: el.index, line: el.line });
    }
    if (f.geometry !== null && f.geometry !== undefined && !isGeometry(f.geometry)) {
      throw new DataFileError('"geometry" is not a GeoJSON geometry', { row: el.index, line: el.line });
    }
    n++;
    yield { row: el.index, line: el.line, fields: featureFields(f.properties as Record<string, unknown> | null, f.geometry as never) };
  }
  const type = scan.rootStrings.get('type');
  if (type !== 'FeatureCollection') {
    throw new DataFileError(
      type ? `GeoJSON of type "${type}" is not supported; expected a FeatureCollection` : 'not GeoJSON: the root object has no "type": "FeatureCollection"',
    );
  }
  void n;
}
