import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountOwner } from '../../service/db/owner.js';
import { getOwnedSite } from '../../service/sites/sites.js';
import { createTable, getTableBySlugs, insertRecords } from '../../service/tables/tables.js';
import { sql } from 'drizzle-orm';
import { createPersonalKey } from '../../service/accounts/personal-keys.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { makeTable, type TableFixture } from './helpers.js';

const SCHEMA = {
  fields: [
    { name: 'title', label: 'Title', type: 'string' },
    { name: 'n', label: 'N', type: 'integer' },
  ],
};

type Cred =
  | 'none'
  | 'wrong write key'
  | 'write key'
  | 'api key (svc.data.write)'
  | 'api key (svc.data.read)'
  | 'api key of another account'
  | 'garbage api key';
type Op = 'GET list' | 'GET schema' | 'GET record' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
const CREDS: Cred[] = [
  'none',
  'wrong write key',
  'write key',
  'api key (svc.data.write)',
  'api key (svc.data.read)',
  'api key of another account',
  'garbage api key',
];
const OPS: Op[] = ['GET list', 'GET schema', 'GET record', 'POST', 'PATCH', 'PUT', 'DELETE'];

describe.each(dbKinds())('Table API key matrix (%s)', (kind) => {
  let h: Harness;
  let otherKey: string;
  beforeAll(async () => {
    h = await startHarness(kind);
    otherKey = (await h.account()).key;
  });
  afterAll(async () => h?.close());

  type KeyedTable = TableFixture & { recordId: string; readKey: string };
  async function setup(body: Record<string, unknown>): Promise<KeyedTable> {
    const t = await makeTable(h, { name: 'T', schema: SCHEMA, ...body });
    // A second key of the same owner, read-only.
    const readKey = (await createPersonalKey(h.deps.db, { accountId: t.accountId, name: 'ro', scopes: ['svc.data.read'] })).secret;
    return { ...t, recordId: await seedRecord(t), readKey };
  }

  /** A record inserted through the domain (the table may not enable POST); its id. */
  async function seedRecord(t: TableFixture): Promise<string> {
    const { table } = await getTableBySlugs(h.deps, t.siteSlug, t.table.slug);
    const [seed] = await insertRecords(h.deps, table, [{ title: 'seed', n: 1 }]);
    return seed!.id;
  }

  /**
   * The matrix's cells share one table per kind of table (`setup` once); a cell that changes or
   * deletes a record gets a record of its own in it, so no cell sees another's write.
   */
  const tables = new Map<string, Promise<KeyedTable>>();
  async function tableFor(op: Op, body: Record<string, unknown>): Promise<KeyedTable> {
    const kind = JSON.stringify(body);
    if (!tables.has(kind)) tables.set(kind, setup(body));
    const t = await tables.get(kind)!;
    return op === 'PATCH' || op === 'PUT' || op === 'DELETE' ? { ...t, recordId: await seedRecord(t) } : t;
  }

  function headersFor(cred: Cred, t: KeyedTable): Record<string, string> {
    switch (cred) {
      case 'none':
        return {};
      case 'wrong write key':
        return { 'x-svc-write-key': `${t.table.writeKey.slice(0, -3)}xyz` };
      case 'write key':
        return { 'x-svc-write-key': t.table.writeKey };
      case 'api key (svc.data.write)':
        return { 'x-svc-api-key': t.key };
      case 'api key (svc.data.read)':
        return { 'x-svc-api-key': t.readKey };
      case 'api key of another account':
        return { 'x-svc-api-key': otherKey };
      case 'garbage api key':
        return { 'x-svc-api-key': 'svc_pat_not-a-key' };
    }
  }

  async function call(t: KeyedTable, op: Op, cred: Cred): Promise<{ status: number; body: any; allow: string | null }> {
    const headers = headersFor(cred, t);
    const rec = `${t.path}/${t.recordId}`;
    const req: Record<Op, [string, string, unknown?]> = {
      'GET list': ['GET', t.path],
      'GET schema': ['GET', `${t.path}/schema`],
      'GET record': ['GET', rec],
      POST: ['POST', t.path, { record: { title: 'x', n: 2 } }],
      PATCH: ['PATCH', rec, { fields: { n: 3 } }],
      PUT: ['PUT', rec, { record: { title: 'y', n: 4 } }],
      DELETE: ['DELETE', rec],
    };
    const [method, path, json] = req[op];
    const res = await h.fetch(path, { method, headers, json });
    return { status: res.status, body: await res.json(), allow: res.headers.get('allow') };
  }

  const ok = (op: Op) => (op === 'POST' ? 201 : 200);
  /** Expected status for the default table (requireReadKey false, publicInsert false, all methods). */
  function expectedDefault(op: Op, cred: Cred): number {
    const read = op.startsWith('GET');
    if (cred === 'wrong write key' || cred === 'garbage api key') return 401;
    if (cred === 'api key of another account') return 403;
    if (cred === 'none') return read ? 200 : 401;
    if (cred === 'api key (svc.data.read)') return read ? 200 : 403;
    return ok(op);
  }

  describe('default table: public reads, keyed writes', () => {
    for (const op of OPS) {
      it.each(CREDS)(`${op} with %s`, async (cred) => {
        const t = await tableFor(op, {});
        const r = await call(t, op, cred);
        expect(r.status, JSON.stringify(r.body)).toBe(expectedDefault(op, cred));
        if (r.status >= 400) expect(r.body.ok).toBe(false);
      });
    }
  });

  describe('requireReadKey: reads need a key too', () => {
    for (const op of OPS) {
      it.each(CREDS)(`${op} with %s`, async (cred) => {
        const t = await tableFor(op, { requireReadKey: true });
        const r = await call(t, op, cred);
        const expected = cred === 'none' ? 401 : expectedDefault(op, cred);
        expect(r.status, JSON.stringify(r.body)).toBe(expected);
      });
    }
  });

  describe('publicInsert: POST without a key, nothing else opened', () => {
    it.each(OPS)('%s without a key', async (op) => {
      const t = await tableFor(op, { publicInsert: true, requireReadKey: true });
      const r = await call(t, op, 'none');
      expect(r.status, JSON.stringify(r.body)).toBe(op === 'POST' ? 201 : 401);
    });
    it('a public insert is then visible to a keyed reader, and still validated', async () => {
      const t = await setup({ publicInsert: true, requireReadKey: true });
      const bad = await h.fetch(t.path, { method: 'POST', json: { record: { title: 'x', n: 'many' } } });
      expect(bad.status).toBe(400);
      const good = await h.fetch(t.path, { method: 'POST', json: { record: { title: 'from a form', n: '7' } } });
      expect(good.status).toBe(201);
      const list = await h.fetch(`${t.path}?field=title&value=from%20a%20form`, { headers: { 'x-svc-write-key': t.table.writeKey } });
      expect((await list.json()).records.map((r: { fields: unknown }) => r.fields)).toEqual([{ title: 'from a form', n: 7 }]);
    });
  });

  describe('disabled methods: 405 whatever the key', () => {
    for (const op of OPS) {
      it.each(['none', 'write key', 'api key (svc.data.write)'] as Cred[])(`${op} with %s on a GET-only table`, async (cred) => {
        const t = await tableFor(op, { methods: ['GET'] });
        const r = await call(t, op, cred);
        if (op.startsWith('GET')) expect(r.status).toBe(200);
        else {
          expect(r.status).toBe(405);
          expect(r.body.error.code).toBe('method_not_allowed');
          expect(r.allow).toBe('GET, OPTIONS');
        }
      });
    }
    it('a POST-only public-insert table (a form inbox) refuses GET with 405', async () => {
      const t = await makeTable(h, { name: 'Inbox', schema: SCHEMA, methods: ['POST'], publicInsert: true });
      expect((await h.fetch(t.path, { method: 'POST', json: { record: { title: 'hi' } } })).status).toBe(201);
      const r = await h.fetch(t.path, { headers: { 'x-svc-write-key': t.table.writeKey } });
      expect(r.status).toBe(405);
      expect(r.headers.get('allow')).toBe('POST, OPTIONS');
    });
    it('a dataset is read-only: writes are 405 even with its key', async () => {
      const t = await makeTable(h, { name: 'Plain', schema: SCHEMA });
      const site = await getOwnedSite(h.deps.db, accountOwner(t.accountId), t.siteId);
      const { table, writeKey } = await createTable(h.deps, site, { name: 'Data', schema: SCHEMA, kind: 'dataset' });
      const path = `/api/data/${site.slug}/${table.slug}`;
      expect((await h.fetch(path)).status).toBe(200);
      const r = await h.fetch(path, { method: 'POST', json: { record: { title: 'x' } }, headers: { 'x-svc-write-key': writeKey } });
      expect(r.status).toBe(405);
      expect((await r.json()).error.message).toContain('dataset');
    });
  });

  it('the write key of one table does not open another', async () => {
    const a = await setup({});
    const b = await setup({});
    const r = await h.fetch(b.path, { method: 'POST', json: { record: { title: 'x' } }, headers: { 'x-svc-write-key': a.table.writeKey } });
    expect(r.status).toBe(401);
    const list = await (await h.fetch(b.path)).json();
    expect(list.records).toHaveLength(1);
  });

  it('a revoked api key is refused', async () => {
    const t = await setup({});
    await h.deps.db.execute(sql`update personal_keys set revoked_at = now() where account_id = ${t.accountId}`);
    const r = await h.fetch(t.path, { method: 'POST', json: { record: { title: 'x' } }, headers: { 'x-svc-api-key': t.key } });
    expect(r.status).toBe(401);
  });
});
