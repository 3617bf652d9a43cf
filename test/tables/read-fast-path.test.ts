import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTableReadFastPath } from '../../service/tables/read-fast-path.js';
import { dbKinds } from '../helpers/db.js';
import { fastPathServer, type FastPathServer } from '../helpers/fast-path.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { makeTable, type TableFixture } from './helpers.js';

const SCHEMA = {
  fields: [
    { name: 'name', label: 'Name', type: 'string' },
    { name: 'price', label: 'Price', type: 'number' },
  ],
};

// A GET of a table's records, or of one record, on a table this node has read before, is answered before the app
// (service/tables/read-fast-path.ts). Each request goes twice: the first through the app (it reads
// the table row), the second through the fast path when it can be. Both answers must be the same,
// header for header and byte for byte.
describe.each(dbKinds())('the Table API read fast path (%s)', (kind) => {
  let h: Harness;
  let t: TableFixture;
  let server: FastPathServer;
  let otherKey: string;
  const send = async (path: string, init?: Parameters<FastPathServer['send']>[1]) => {
    const answer = await server.send(path, init);
    return { ...answer, body: answer.body.toString() };
  };

  beforeAll(async () => {
    h = await startHarness(kind);
    server = await fastPathServer(h, (app) => withTableReadFastPath(h.deps, app));
    t = await makeTable(h, { name: 'Items', schema: SCHEMA });
    otherKey = (await h.account()).key;
    const records = [
      { name: 'pen', price: 2 },
      { name: 'book', price: 12.5 },
      { name: 'lamp', price: 30 },
    ];
    const res = await h.fetch(t.path, { method: 'POST', json: { records }, headers: { 'x-svc-write-key': t.table.writeKey } });
    expect(res.status).toBe(201);
  });
  afterAll(async () => {
    await server?.close();
    await h?.close();
  });

  /** The app's answer (its table row dropped from the cache first), then the same request again. */
  async function appThenAgain(path: string, init: { method?: string; headers?: Record<string, string> } = {}) {
    h.deps.tableLists.rows.delete(`${t.siteSlug}/${t.table.slug}`);
    const first = await send(path, init);
    const second = await send(path, init);
    expect({ status: second.status, headers: second.headers, body: second.body }).toEqual({ status: first.status, headers: first.headers, body: first.body });
    return { first, second };
  }

  it.each([
    ['no query', '', {}],
    ['a filter, a sort and a limit', '?field=name&value=book&sortField=price&sortDir=desc&limit=2', {}],
    ['the compact shape with a total', '?compact=true&includeTotal=true', {}],
    ['a bare question mark', '?', {}],
    ['an Origin (CORS)', '', { origin: 'https://elsewhere.example' }],
    ["the table's write key", '', { 'x-svc-write-key': 'WRITE' }],
    ["the site owner's personal key (looked up here)", '?limit=2', { 'x-svc-api-key': 'KEY' }],
  ] as const)('%s: answered by the fast path once read, the same answer as the app', async (_, query, extra) => {
    const headers = Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, v === 'WRITE' ? t.table.writeKey : v === 'KEY' ? t.key : v]));
    const { first, second } = await appThenAgain(`${t.path}${query}`, { headers });
    expect([first.byApp, second.byApp, second.status]).toEqual([true, false, 200]);
    expect(second.headers['x-request-id']).toBe('same-id');
    expect(second.headers['access-control-allow-origin']).toBe('*');
    expect(JSON.parse(second.body).ok).toBe(true);
  });

  it.each([
    ['a wrong write key (401)', '', { 'x-svc-write-key': 'nope' }, 401],
    ['a personal key that is not one (401)', '', { 'x-svc-api-key': 'svc_pat_not-a-key' }, 401],
    ["another account's personal key (403)", '', { 'x-svc-api-key': 'OTHER' }, 403],
    ['an OAuth token, which only the MCP gateway sends (401)', '', { 'x-svc-api-key': 'svc_oat_x' }, 401],
    ['an unknown field (400)', '?field=colour&value=red', {}, 400],
    ['a limit over the maximum (400)', '?limit=100000', {}, 400],
    ['HEAD', '', { method: 'HEAD' }, 200],
    ['the schema', '/schema', {}, 200],
    ['a trailing slash', '/', {}, 404],
  ] as const)('%s: always the app', async (_, suffix, extra, status) => {
    const { method, ...rest } = extra as { method?: string } & Record<string, string>;
    const headers = Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, v === 'OTHER' ? otherKey : v]));
    const { first, second } = await appThenAgain(`${t.path}${suffix}`, { method, headers });
    expect([first.byApp, second.byApp, second.status]).toEqual([true, true, status]);
  });

  it.each([
    ['a record', '/1', {}, 200],
    ['a record with the write key', '/2', { 'x-svc-write-key': 'WRITE' }, 200],
    ['a record with a query string (ignored, as by the app)', '/3?limit=5', {}, 200],
    ['a record that does not exist (404)', '/999', {}, 404],
    ['a record id that is not a number (404)', '/abc', {}, 404],
    ["a record with the site owner's personal key", '/1', { 'x-svc-api-key': 'KEY' }, 200],
  ] as const)('%s: answered by the fast path once read, the same answer as the app', async (_, suffix, extra, status) => {
    const headers = Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, v === 'WRITE' ? t.table.writeKey : v === 'KEY' ? t.key : v]));
    const { first, second } = await appThenAgain(`${t.path}${suffix}`, { headers });
    expect([first.byApp, second.byApp, second.status]).toEqual([true, false, status]);
    expect(second.headers['x-request-id']).toBe('same-id');
    expect(second.headers['access-control-allow-origin']).toBe('*');
    expect(JSON.parse(second.body).ok).toBe(status === 200);
  });

  it('a record read on a stale cached row: refused in its statement, and the app answers from a fresh row', async () => {
    await send(`${t.path}/1`); // the row is cached
    await h.deps.db.execute(sql`update tables set require_read_key = true where id = ${t.table.id}`);
    try {
      const refused = await send(`${t.path}/1`);
      expect([refused.byApp, refused.status]).toEqual([true, 401]);
      const withKey = await send(`${t.path}/1`, { headers: { 'x-svc-write-key': t.table.writeKey } });
      expect([withKey.byApp, withKey.status, JSON.parse(withKey.body).record.fields.name]).toEqual([false, 200, 'pen']);
    } finally {
      await h.deps.db.execute(sql`update tables set require_read_key = false where id = ${t.table.id}`);
    }
  });

  it('a percent-encoded slug and a site host: the app, and the fast path with the slugs in another case', async () => {
    const encoded = await appThenAgain(`/api/data/${t.siteSlug}/%69tems`);
    expect([encoded.second.byApp, encoded.second.status]).toEqual([true, 200]);
    const onSiteHost = await appThenAgain(t.path, { headers: { host: `${t.siteSlug}.localhost` } });
    expect([onSiteHost.second.byApp, onSiteHost.second.status]).toEqual([false, 200]);
    const upper = await send(`/api/data/${t.siteSlug.toUpperCase()}/ITEMS`);
    expect([upper.byApp, upper.status]).toEqual([false, 200]);
  });

  it('sees every write acknowledged before it, and a change of the table row at once', async () => {
    await send(t.path); // the row is cached
    const res = await h.fetch(t.path, { method: 'POST', json: { record: { name: 'desk', price: 99 } }, headers: { 'x-svc-write-key': t.table.writeKey } });
    expect(res.status).toBe(201);
    const after = await send(`${t.path}?field=name&value=desk`);
    expect([after.byApp, JSON.parse(after.body).records.map((r: { fields: { name: string } }) => r.fields.name)]).toEqual([false, ['desk']]);
    // The cached row still says public reads; the table now requires a key (changed the way another
    // node changes it). The fast path's read is
    // refused inside its statement (stale row), and the app answers from a fresh row: 401.
    await h.deps.db.execute(sql`update tables set require_read_key = true where id = ${t.table.id}`);
    const refused = await send(t.path);
    expect([refused.byApp, refused.status]).toEqual([true, 401]);
    const withKey = await send(t.path, { headers: { 'x-svc-write-key': t.table.writeKey } });
    expect([withKey.byApp, withKey.status]).toEqual([false, 200]);
  });

  it('counts its answers in /metrics under the same route as the app', async () => {
    const metrics = await (await fetch(`${server.base}/metrics`)).text();
    expect(metrics).toMatch(/svc_http_requests_total\{method="GET",route="\/api\/data\/:siteSlug\/:tableSlug",status="200"\} \d+/);
    expect(metrics).toMatch(/svc_http_requests_total\{method="GET",route="\/api\/data\/:siteSlug\/:tableSlug\/:recordId",status="404"\} \d+/);
  });
});
