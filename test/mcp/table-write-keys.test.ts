import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TableWriteKeys } from '../../mcp/table-write-keys.js';

// The write keys a local MCP server learns from create_table_api outlive the process (a new session
// writes to the Tables its wallet made) and never make a tool call fail.
describe('table write keys kept by a local MCP server', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-table-keys-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const origin = 'http://localhost:8787';
  const quiet = () => {};

  it('a server started later with the same file knows the key, for the same service only; app and table in any case', async () => {
    const file = path.join(dir, 'a', 'keys.json');
    await new TableWriteKeys(file, origin, quiet).remember('Shop', 'products', 'svc_tk_1');
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    expect(new TableWriteKeys(file, origin, quiet).get('shop', 'PRODUCTS')).toBe('svc_tk_1');
    expect(new TableWriteKeys(file, 'https://svc.example.com', quiet).get('shop', 'products')).toBeUndefined();
    expect(new TableWriteKeys(null, origin, quiet).get('shop', 'products')).toBeUndefined();
  });

  it('a key forgotten is gone for a later server too; the others stay', async () => {
    const file = path.join(dir, 'f', 'keys.json');
    const keys = new TableWriteKeys(file, origin, quiet);
    await keys.remember('app', 'old', 'svc_tk_old');
    await keys.remember('app', 'kept', 'svc_tk_kept');
    await keys.forget('app', 'OLD');
    expect(keys.get('app', 'old')).toBeUndefined();
    const later = new TableWriteKeys(file, origin, quiet);
    expect([later.get('app', 'old'), later.get('app', 'kept')]).toEqual([undefined, 'svc_tk_kept']);
  });

  it('servers writing at once keep every key (the file is locked and replaced whole)', async () => {
    const file = path.join(dir, 'b', 'keys.json');
    const one = new TableWriteKeys(file, origin, quiet);
    const two = new TableWriteKeys(file, origin, quiet);
    await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? one : two).remember('app', `t${i}`, `svc_tk_${i}`)));
    const later = new TableWriteKeys(file, origin, quiet);
    expect(Array.from({ length: 20 }, (_, i) => later.get('app', `t${i}`))).toEqual(Array.from({ length: 20 }, (_, i) => `svc_tk_${i}`));
    expect(fs.readdirSync(path.dirname(file))).toEqual(['keys.json']); // no temp or lock file left
  });

  it('a file it cannot read is left as it is, said once, and the key is known in memory', async () => {
    const file = path.join(dir, 'c.json');
    fs.writeFileSync(file, 'not json');
    const said: string[] = [];
    const keys = new TableWriteKeys(file, origin, (m) => said.push(m));
    await keys.remember('app', 'notes', 'svc_tk_x');
    await keys.remember('app', 'todos', 'svc_tk_y');
    expect(keys.get('app', 'notes')).toBe('svc_tk_x');
    expect(fs.readFileSync(file, 'utf8')).toBe('not json');
    expect(said).toEqual([`${file} is not a table write key file; it is left as it is (move it aside to keep keys again)`]);
  });

  it('a place it cannot write to: the key is known in memory and nothing throws', async () => {
    const blocker = path.join(dir, 'plain-file');
    fs.writeFileSync(blocker, '');
    const said: string[] = [];
    const keys = new TableWriteKeys(path.join(blocker, 'keys.json'), origin, (m) => said.push(m));
    await keys.remember('app', 'notes', 'svc_tk_z');
    expect(keys.get('app', 'notes')).toBe('svc_tk_z');
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(/^could not keep the write key of app\/notes in .*this server knows it until it stops$/);
  });
});
