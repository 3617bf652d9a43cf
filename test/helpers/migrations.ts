import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { afterAll, expect } from 'vitest';
import { MIGRATIONS_DIR, type Db } from '../../service/db/client.js';
import { pgliteVersion } from '../../service/db/pglite-template.js';
import { packagePath } from '../../service/kernel/package-root.js';
import { createEmptyPostgresDatabase } from './db.js';

// Tests of a migration on data an earlier release wrote: migrate to just before it, write the old
// shape, then run the rest.

/** The migrations folder as it was before `tag` (its journal cut there): what a database of an earlier release applied. */
export function migrationsBefore(tag: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-migrations-'));
  const journal = JSON.parse(fs.readFileSync(path.join(MIGRATIONS_DIR, 'meta', '_journal.json'), 'utf8')) as { entries: { tag: string }[] };
  const cut = journal.entries.findIndex((e) => e.tag === tag);
  expect(cut).toBeGreaterThan(0);
  journal.entries = journal.entries.slice(0, cut);
  fs.mkdirSync(path.join(dir, 'meta'));
  fs.writeFileSync(path.join(dir, 'meta', '_journal.json'), JSON.stringify(journal));
  for (const e of journal.entries) fs.copyFileSync(path.join(MIGRATIONS_DIR, `${e.tag}.sql`), path.join(dir, `${e.tag}.sql`));
  return dir;
}

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups) await c();
});

/** A database of the given kind and a function that runs the migrations of a folder on it. */
export async function migratableDatabase(kind: 'pglite' | 'postgres'): Promise<{ db: Db; migrateWith(folder: string): Promise<void> }> {
  if (kind === 'pglite') {
    const client = await PGlite.create({ loadDataDir: await emptyPglite() });
    cleanups.push(() => client.close());
    const db = drizzlePglite(client) as unknown as Db;
    return { db, migrateWith: (folder) => migratePglite(db as never, { migrationsFolder: folder }) };
  }
  const empty = await createEmptyPostgresDatabase();
  const client = postgres(empty.url, { max: 2, onnotice: () => {} });
  cleanups.push(async () => {
    await client.end();
    await empty.drop();
  });
  const db = drizzlePostgres(client) as unknown as Db;
  return { db, migrateWith: (folder) => migratePostgres(db as never, { migrationsFolder: folder }) };
}

/**
 * A fresh PGlite data dir (initdb, no migration) as a tarball, kept in node_modules/.cache/svc-tests
 * per PGlite version: initdb costs ~4 s of CPU, loading its dump ~0.6 s. The first run makes it.
 */
async function emptyPglite(): Promise<Blob> {
  const file = packagePath(`node_modules/.cache/svc-tests/pglite-empty-${pgliteVersion()}.tar`);
  if (fs.existsSync(file)) return new Blob([fs.readFileSync(file)]);
  const pg = await PGlite.create();
  const tar = await pg.dumpDataDir('none');
  await pg.close();
  fs.mkdirSync(path.dirname(file), { recursive: true });
  // Written aside and renamed: a worker starting beside this one never reads half a file.
  fs.writeFileSync(`${file}.${process.pid}`, Buffer.from(await tar.arrayBuffer()));
  fs.renameSync(`${file}.${process.pid}`, file);
  return tar;
}
