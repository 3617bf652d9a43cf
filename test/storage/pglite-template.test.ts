import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { openDb, rowsOf } from '../../service/db/client.js';
import { readPgliteTemplate, templateKey } from '../../service/db/pglite-template.js';

// A first start on an empty SVC_DATA_DIR loads the migrated template instead of running initdb.
describe('the PGlite first-start template', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-pglite-template-'));
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
  let offered = 0;
  const template = () => {
    offered++;
    return new Blob([fs.readFileSync(inject('pgliteTemplate'))]);
  };

  it('an empty data dir starts from the template, keeps what is written, and later starts ignore it', async () => {
    const dataDir = path.join(root, 'first');
    const first = await openDb({ dataDir, template });
    expect(offered).toBe(1);
    expect(fs.existsSync(path.join(dataDir, 'db', 'PG_VERSION'))).toBe(true);
    await first.db.execute(sql`insert into settings (key, value) values ('probe', 'kept')`);
    await first.close();

    const again = await openDb({ dataDir, template });
    expect(offered).toBe(1); // the directory holds a database: the template is not even read
    const rows = rowsOf<{ value: string }>(await again.db.execute(sql`select value from settings where key = 'probe'`));
    expect(rows).toEqual([{ value: 'kept' }]);
    await again.close();
  });

  it('is used only by the migrations and PGlite version it was built for', () => {
    const file = path.join(root, 'pglite-template.tar.gz');
    fs.writeFileSync(file, 'not read unless the key matches');
    fs.writeFileSync(`${file}.json`, JSON.stringify({ key: 'built-for-other-migrations' }));
    expect(readPgliteTemplate(file)).toBeUndefined();
    fs.writeFileSync(`${file}.json`, JSON.stringify({ key: templateKey() }));
    expect(readPgliteTemplate(file)?.size).toBe('not read unless the key matches'.length);
    fs.rmSync(`${file}.json`);
    expect(readPgliteTemplate(file)).toBeUndefined();
  });
});
