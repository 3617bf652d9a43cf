import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { inject } from 'vitest';
import { openDb, type Database } from '../../service/db/client.js';

export type DbKind = 'pglite' | 'postgres';

/** PGlite always; a real PostgreSQL server too when TEST_DATABASE_URL is set (CI sets it). */
export function dbKinds(): DbKind[] {
  return process.env.TEST_DATABASE_URL ? ['pglite', 'postgres'] : ['pglite'];
}

/**
 * A fresh, migrated, empty database of the given kind: PGlite cloned from the migrated template, or
 * a new database on the TEST_DATABASE_URL server (dropped again by `close`).
 */
export async function openTestDatabase(kind: DbKind): Promise<Database> {
  if (kind === 'pglite') {
    const tar = fs.readFileSync(inject('pgliteTemplate'));
    return openDb({ loadDataDir: new Blob([tar]), migrate: false });
  }
  const empty = await createEmptyPostgresDatabase();
  const database = await openDb({ databaseUrl: empty.url });
  return {
    ...database,
    async close() {
      await database.close();
      await empty.drop();
    },
  };
}

/** A new, empty database on the TEST_DATABASE_URL server: its URL, and `drop` (forcing connections off). */
export async function createEmptyPostgresDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const serverUrl = process.env.TEST_DATABASE_URL;
  if (!serverUrl) throw new Error('TEST_DATABASE_URL is not set');
  const name = `svc_test_${randomBytes(6).toString('hex')}`;
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const again = postgres(serverUrl, { max: 1, onnotice: () => {} });
      await again.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await again.end();
    },
  };
}
