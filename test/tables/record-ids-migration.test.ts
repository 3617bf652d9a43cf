import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS_DIR, rowsOf } from '../../service/db/client.js';
import type { Deps } from '../../service/deps.js';
import { insertRecords } from '../../service/tables/tables.js';
import { dbKinds } from '../helpers/db.js';
import { migratableDatabase, migrationsBefore } from '../helpers/migrations.js';

describe.each(dbKinds())('migration 0006: record ids per Table (%s)', (kind) => {
  it('keeps the ids records had and numbers each Table on from its own largest', async () => {
    const { db, migrateWith } = await migratableDatabase(kind);
    await migrateWith(migrationsBefore('0006_table_record_ids'));
    // Before 0006: one identity for every Table's records, so the two Tables' ids interleave.
    await db.execute(sql`insert into sites (id, slug) values ('site_m', 'm')`);
    for (const t of ['tbl_aaaaaaaa', 'tbl_bbbbbbbb', 'tbl_cccccccc']) {
      await db.execute(
        sql`insert into tables (id, site_id, slug, name, schema, write_key_hash, methods) values (${t}, 'site_m', ${t}, ${t}, '{"fields":[{"name":"title","type":"string"}]}'::jsonb, 'x', '{GET,POST}')`,
      );
    }
    for (const [table, title] of [
      ['tbl_aaaaaaaa', 'a1'],
      ['tbl_bbbbbbbb', 'b1'],
      ['tbl_aaaaaaaa', 'a2'],
      ['tbl_bbbbbbbb', 'b2'],
      ['tbl_bbbbbbbb', 'b3'],
    ]) {
      await db.execute(sql`insert into table_records (table_id, fields) values (${table}, ${JSON.stringify({ title })}::jsonb)`);
    }

    await migrateWith(MIGRATIONS_DIR);

    const kept = rowsOf<{ table_id: string; id: string | number; title: string }>(
      await db.execute(sql`select table_id, id, fields->>'title' as title from table_records order by table_id, id`),
    ).map((r) => `${r.table_id}:${Number(r.id)}:${r.title}`);
    expect(kept).toEqual(['tbl_aaaaaaaa:1:a1', 'tbl_aaaaaaaa:3:a2', 'tbl_bbbbbbbb:2:b1', 'tbl_bbbbbbbb:4:b2', 'tbl_bbbbbbbb:5:b3']);
    const deps = { clock: { now: () => new Date() } } as unknown as Deps;
    const schema = { fields: [{ name: 'title', label: 'Title', type: 'string' as const }] };
    const next = async (id: string, title: string) => (await insertRecords(deps, { id, schema }, [{ title }], db))[0]!.id;
    expect(await next('tbl_aaaaaaaa', 'a3')).toBe('4');
    expect(await next('tbl_bbbbbbbb', 'b4')).toBe('6');
    expect(await next('tbl_cccccccc', 'e1')).toBe('1');
    // tbl_aaaaaaaa's 5 beside tbl_bbbbbbbb's 5: a record is its Table and its id.
    expect(await next('tbl_aaaaaaaa', 'a4')).toBe('5');
  });
});
