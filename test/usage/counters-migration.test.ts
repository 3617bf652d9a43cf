import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { MIGRATIONS_DIR, type Db } from '../../service/db/client.js';
import { accountOwner, walletOwner } from '../../service/sites/owner.js';
import { checkCounters, ownerSubject, readCounters, siteSubject, tableSubject } from '../../service/db/counters.js';
import { createEmptyPostgresDatabase, dbKinds } from '../helpers/db.js';

/** The migrations folder as it was before `tag` (its journal cut there): what a database of an earlier release applied. */
function migrationsBefore(tag: string): string {
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

async function database(kind: 'pglite' | 'postgres'): Promise<{ db: Db; migrateWith(folder: string): Promise<void> }> {
  if (kind === 'pglite') {
    const client = await PGlite.create();
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

describe.each(dbKinds())('migration 0011: usage counts of existing data (%s)', (kind) => {
  it('counts what a database already holds, and keeps counting after', async () => {
    const { db, migrateWith } = await database(kind);
    await migrateWith(migrationsBefore('0011_usage_counters'));
    await db.execute(sql`insert into accounts (id, email) values ('acct_m', 'm@example.com')`);
    await db.execute(sql`insert into sites (id, slug, owner_account_id) values ('site_a', 'a', 'acct_m'), ('site_b', 'b', 'acct_m')`);
    await db.execute(sql`insert into sites (id, slug, owner_wallet) values ('site_w', 'w', '0xabc')`);
    await db.execute(
      sql`insert into tables (id, site_id, slug, name, schema, write_key_hash, methods) values
        ('tbl_a', 'site_a', 'a', 'a', '{"fields":[]}', 'x', '{GET}'), ('tbl_w', 'site_w', 'w', 'w', '{"fields":[]}', 'x', '{GET}')`,
    );
    await db.execute(sql`insert into table_records (table_id, id, fields) select 'tbl_a', g, '{}' from generate_series(1, 250) g`);
    await db.execute(sql`insert into table_records (table_id, id, fields) select 'tbl_w', g, '{}' from generate_series(1, 7) g`);
    await db.execute(
      sql`insert into site_files (site_id, path, blob_key, size, content_type, sha256) values
        ('site_a', 'index.html', 'k1', 100, 'text/html', 'h'), ('site_b', 'index.html', 'k2', 20, 'text/html', 'h'), ('site_b', 'a.css', 'k3', 3, 'text/css', 'h')`,
    );

    await migrateWith(MIGRATIONS_DIR);

    const subjects = [ownerSubject(accountOwner('acct_m')), ownerSubject(walletOwner('0xabc')), siteSubject('site_b'), tableSubject('tbl_a')] as const;
    const kept = await readCounters(db, subjects);
    expect(Object.fromEntries(kept)).toEqual({
      'acct:acct_m': { sites: 2, tables: 1, records: 250, files: 3, bytes: 123 },
      'wallet:0xabc': { sites: 1, tables: 1, records: 7 },
      'site:site_b': { files: 2, bytes: 23 },
      'table:tbl_a': { records: 250 },
    });
    await db.execute(sql`delete from table_records where table_id = 'tbl_a' and id <= 50`);
    expect((await readCounters(db, [tableSubject('tbl_a')])).get('table:tbl_a')).toEqual({ records: 200 });
    expect(await checkCounters(db)).toEqual([]);
  });
});
