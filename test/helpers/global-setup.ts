import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { drizzle } from 'drizzle-orm/pglite';
import { migrate } from 'drizzle-orm/pglite/migrator';
import type { TestProject } from 'vitest/node';
import { MIGRATIONS_DIR } from '../../service/db/client.js';

/**
 * Builds one migrated PGlite data dir and hands its tarball path to every test file: loading it
 * takes ~1 s instead of ~4 s for a fresh instance plus migrations.
 */
export default async function setup(project: TestProject): Promise<() => void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-test-template-'));
  const pg = await PGlite.create();
  await migrate(drizzle(pg), { migrationsFolder: MIGRATIONS_DIR });
  const dump = await pg.dumpDataDir('none');
  await pg.close();
  const file = path.join(dir, 'template.tar');
  fs.writeFileSync(file, Buffer.from(await dump.arrayBuffer()));
  project.provide('pgliteTemplate', file);
  return () => fs.rmSync(dir, { recursive: true, force: true });
}

declare module 'vitest' {
  export interface ProvidedContext {
    pgliteTemplate: string;
  }
}
