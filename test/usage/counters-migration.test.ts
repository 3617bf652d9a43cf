import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS_DIR, rowsOf } from '../../service/db/client.js';
import { accountOwner, walletOwner } from '../../service/db/owner.js';
import { checkCounters, ownerSubject, readCounters, siteSubject, tableSubject } from '../../service/db/counters.js';
import { dbKinds } from '../helpers/db.js';
import { migratableDatabase, migrationsBefore } from '../helpers/migrations.js';

describe.each(dbKinds())('migration 0011: usage counts of existing data (%s)', (kind) => {
  it('counts what a database already holds, and keeps counting after', async () => {
    const { db, migrateWith } = await migratableDatabase(kind);
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
    // Migration 0012: each site row's own file count, for the fullest site.
    expect(rowsOf(await db.execute(sql`select id, file_count from sites order by id`))).toEqual([
      { id: 'site_a', file_count: 1 },
      { id: 'site_b', file_count: 2 },
      { id: 'site_w', file_count: 0 },
    ]);
    await db.execute(sql`delete from site_files where site_id = 'site_b' and path = 'a.css'`);
    await db.execute(sql`delete from table_records where table_id = 'tbl_a' and id <= 50`);
    expect((await readCounters(db, [tableSubject('tbl_a')])).get('table:tbl_a')).toEqual({ records: 200 });
    expect(await checkCounters(db)).toEqual([]);
  });
});
