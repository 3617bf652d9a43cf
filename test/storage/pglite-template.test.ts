import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { openDb, PGLITE_SHARED_BUFFERS, rowsOf } from '../../service/db/client.js';
import { loadConfig } from '../../service/config.js';
import { extractDataDir, unpackPgliteTemplate, templateKey } from '../../service/db/pglite-template.js';

// A first start on an empty SVC_DATA_DIR unpacks the migrated template instead of running initdb.
describe('the PGlite first-start template', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-pglite-template-'));
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
  let offered = 0;
  const template = (dir: string) => {
    offered++;
    extractDataDir(fs.readFileSync(inject('pgliteTemplate')), dir);
    return true;
  };

  it('an empty data dir starts from the template, keeps what is written, and later starts ignore it', async () => {
    const dataDir = path.join(root, 'first');
    const first = await openDb({ dataDir, template });
    expect(offered).toBe(1);
    expect(fs.existsSync(path.join(dataDir, 'db', 'PG_VERSION'))).toBe(true);
    await first.db.execute(sql`insert into settings (key, value) values ('probe', 'kept')`);
    await first.close();

    const again = await openDb({ dataDir, template, sharedBuffers: '16MB' });
    expect(offered).toBe(1); // the directory holds a database: the template is not even read
    const rows = rowsOf<{ value: string }>(await again.db.execute(sql`select value from settings where key = 'probe'`));
    expect(rows).toEqual([{ value: 'kept' }]);
    expect(rowsOf(await again.db.execute(sql`show shared_buffers`))).toEqual([{ shared_buffers: '16MB' }]);
    await again.close();
  });

  it('starts PGlite with a 32MB buffer pool unless SVC_PGLITE_SHARED_BUFFERS says otherwise', async () => {
    expect(PGLITE_SHARED_BUFFERS).toBe('32MB');
    const db = await openDb({ dataDir: path.join(root, 'pool'), template });
    expect(rowsOf(await db.db.execute(sql`show shared_buffers`))).toEqual([{ shared_buffers: '32MB' }]);
    await db.close();
    expect(loadConfig({}).pgliteSharedBuffers).toBeUndefined();
    expect(loadConfig({ SVC_PGLITE_SHARED_BUFFERS: '256MB' }).pgliteSharedBuffers).toBe('256MB');
    expect(() => loadConfig({ SVC_PGLITE_SHARED_BUFFERS: 'lots' })).toThrow(/SVC_PGLITE_SHARED_BUFFERS: a size such as 32MB/);
  });

  it('a start killed while unpacking leaves no half-written database: the next start unpacks again', async () => {
    const dataDir = path.join(root, 'killed');
    const dir = path.join(dataDir, 'db');
    fs.mkdirSync(`${dir}.unpacking/base`, { recursive: true }); // what a kill halfway leaves
    fs.writeFileSync(`${dir}.unpacking/base/half`, 'x');
    const db = await openDb({ dataDir, template });
    expect(fs.existsSync(`${dir}.unpacking`)).toBe(false);
    expect(rowsOf(await db.db.execute(sql`select key from settings`))).toEqual([]);
    await db.close();
  });

  it('is used only by the migrations and PGlite version it was built for', () => {
    const file = path.join(root, 'pglite-template.tar');
    fs.copyFileSync(inject('pgliteTemplate'), file);
    const dir = path.join(root, 'keyed', 'db');
    fs.writeFileSync(`${file}.json`, JSON.stringify({ key: 'built-for-other-migrations' }));
    expect(unpackPgliteTemplate(file, dir)).toBe(false);
    fs.rmSync(`${file}.json`);
    expect(unpackPgliteTemplate(file, dir)).toBe(false);
    expect(fs.existsSync(dir)).toBe(false);
    fs.writeFileSync(`${file}.json`, JSON.stringify({ key: templateKey() }));
    expect(unpackPgliteTemplate(file, dir)).toBe(true);
    expect(fs.readFileSync(path.join(dir, 'PG_VERSION'), 'utf8').trim()).toMatch(/^\d+$/);
  });

  it('a gzipped template (as the build ships it) unpacks too', () => {
    const gz = path.join(root, 'template.tar.gz');
    fs.writeFileSync(gz, zlib.gzipSync(fs.readFileSync(inject('pgliteTemplate')), { level: 1 }));
    const dir = path.join(root, 'gz', 'db');
    extractDataDir(fs.readFileSync(gz), dir);
    expect(fs.readdirSync(dir)).toEqual(expect.arrayContaining(['PG_VERSION', 'base', 'global', 'pg_wal']));
  });
});
