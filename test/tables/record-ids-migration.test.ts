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
import { MIGRATIONS_DIR, rowsOf, type Db } from '../../service/db/client.js';
import type { Deps } from '../../service/deps.js';
import { insertRecords } from '../../service/tables/tables.js';
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

/** A database of the given kind and a function that runs the migrations of a folder on it. */
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

describe.each(dbKinds())('migration 0006: record ids per Table (%s)', (kind) => {
  it('keeps the ids records had and numbers each Table on from its own largest', async () => {
    const { db, migrateWith } = await database(kind);
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
