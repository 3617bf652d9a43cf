import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import zlib from 'node:zlib';
import { PGlite } from '@electric-sql/pglite';
import { drizzle } from 'drizzle-orm/pglite';
import { migrate } from 'drizzle-orm/pglite/migrator';
import { MIGRATIONS_DIR } from './client.js';

/**
 * A migrated, empty PGlite data dir as a gzipped tarball (~5 MB), built with dist/ (bin/build.mjs).
 * A first start on an empty SVC_DATA_DIR unpacks it instead of running initdb and every migration:
 * ready in ~1 s instead of ~11 s, and without the ~500 MB of wasm memory initdb grows, which a wasm
 * instance never gives back (measured in docs/performance.md). It is used only by the migrations and
 * the PGlite version it was built from (`templateKey`); otherwise a first start runs initdb as before.
 */

/** sha256 over every migration file and the PGlite version. */
export function templateKey(): string {
  const hash = createHash('sha256').update(`pglite ${pgliteVersion()}\n`);
  const files = fs
    .readdirSync(MIGRATIONS_DIR, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name))
    .sort();
  for (const file of files) hash.update(path.relative(MIGRATIONS_DIR, file)).update('\0').update(fs.readFileSync(file));
  return hash.digest('hex');
}

/** The installed @electric-sql/pglite's version. */
export function pgliteVersion(): string {
  // The package's main module, wherever the install put it; its package.json is the first one above it.
  let dir = path.dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'));
  for (;;) {
    const file = path.join(dir, 'package.json');
    if (fs.existsSync(file)) {
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === '@electric-sql/pglite') return pkg.version ?? 'unknown';
    }
    const up = path.dirname(dir);
    if (up === dir) return 'unknown';
    dir = up;
  }
}

/** A fresh in-memory PGlite, migrated, dumped. */
export async function buildPgliteTemplate(compression: 'gzip' | 'none' = 'gzip'): Promise<Blob> {
  const pg = await PGlite.create();
  try {
    await migrate(drizzle(pg), { migrationsFolder: MIGRATIONS_DIR });
    return await pg.dumpDataDir(compression);
  } finally {
    await pg.close();
  }
}

/** Writes the template and, beside it, the key it was built for. */
export async function writePgliteTemplate(file: string): Promise<void> {
  const blob = await buildPgliteTemplate('gzip');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, Buffer.from(await blob.arrayBuffer()));
  fs.writeFileSync(`${file}.json`, `${JSON.stringify({ key: templateKey() })}\n`);
}

/** Whether the template at `file` was built for these migrations and this PGlite (the key written beside it). */
export function isCurrentTemplate(file: string): boolean {
  try {
    const { key } = JSON.parse(fs.readFileSync(`${file}.json`, 'utf8')) as { key?: string };
    return key === templateKey();
  } catch {
    return false; // no key beside it: not built, or not by us
  }
}

/**
 * Fills `dir` (absent or empty) with the template at `file`, when that was built for these migrations
 * and this PGlite; false (and `dir` untouched) otherwise.
 */
export function unpackPgliteTemplate(file: string, dir: string): boolean {
  if (!isCurrentTemplate(file)) return false;
  extractDataDir(fs.readFileSync(file), dir);
  return true;
}

/**
 * Unpacks a `dumpDataDir()` tarball (gzipped or not) into `dir` (absent or empty) as real files, so
 * PGlite opens it as it opens a database it created itself. PGlite's own `loadDataDir` unpacks it
 * inside the wasm instance instead, which keeps ~115 MB more resident (docs/performance.md). The files
 * go to a folder beside `dir`, renamed into place when complete: a start killed halfway leaves no
 * half-written database, and the next start unpacks again.
 */
export function extractDataDir(tarball: Buffer, dir: string): void {
  const tar = tarball[0] === 0x1f && tarball[1] === 0x8b ? zlib.gunzipSync(tarball) : tarball;
  const unpacking = `${dir}.unpacking`;
  fs.rmSync(unpacking, { recursive: true, force: true });
  fs.mkdirSync(unpacking, { recursive: true, mode: 0o700 });
  for (const entry of tarEntries(tar)) {
    const target = path.join(unpacking, entry.name);
    if (!target.startsWith(unpacking + path.sep)) throw new Error(`template entry outside the data dir: ${entry.name}`);
    if (entry.type === 'directory') fs.mkdirSync(target, { recursive: true, mode: entry.mode });
    else {
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.writeFileSync(target, entry.body, { mode: entry.mode });
    }
  }
  if (fs.existsSync(dir)) fs.rmdirSync(dir); // empty, or this throws and nothing is replaced
  fs.renameSync(unpacking, dir);
}

interface TarEntry {
  name: string;
  type: 'file' | 'directory';
  mode: number;
  body: Buffer;
}

/** The entries of a ustar archive (what PGlite's dumpDataDir writes): regular files and directories only. */
function* tarEntries(tar: Buffer): Generator<TarEntry> {
  const text = (header: Buffer, from: number, length: number) => header.toString('latin1', from, from + length).replace(/\0.*$/s, '');
  const octal = (header: Buffer, from: number, length: number) => Number.parseInt(text(header, from, length).trim() || '0', 8);
  for (let at = 0; at + 512 <= tar.length; ) {
    const header = tar.subarray(at, at + 512);
    if (header.every((b) => b === 0)) return; // the archive's end
    const prefix = text(header, 345, 155);
    const name = (prefix ? `${prefix}/${text(header, 0, 100)}` : text(header, 0, 100)).replace(/^\/+/, '');
    const size = octal(header, 124, 12);
    const flag = text(header, 156, 1);
    if (flag !== '' && flag !== '0' && flag !== '5') throw new Error(`unexpected tar entry type "${flag}" for ${name}`);
    yield { name, type: flag === '5' ? 'directory' : 'file', mode: octal(header, 100, 8), body: tar.subarray(at + 512, at + 512 + size) };
    at += 512 + Math.ceil(size / 512) * 512;
  }
}
