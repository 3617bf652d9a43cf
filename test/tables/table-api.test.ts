import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { getWithHost } from '../helpers/host-request.js';
import { PLACES, PLACES_SCHEMA } from './fixtures.js';
import { TableAggregateResponseSchema, TableCompactResponseSchema, TableRecordsResponseSchema } from '../../shared/tables/query.js';
import { getJson, makeTable, type TableFixture } from './helpers.js';

const names = (body: { records: { fields: { name?: string } }[] }) => body.records.map((r) => r.fields.name);

describe.each(dbKinds())('Table API GET parameters (%s)', (kind) => {
  let h: Harness;
  let t: TableFixture;
  const get = (query: string) => getJson(h, `${t.path}${query}`);

  beforeAll(async () => {
    h = await startHarness(kind);
    t = await makeTable(h, { name: 'Places', schema: PLACES_SCHEMA });
    const res = await h.fetch(t.path, { method: 'POST', json: { records: PLACES }, headers: { 'x-svc-write-key': t.table.writeKey } });
    expect(res.status).toBe(201);
  });
  afterAll(async () => h?.close());

  const cases: [string, string, (string | undefined)[]][] = [
    ['no parameters: insertion order', '', ['Alpha Cafe', 'Beta Books', 'Gamma Grill', 'delta deli', 'Epsilon Eats', 'Zeta Zoo', 'Eta Arena', 'Theta Cafe']],
    ['limit', '?limit=3', ['Alpha Cafe', 'Beta Books', 'Gamma Grill']],
    ['offset', '?offset=6', ['Eta Arena', 'Theta Cafe']],
    ['limit + offset', '?limit=2&offset=3', ['delta deli', 'Epsilon Eats']],
    ['offset past the end: empty', '?offset=100', []],
    ['field + value (string)', '?field=category&value=food', ['Alpha Cafe', 'Gamma Grill', 'delta deli', 'Theta Cafe']],
    ['filter + filterValue', '?filter=category&filterValue=fun', ['Zeta Zoo', 'Eta Arena']],
    ['field + value (number)', '?field=price&value=12.5', ['Alpha Cafe', 'Theta Cafe']],
    ['field + value (integer given as 10.0)', '?field=qty&value=10.0', ['Gamma Grill']],
    ['field + value (boolean)', '?field=active&value=false', ['Beta Books', 'Epsilon Eats', 'Eta Arena']],
    ['field + value (date)', '?field=day&value=2024-01-05', ['Alpha Cafe', 'Theta Cafe']],
    ['field + value (datetime in another zone)', '?field=at&value=2024-04-01T04:00:00Z', ['Eta Arena']],
    ['field + value: no match', '?field=category&value=Food', []],
    [
      'sortField asc: nulls last, ties by id',
      '?sortField=price&sortDir=asc',
      ['Gamma Grill', 'Alpha Cafe', 'Theta Cafe', 'Zeta Zoo', 'Beta Books', 'Epsilon Eats', 'delta deli', 'Eta Arena'],
    ],
    [
      'sortField without sortDir = asc',
      '?sortField=qty',
      ['Epsilon Eats', 'Beta Books', 'Zeta Zoo', 'Alpha Cafe', 'Theta Cafe', 'delta deli', 'Eta Arena', 'Gamma Grill'],
    ],
    [
      'sortField desc: nulls first',
      '?sortField=price&sortDir=desc',
      ['delta deli', 'Eta Arena', 'Epsilon Eats', 'Beta Books', 'Zeta Zoo', 'Alpha Cafe', 'Theta Cafe', 'Gamma Grill'],
    ],
    [
      'sort on text is byte order (same on every server)',
      '?sortField=name',
      ['Alpha Cafe', 'Beta Books', 'Epsilon Eats', 'Eta Arena', 'Gamma Grill', 'Theta Cafe', 'Zeta Zoo', 'delta deli'],
    ],
    ['sort on datetime', '?sortField=at&sortDir=desc&limit=3', ['Theta Cafe', 'Eta Arena', 'delta deli']],
    ['sort by id desc', '?sortField=id&sortDir=desc&limit=2', ['Theta Cafe', 'Eta Arena']],
    ['q: case-insensitive substring over string fields', '?q=CAFE', ['Alpha Cafe', 'Theta Cafe']],
    ['q + searchFields', '?q=sho&searchFields=category,name', ['Beta Books', 'Epsilon Eats']],
    ['q limited to one field', '?q=cafe&searchFields=category', []],
    ['q: % and _ are literal', '?q=%25', []],
    [
      'dateField + dateFrom + dateTo (date)',
      '?dateField=day&dateFrom=2024-01-01&dateTo=2024-02-29',
      ['Alpha Cafe', 'Beta Books', 'Gamma Grill', 'Zeta Zoo', 'Theta Cafe'],
    ],
    [
      'dateTo as a day includes that whole day (datetime)',
      '?dateField=at&dateFrom=2024-02-10T23:30:00Z&dateTo=2024-03-15',
      ['Beta Books', 'Gamma Grill', 'delta deli'],
    ],
    ['dateTo alone', '?dateField=at&dateTo=2023-12-31', ['Epsilon Eats']],
    ['dateFrom alone', '?dateField=day&dateFrom=2024-03-15', ['delta deli', 'Eta Arena']],
    ['bbox with default lat/lon field names', '?bbox=-10,35,20,60', ['Alpha Cafe', 'Beta Books', 'Theta Cafe']],
    ['bbox + longitudeField + latitudeField', '?bbox=-10,35,20,60&longitudeField=lon&latitudeField=lat', ['Alpha Cafe', 'Beta Books', 'Theta Cafe']],
    ['bbox across the antimeridian', '?bbox=170,-30,-170,0', ['Zeta Zoo']],
    ['ext: filter[x][gte] + filter[x][lt]', '?filter[price][gte]=12.5&filter[price][lt]=30', ['Alpha Cafe', 'Zeta Zoo', 'Theta Cafe']],
    ['ext: in', '?filter[category][in]=fun,shop', ['Beta Books', 'Epsilon Eats', 'Zeta Zoo', 'Eta Arena']],
    ['ext: isnull (null and missing alike)', '?filter[price][isnull]=true', ['delta deli', 'Eta Arena']],
    ['ext: isnull=false', '?filter[at][isnull]=false&limit=1&offset=6', ['Eta Arena']],
    ['ext: ilike with *', '?filter[name][ilike]=*cafe', ['Alpha Cafe', 'Theta Cafe']],
    ['ext: neq excludes nulls', '?filter[category][neq]=food', ['Beta Books', 'Epsilon Eats', 'Zeta Zoo', 'Eta Arena']],
    ['ext: filter[x]=v is eq', '?filter[active]=true&filter[qty][gt]=3', ['Gamma Grill', 'delta deli', 'Theta Cafe']],
    ['ext: gt on dates', '?filter[day][gt]=2024-02-29', ['delta deli', 'Eta Arena']],
    [
      'ext: multi-key sort',
      '?sort=category,-price',
      ['delta deli', 'Alpha Cafe', 'Theta Cafe', 'Gamma Grill', 'Eta Arena', 'Zeta Zoo', 'Epsilon Eats', 'Beta Books'],
    ],
    ['combined: equality + sort + limit', '?field=category&value=food&sortField=price&sortDir=desc&limit=2', ['delta deli', 'Alpha Cafe']],
    [
      'combined: q + date range + sort',
      '?q=e&dateField=day&dateFrom=2024-01-01&sortField=qty&sortDir=desc',
      ['Eta Arena', 'delta deli', 'Theta Cafe', 'Alpha Cafe', 'Zeta Zoo', 'Beta Books'],
    ],
    [
      'combined: bbox + filter + sort',
      '?bbox=-180,-90,180,90&filter=active&filterValue=true&sortField=lat',
      ['delta deli', 'Zeta Zoo', 'Gamma Grill', 'Theta Cafe', 'Alpha Cafe'],
    ],
    [
      'combined: everything',
      '?field=active&value=true&q=a&searchFields=name&dateField=day&dateFrom=2024-01-01&dateTo=2024-12-31&bbox=-180,-60,180,60&filter[qty][lte]=5&sort=-qty&limit=2&offset=1',
      ['Theta Cafe', 'Alpha Cafe'],
    ],
  ];

  it.each(cases)('%s', async (_label, query, expected) => {
    const { status, body } = await get(query);
    expect(status, JSON.stringify(body)).toBe(200);
    expect(names(body)).toEqual(expected);
  });

  it('includeTotal counts every match, not the page', async () => {
    const { body } = await get('?field=category&value=food&limit=1&includeTotal=true');
    expect(body).toMatchObject({ total: 4, limit: 1, offset: 0 });
    expect(body.records).toHaveLength(1);
    const none = await get('?limit=2');
    expect(none.body.total).toBeUndefined();
  });

  it('records are {id, fields}; values come back in their stored types', async () => {
    const { body } = await get('?limit=1');
    expect(body.records[0]).toEqual({
      id: expect.stringMatching(/^\d+$/),
      fields: {
        name: 'Alpha Cafe',
        category: 'food',
        price: 12.5,
        qty: 3,
        active: true,
        day: '2024-01-05',
        at: '2024-01-05T10:00:00.000Z',
        lat: 52.52,
        lon: 13.4,
        meta: { a: 1 },
      },
    });
    const eta = await get('?field=name&value=Eta%20Arena');
    expect(eta.body.records[0].fields.at).toBe('2024-04-01T04:00:00.000Z');
  });

  it('fields and columns pick fields; compact returns columns + rows', async () => {
    const a = await get('?fields=name,price&limit=4');
    expect(a.body.records.map((r: { fields: unknown }) => r.fields)).toEqual([
      { name: 'Alpha Cafe', price: 12.5 },
      { name: 'Beta Books', price: 30 },
      { name: 'Gamma Grill', price: 8 },
      { name: 'delta deli', price: null },
    ]);
    const b = await get('?columns=name&limit=1');
    expect(b.body.records[0].fields).toEqual({ name: 'Alpha Cafe' });
    const c = await get('?compact=true&fields=name,price&limit=2&offset=6');
    expect(c.status).toBe(200);
    expect(c.body.columns).toEqual(['id', 'name', 'price']);
    expect(c.body.rows.map((r: unknown[]) => r.slice(1))).toEqual([
      ['Eta Arena', null],
      ['Theta Cafe', 12.5],
    ]);
    expect(c.body.records).toBeUndefined();
    const all = await get('?compact=1&limit=1');
    expect(all.body.columns).toEqual(['id', ...PLACES_SCHEMA.fields.map((f) => f.name)]);
  });

  it('aggregate without groupBy: count, sum, avg, min, max', async () => {
    expect((await get('?aggregate=count')).body).toMatchObject({ aggregate: 'count', field: null, value: 8, count: 8 });
    expect((await get('?aggregate=count&aggregateField=price')).body.value).toBe(6);
    expect((await get('?aggregate=sum&aggregateField=qty')).body.value).toBe(32);
    expect((await get('?aggregate=avg&aggregateField=qty')).body.value).toBe(4);
    expect((await get('?aggregate=min&aggregateField=price')).body.value).toBe(8);
    expect((await get('?aggregate=max&aggregateField=price')).body.value).toBe(99.99);
    expect((await get('?aggregate=max&aggregateField=day')).body.value).toBe('2024-04-01');
    expect((await get('?aggregate=sum&aggregateField=qty&field=category&value=fun')).body.value).toBe(9);
    expect((await get('?aggregate=sum&aggregateField=qty&field=category&value=none')).body).toMatchObject({ value: null, count: 0 });
  });

  it('aggregate + groupBy: one group per key, sorted by key, nulls last', async () => {
    const { status, body } = await get('?aggregate=sum&aggregateField=price&groupBy=category');
    expect(status).toBe(200);
    expect(body.groupBy).toBe('category');
    expect(body.truncated).toBe(false);
    expect(body.groups.map((g: { key: string }) => g.key)).toEqual(['food', 'fun', 'shop']);
    expect(body.groups.map((g: { count: number }) => g.count)).toEqual([4, 2, 2]);
    expect(body.groups[0].value).toBeCloseTo(33, 10);
    expect(body.groups[1].value).toBe(20);
    expect(body.groups[2].value).toBeCloseTo(129.99, 10);
    const byBool = await get('?aggregate=count&groupBy=active');
    expect(byBool.body.groups).toEqual([
      { key: false, value: 3, count: 3 },
      { key: true, value: 5, count: 5 },
    ]);
    const withNull = await get('?aggregate=avg&aggregateField=qty&groupBy=price&filter[category][eq]=food');
    expect(withNull.body.groups).toEqual([
      { key: 8, value: 10, count: 1 },
      { key: 12.5, value: 3.5, count: 2 },
      { key: null, value: 5, count: 1 },
    ]);
  });

  it('cursor pages through a sort without gaps or repeats, and matches offset paging', async () => {
    const full = names((await get('?sort=-price,name')).body);
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 10; i++) {
      const res: { status: number; body: any } = await get(`?sort=-price,name&limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      seen.push(...names(res.body).map(String));
      cursor = res.body.nextCursor;
      if (!cursor) break;
    }
    expect(seen).toEqual(full);
    const last = await get('?limit=8');
    expect(last.body.nextCursor).toBeNull();
    const first = await get('?sort=-price&limit=2');
    const other = await get(`?sort=price&limit=2&cursor=${first.body.nextCursor}`);
    expect(other.status).toBe(400);
    expect(other.body.error.details.issues[0].field).toBe('cursor');
    const both = await get(`?sort=-price&limit=2&offset=2&cursor=${first.body.nextCursor}`);
    expect(both.status).toBe(400);
    expect((await get('?cursor=garbage')).status).toBe(400);
  });

  const bad: [string, string, string][] = [
    ['field', '?field=nope&value=1', 'nope'],
    ['filter', '?filter=nope&filterValue=1', 'nope'],
    ['sortField', '?sortField=nope', 'nope'],
    ['sort', '?sort=name,-nope', 'nope'],
    ['searchFields', '?q=a&searchFields=name,nope', 'nope'],
    ['dateField', '?dateField=nope&dateFrom=2024-01-01', 'nope'],
    ['fields', '?fields=name,nope', 'nope'],
    ['columns', '?columns=nope', 'nope'],
    ['aggregateField', '?aggregate=sum&aggregateField=nope', 'nope'],
    ['groupBy', '?aggregate=count&groupBy=nope', 'nope'],
    ['longitudeField', '?bbox=0,0,1,1&longitudeField=nope', 'nope'],
    ['latitudeField', '?bbox=0,0,1,1&latitudeField=nope', 'nope'],
    ['filter[x][op]', '?filter[nope][gt]=1', 'nope'],
  ];
  it.each(bad)('unknown field in %s: 400 naming it', async (_p, query, field) => {
    const { status, body } = await get(query);
    expect(status).toBe(400);
    expect(body.error.code).toBe('validation_failed');
    expect(body.error.details.unknownFields).toEqual([field]);
    expect(body.error.message).toContain(field);
  });

  // SQL's order words, as a model or a developer writes them first.
  it('a sort written "price desc" says how to write it, and that order holds', async () => {
    const { status, body } = await get('?sort=price%20desc');
    expect(status).toBe(400);
    expect(body.error.message).toBe('invalid query: sort: write -price for descending order, not "price desc"');
    expect((await get('?sort=name+ASC')).body.error.message).toBe('invalid query: sort: write name for ascending order, not "name ASC"');
    const prices = (await get('?sort=-price')).body.records.map((r: { fields: { price?: number } }) => r.fields.price ?? null);
    expect(prices.filter((p: number | null) => p !== null)).toEqual([...prices.filter((p: number | null) => p !== null)].sort((a, b) => b - a));
  });

  it('sorting by a creation time the schema lacks says how to list the newest first, and that order holds', async () => {
    const { status, body } = await get('?sort=-createdAt');
    expect(status).toBe(400);
    expect(body.error.message).toMatch(
      /unknown field: createdAt \(schema fields: .*\); records are numbered in the order they are created: sort=-id lists the newest first$/,
    );
    expect((await get('?sortField=created_at&sortDir=desc')).body.error.message).toContain('sort=-id lists the newest first');
    // Not on a filter, where sorting is no answer.
    expect((await get('?filter[createdAt][gt]=1')).body.error.message).not.toContain('sort=-id');
    // The advice holds: the records come back newest first (the reverse of the order they were sent in).
    const names = (r: { body: { records: { fields: { name: string } }[] } }) => r.body.records.map((x) => x.fields.name);
    const inserted = names(await get(''));
    expect(inserted.length).toBeGreaterThan(1);
    expect(names(await get('?sort=-id'))).toEqual([...inserted].reverse());
  });

  it('several unknown fields are all named', async () => {
    const { status, body } = await get('?sortField=foo&fields=bar,name&groupBy=baz&aggregate=count');
    expect(status).toBe(400);
    expect([...body.error.details.unknownFields].sort()).toEqual(['bar', 'baz', 'foo']);
  });

  const invalid: [string, string][] = [
    ['limit 0', '?limit=0'],
    ['limit above the max', '?limit=1001'],
    ['negative offset', '?offset=-1'],
    ['value not of the field type', '?field=price&value=cheap'],
    ['value without field', '?value=1'],
    ['bad sortDir', '?sortField=name&sortDir=up'],
    ['unknown aggregate', '?aggregate=median&aggregateField=qty'],
    ['sum of a string', '?aggregate=sum&aggregateField=name'],
    ['bad bbox', '?bbox=1,2,3'],
    ['bbox latitude out of range', '?bbox=0,-91,1,1'],
    ['dateField not a date', '?dateField=name&dateFrom=2024-01-01'],
    ['bad dateFrom', '?dateField=day&dateFrom=yesterday'],
    ['unknown operator', '?filter[price][between]=1'],
    ['ilike on a number', '?filter[price][ilike]=1*'],
    ['filter on json', '?filter[meta][eq]=1'],
    ['sort on json', '?sortField=meta'],
    ['unknown parameter', '?colour=red'],
    ['includeTotal not a boolean', '?includeTotal=maybe'],
  ];
  it.each(invalid)('%s: 400', async (_label, query) => {
    const { status, body } = await get(query);
    expect(status, JSON.stringify(body)).toBe(400);
    expect(body.ok).toBe(false);
    expect(body.error.details.issues.length).toBeGreaterThan(0);
  });

  it('answers match the shared response schemas the MCP tools use', async () => {
    expect(TableRecordsResponseSchema.safeParse((await get('?limit=3&includeTotal=true')).body).success).toBe(true);
    expect(TableCompactResponseSchema.safeParse((await get('?compact=true&limit=3')).body).success).toBe(true);
    for (const q of [
      '?aggregate=count',
      '?aggregate=max&aggregateField=day',
      '?aggregate=sum&aggregateField=qty&groupBy=category',
      '?aggregate=min&aggregateField=name&groupBy=active',
    ]) {
      const r = TableAggregateResponseSchema.safeParse((await get(q)).body);
      expect(r.success, `${q}: ${r.error?.message}`).toBe(true);
    }
  });

  it('parameters starting with _ (cache busters) are ignored', async () => {
    expect((await get('?_=12345&limit=1')).status).toBe(200);
  });

  it('the same Table API answers on the site host', async () => {
    const port = new URL(h.url).port;
    const res = await getWithHost(`${h.url}${t.path}?field=category&value=fun`, `${t.siteSlug}.localhost:${port}`);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body).records.map((r: { fields: { name: string } }) => r.fields.name)).toEqual(['Zeta Zoo', 'Eta Arena']);
    expect(new URL(t.table.url).host).toBe(`${t.siteSlug}.localhost:${port}`);
  });

  it('GET /schema describes the table', async () => {
    const { status, body } = await get('/schema');
    expect(status).toBe(200);
    expect(body).toMatchObject({
      ok: true,
      slug: 'places',
      name: 'Places',
      kind: 'table',
      requireReadKey: false,
      publicInsert: false,
      methods: ['GET', 'POST', 'PATCH', 'PUT', 'DELETE'],
    });
    expect(body.schema.fields.map((f: { name: string }) => f.name)).toEqual(PLACES_SCHEMA.fields.map((f) => f.name));
    expect(body.limits).toMatchObject({ defaultLimit: 50, maxLimit: 1000, maxBatch: 500 });
  });

  it('unknown site or table: 404', async () => {
    expect((await getJson(h, `/api/data/${t.siteSlug}/nope`)).status).toBe(404);
    expect((await getJson(h, `/api/data/no-such-site-zz/places`)).status).toBe(404);
  });

  it('CORS: preflight allows the key headers from any origin', async () => {
    const res = await h.fetch(t.path, {
      method: 'OPTIONS',
      headers: { origin: 'https://example.org', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, x-svc-write-key' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-headers')!.toLowerCase()).toContain('x-svc-write-key');
    expect(res.headers.get('access-control-allow-methods')).toContain('PATCH');
    const get = await h.fetch(t.path, { headers: { origin: 'https://example.org' } });
    expect(get.headers.get('access-control-allow-origin')).toBe('*');
  });
});
