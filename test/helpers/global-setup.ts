import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import type { TestProject } from 'vitest/node';
import { buildPgliteTemplate, isCurrentTemplate, templateKey } from '../../service/db/pglite-template.js';
import { packagePath } from '../../service/kernel/package-root.js';

/**
 * One migrated PGlite data dir, as a tarball every test file loads (~1 s instead of ~4 s for a fresh
 * instance plus migrations). Kept in node_modules/.cache, named after a hash of the migrations and the
 * PGlite version, so a changed migration or upgrade makes a new one: from the build's template
 * (dist/pglite-template.tar.gz, which `npm install` builds) when that was built for the same key,
 * unzipped in ~0.1 s; otherwise built here (~5 s).
 */
export default async function setup(project: TestProject): Promise<void> {
  project.provide('pgliteTemplate', await migratedTemplate());
}

async function migratedTemplate(): Promise<string> {
  const dir = packagePath('node_modules/.cache/svc-tests');
  const file = path.join(dir, `pglite-template-${templateKey().slice(0, 16)}.tar`);
  if (fs.existsSync(file)) return file;
  const tar = builtTemplate() ?? Buffer.from(await (await buildPgliteTemplate('none')).arrayBuffer());
  fs.mkdirSync(dir, { recursive: true });
  // Written aside and renamed: two runs starting together never read half a file.
  const partial = `${file}.${process.pid}`;
  fs.writeFileSync(partial, tar);
  fs.renameSync(partial, file);
  return file;
}

/** The build's template, unzipped, when it was built for these migrations and this PGlite. */
function builtTemplate(): Buffer | undefined {
  const file = packagePath('dist/pglite-template.tar.gz');
  return isCurrentTemplate(file) ? zlib.gunzipSync(fs.readFileSync(file)) : undefined;
}

declare module 'vitest' {
  export interface ProvidedContext {
    pgliteTemplate: string;
  }
}
