/**
 * Geometry columns of geographic formats (GeoJSON, Shapefile, GeoParquet). A dataset keeps the
 * geometry as a GeoJSON object in a `geometry` field (type json) and, for points, the coordinates
 * in `longitude` and `latitude` number fields, so the Table API's `bbox` works without knowing
 * GeoJSON. Properties of the feature whose names collide with these get a `property_` prefix.
 */
export const GEOMETRY_FIELD = 'geometry';
export const LONGITUDE_FIELD = 'longitude';
export const LATITUDE_FIELD = 'latitude';
const RESERVED = new Set([GEOMETRY_FIELD, LONGITUDE_FIELD, LATITUDE_FIELD]);

export interface GeoJsonGeometry {
  type: string;
  coordinates?: unknown;
  geometries?: unknown;
}

export function isGeometry(value: unknown): value is GeoJsonGeometry {
  if (!value || typeof value !== 'object') return false;
  const g = value as GeoJsonGeometry;
  return typeof g.type === 'string' && (Array.isArray(g.coordinates) || Array.isArray(g.geometries));
}

/** Feature properties plus the geometry fields. */
export function featureFields(properties: Record<string, unknown> | null | undefined, geometry: GeoJsonGeometry | null | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (properties) {
    for (const [k, v] of Object.entries(properties)) out[RESERVED.has(k) ? `property_${k}` : k] = v;
  }
  out[GEOMETRY_FIELD] = geometry ?? null;
  const point = pointOf(geometry);
  out[LONGITUDE_FIELD] = point ? point[0] : null;
  out[LATITUDE_FIELD] = point ? point[1] : null;
  return out;
}

/** [lon, lat] of a Point geometry (or a MultiPoint with one point); null otherwise. */
export function pointOf(geometry: GeoJsonGeometry | null | undefined): [number, number] | null {
  if (!geometry) return null;
  let c: unknown = geometry.coordinates;
  if (geometry.type === 'MultiPoint' && Array.isArray(c) && c.length === 1) c = c[0];
  else if (geometry.type !== 'Point') return null;
  if (!Array.isArray(c) || typeof c[0] !== 'number' || typeof c[1] !== 'number') return null;
  if (!Number.isFinite(c[0]) || !Number.isFinite(c[1])) return null;
  return [c[0], c[1]];
}
