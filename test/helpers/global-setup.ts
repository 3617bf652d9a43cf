import fs from 'node:fs';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { buildPgliteTemplate, templateKey } from '../../service/db/pglite-template.js';
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
  const dir = packagePath('node_modules/.cache/svc-tests');
  const file = path.join(dir, `pglite-template-${templateKey().slice(0, 16)}.tar`);
  if (fs.existsSync(file)) return file;
  const dump = await buildPgliteTemplate('none');
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
