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
  if (kind === 'pglite') return reusedPglite();
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

/**
 * PGlite databases this worker opened and a test closed since. Starting a PGlite from the template
 * costs ~1.4 s of CPU (most of the fast tier's time went there); emptying one costs a few ms. A
 * closed one is kept open and emptied when the next test asks for a database, not at close: a
 * write that was still under way when its service stopped is wiped too.
 */
const idlePglite: Database[] = [];

async function reusedPglite(): Promise<Database> {
  let database: Database | undefined;
  while (!database && idlePglite.length > 0) {
    const candidate = idlePglite.pop()!;
    if (await emptied(candidate)) database = candidate;
    else await candidate.close().catch(() => {});
  }
  database ??= await openDb({ loadDataDir: new Blob([fs.readFileSync(inject('pgliteTemplate'))]), migrate: false });
  const open = database;
  let closed = false;
  return {
    ...open,
    async close() {
      if (closed) return;
      closed = true;
      idlePglite.push(open);
    },
  };
}

type PgliteClient = { closed: boolean; exec(sql: string): Promise<unknown>; query<T>(sql: string): Promise<{ rows: T[] }> };

/** Back to the migrated, empty template: every row gone, identities restarted, dataset tables and record id sequences dropped, no listener, settings reset. */
async function emptied(database: Database): Promise<boolean> {
  const client = (database.db as unknown as { $client: PgliteClient }).$client;
  if (client.closed) return false;
  try {
    const { rows } = await client.query<{ schemaname: string; tablename: string }>(
      "select schemaname, tablename from pg_tables where schemaname in ('public', 'svc_datasets')",
    );
    const sequences = await client.query<{ name: string }>(
      "select sequence_name as name from information_schema.sequences where sequence_schema = 'svc_record_ids'",
    );
    const quoted = (r: { schemaname: string; tablename: string }) => `"${r.schemaname}"."${r.tablename}"`;
    const datasets = rows.filter((r) => r.schemaname === 'svc_datasets').map(quoted);
    const kept = rows.filter((r) => r.schemaname === 'public').map(quoted);
    await client.exec(
      [
        'ROLLBACK',
        'UNLISTEN *',
        'RESET ALL',
        ...(datasets.length ? [`DROP TABLE ${datasets.join(', ')} CASCADE`] : []),
        ...(sequences.rows.length ? [`DROP SEQUENCE ${sequences.rows.map((r) => `"svc_record_ids"."${r.name}"`).join(', ')}`] : []),
        `TRUNCATE ${kept.join(', ')} RESTART IDENTITY CASCADE`,
      ].join(';\n'),
    );
    return true;
  } catch {
    return false;
  }
}
