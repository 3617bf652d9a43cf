import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { PGlite } from '@electric-sql/pglite';
import { drizzle } from 'drizzle-orm/pglite';
import { migrate } from 'drizzle-orm/pglite/migrator';
import { MIGRATIONS_DIR } from './client.js';

/**
 * A migrated, empty PGlite data dir as a gzipped tarball (~5 MB), built with dist/ (bin/build.mjs).
 * A first start on an empty SVC_DATA_DIR loads it instead of running initdb and every migration:
 * ready in ~5 s instead of ~11 s, and without the ~500 MB of wasm memory initdb grows, which a wasm
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

function pgliteVersion(): string {
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

/** The template at `file` when it was built for these migrations and this PGlite; otherwise undefined. */
export function readPgliteTemplate(file: string): Blob | undefined {
  try {
    const { key } = JSON.parse(fs.readFileSync(`${file}.json`, 'utf8')) as { key?: string };
    if (key !== templateKey()) return undefined;
    return new Blob([fs.readFileSync(file)], { type: 'application/x-gzip' });
  } catch {
    return undefined;
  }
}
