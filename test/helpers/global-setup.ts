import fs from 'node:fs';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { drizzle } from 'drizzle-orm/pglite';
import { migrate } from 'drizzle-orm/pglite/migrator';
import type { TestProject } from 'vitest/node';
import { MIGRATIONS_DIR } from '../../service/db/client.js';
import { packagePath } from '../../service/package-root.js';

/**
 * One migrated PGlite data dir, as a tarball every test file loads (~1 s instead of ~4 s for a fresh
 * instance plus migrations). Built once and kept in node_modules/.cache, named after a hash of the
 * migrations and the PGlite version, so a changed migration or upgrade builds a new one.
 */
export default async function setup(project: TestProject): Promise<void> {
  project.provide('pgliteTemplate', await migratedTemplate());
}

async function migratedTemplate(): Promise<string> {
  const hash = createHash('sha256');
  hash.update(JSON.parse(fs.readFileSync(packagePath('node_modules/@electric-sql/pglite/package.json'), 'utf8')).version);
  for (const f of fs.readdirSync(MIGRATIONS_DIR, { recursive: true, withFileTypes: true }).filter((e) => e.isFile())) {
    const file = path.join(f.parentPath, f.name);
    hash.update(path.relative(MIGRATIONS_DIR, file)).update(fs.readFileSync(file));
  }
  const dir = packagePath('node_modules/.cache/svc-tests');
  const file = path.join(dir, `pglite-template-${hash.digest('hex').slice(0, 16)}.tar`);
  if (fs.existsSync(file)) return file;
  const pg = await PGlite.create();
  await migrate(drizzle(pg), { migrationsFolder: MIGRATIONS_DIR });
  const dump = await pg.dumpDataDir('none');
  await pg.close();
  fs.mkdirSync(dir, { recursive: true });
  // Written aside and renamed: two runs starting together never read half a file.
  const partial = `${file}.${process.pid}`;
  fs.writeFileSync(partial, Buffer.from(await dump.arrayBuffer()));
  fs.renameSync(partial, file);
  return file;
}

declare module 'vitest' {
  export interface ProvidedContext {
    pgliteTemplate: string;
  }
}
