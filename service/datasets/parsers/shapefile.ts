import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { Unzip, UnzipInflate, UnzipPassThrough, type UnzipFile } from 'fflate';
import type { Feature } from 'geojson';
import * as shapefile from 'shapefile';
import { DataFileError, type ParseLimits, type SourceRecord } from '../records.js';
import { featureFields, type GeoJsonGeometry } from './geometry.js';

const WANTED = /\.(shp|dbf|prj|cpg)$/i;

export interface ExtractedShapefile {
  shp: string;
  dbf?: string;
  prj?: string;
  cpg?: string;
  name: string;
}

/** `.cpg` contents → a TextDecoder label (`1252` → windows-1252). */
export function encodingFromCpg(cpg: string): string | undefined {
  const v = cpg.trim().toLowerCase();
  if (!v) return undefined;
  if (/^(utf-?8|65001)$/.test(v)) return 'utf-8';
  if (/^\d{3,4}$/.test(v)) return `windows-${v}`;
  if (/^(ansi )?1252$/.test(v)) return 'windows-1252';
  try {
    new TextDecoder(v);
    return v;
  } catch {
    return undefined;
  }
}

/**
 * Streams the zip through fflate's streaming Unzip and writes only the .shp/.dbf/.prj/.cpg entries
 * to `dir`, counting uncompressed bytes as they are inflated: a zip bomb stops at the limit, long
 * before it fills memory or disk. Paths inside the zip are never used as file paths.
 */
export async function extractShapefileZip(input: Readable, dir: string, limits: ParseLimits): Promise<ExtractedShapefile> {
  const files = new Map<string, string>(); // lower-case entry name → spooled path
  let total = 0;
  let counter = 0;
  let failure: Error | null = null;
  let pending = 0;
  const unzip = new Unzip((f: UnzipFile) => {
    const name = f.name.replace(/\\/g, '/');
    if (name.startsWith('__MACOSX/') || name.split('/').pop()!.startsWith('._') || !WANTED.test(name)) return;
    if (f.compression !== 0 && f.compression !== 8) {
      failure = new DataFileError(`zip entry uses unsupported compression method ${f.compression}`, { entry: name });
      return;
    }
    const target = path.join(dir, `entry-${counter++}${path.extname(name).toLowerCase()}`);
    const fd = fs.openSync(target, 'w');
    files.set(name.toLowerCase(), target);
    let closed = false;
    pending++;
    f.ondata = (err, data, final) => {
      if (closed) return;
      if (err) {
        failure ??= new DataFileError(`zip entry is corrupt: ${err.message}`, { entry: name });
      } else {
        total += data.length;
        if (total > limits.maxUncompressedBytes) {
          failure ??= new DataFileError(`the zip expands to more than ${limits.maxUncompressedBytes} bytes`, { entry: name });
        } else if (!failure) fs.writeSync(fd, data);
      }
      if (final || err || failure) {
        closed = true;
        fs.closeSync(fd);
        pending--;
        if (!final) f.terminate();
      }
    };
    f.start();
  });
  unzip.register(UnzipInflate);
  unzip.register(UnzipPassThrough);
  for await (const chunk of input as AsyncIterable<Buffer>) {
    if (failure) break;
    try {
      unzip.push(chunk);
    } catch (e) {
      throw new DataFileError(`not a readable ZIP file: ${(e as Error).message}`);
    }
  }
  if (!failure) {
    try {
      unzip.push(new Uint8Array(0), true);
    } catch (e) {
      throw new DataFileError(`not a readable ZIP file: ${(e as Error).message}`);
    }
  }
  if (!failure && pending > 0) failure = new DataFileError('the ZIP file ends early (truncated upload?)');
  if (failure) throw failure;
  const [shp] = [...files.keys()].filter((k) => k.endsWith('.shp')).sort();
  if (shp === undefined) {
    throw new DataFileError(files.size === 0 ? 'not a Shapefile ZIP: no .shp file inside (or not a ZIP file)' : 'the zip has no .shp file');
  }
  const base = shp.slice(0, -4);
  return {
    name: shp,
    shp: files.get(shp)!,
    dbf: files.get(`${base}.dbf`),
    prj: files.get(`${base}.prj`),
    cpg: files.get(`${base}.cpg`),
  };
}

/**
 * Shapefile ZIP: the first .shp in the zip (any folder) with its .dbf (attributes), .cpg (attribute
 * encoding; Windows-1252 when absent, the format's traditional default) and .prj. Read by the
 * `shapefile` package record by record from the spooled entries. Attributes become fields; the
 * shape becomes GeoJSON. Coordinates are kept as they are: longitude/latitude are filled only when
 * the .prj is geographic (GEOGCS) or absent, since projected metres would make `bbox` lie.
 */
export async function* readShapefile(x: ExtractedShapefile, limits: ParseLimits): AsyncGenerator<SourceRecord> {
  if (!x.dbf) throw new DataFileError(`${x.name} has no matching .dbf file in the zip`, { entry: x.name });
  const prj = x.prj ? fs.readFileSync(x.prj, 'utf8').trim() : '';
  const projected = /^PROJCS\[/i.test(prj);
  const encoding = x.cpg ? encodingFromCpg(fs.readFileSync(x.cpg, 'utf8')) : undefined;
  let source: Awaited<ReturnType<typeof shapefile.open>>;
  try {
    source = await shapefile.open(x.shp, x.dbf, encoding ? { encoding } : {});
  } catch (e) {
    throw new DataFileError(`not a readable shapefile: ${(e as Error).message}`, { entry: x.name });
  }
  let row = 0;
  for (;;) {
    let next: { done: boolean; value: Feature };
    try {
      next = (await source.read()) as { done: boolean; value: Feature };
    } catch (e) {
      throw new DataFileError(`cannot read the shape or attributes: ${(e as Error).message}`, { entry: x.name, row: row + 1 });
    }
    if (next.done) break;
    row++;
    if (row > limits.maxRecords) throw new DataFileError(`more than ${limits.maxRecords} records`, { row });
    const fields = featureFields(next.value.properties as Record<string, unknown>, next.value.geometry as unknown as GeoJsonGeometry);
    if (projected) {
      fields.longitude = null;
      fields.latitude = null;
    }
    yield { row, fields };
  }
}
