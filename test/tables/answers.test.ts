import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { columnTableName, createColumnTable, finishColumnTable } from '../../service/db/column-storage.js';
import { createTable } from '../../service/tables/tables.js';
import { tableListKey } from '../../service/tables/table-lists.js';
import type { Clock } from '../../service/kernel/clock.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { makeTable } from './helpers.js';

/**
 * The Table API's read answers, byte for byte, over many query shapes and both storages (a Table's
 * JSONB records, a dataset's column table), compared with the answers the build of 2026-12-05
 * gave before the compiler's statements changed shape (issue 53): answers.golden.json holds the
 * SHA-256 of each answer, written by that build with `UPDATE_TABLE_ANSWERS=1` (PGlite; PostgreSQL
 * answers the same bytes). Each shape is asked twice, once through the app (the
 * node's table row dropped first) and once through the fast path: the same bytes both ways.
 */

const GOLDEN = path.join(path.dirname(fileURLToPath(import.meta.url)), 'answers.golden.json');
const UPDATE = process.env.UPDATE_TABLE_ANSWERS === '1';

const SCHEMA = {
  fields: [
    { name: 'name', label: 'Name', type: 'string' as const },
    { name: 'category', label: 'Category', type: 'string' as const },
    { name: 'price', label: 'Price', type: 'number' as const },
    { name: 'qty', label: 'Quantity', type: 'integer' as const },
    { name: 'active', label: 'Active', type: 'boolean' as const },
    { name: 'day', label: 'Day', type: 'date' as const },
    { name: 'at', label: 'At', type: 'datetime' as const },
    { name: 'lat', label: 'Latitude', type: 'number' as const },
    { name: 'lon', label: 'Longitude', type: 'number' as const },
    { name: 'meta', label: 'Meta', type: 'json' as const },
  ],
};

const NAMES = ['apple', 'Apple pie', 'banana', 'He said "hi"\u2028 ü 🐈', 'item 5', 'item 50', 'zz_top', '100% juice', 'Zulu', 'cherry'];

/** 150 records from a fixed generator: values of every type, some null, some missing. */
function records(): Record<string, unknown>[] {
  let seed = 53;
  const rnd = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  return Array.from({ length: 150 }, (_, i) => {
    const r: Record<string, unknown> = {
      name: `${NAMES[i % NAMES.length]} ${i % 7}`,
      category: `cat-${i % 6}`,
      price: i % 11 === 0 ? null : Math.round(rnd() * 10000) / 100,
      qty: Math.floor(rnd() * 40) - 5,
      active: rnd() < 0.5,
      day: new Date(Date.UTC(2024, 0, 1) + Math.floor(rnd() * 200) * 86_400_000).toISOString().slice(0, 10),
      at: new Date(Date.UTC(2024, 0, 1) + Math.floor(rnd() * 200 * 86_400_000)).toISOString(),
      lat: Math.round((rnd() * 180 - 90) * 1e4) / 1e4,
      lon: Math.round((rnd() * 360 - 180) * 1e4) / 1e4,
      meta: i % 3 === 0 ? { n: i, tags: ['a', 'b'], big: 1e21 } : null,
    };
    // Some fields left out altogether (absent from `fields`, unlike null).
    if (i % 13 === 5) delete r.qty;
    if (i % 17 === 3) delete r.day;
    return r;
  });
}

/** The query strings asked of both storages (one page each). */
const SHAPES = [
  '',
  '?limit=5',
  '?limit=7&offset=3',
  '?limit=1000',
  '?includeTotal=true&limit=3',
  '?field=category&value=cat-2',
  '?filter=active&filterValue=true&limit=10&includeTotal=true',
  '?filter[price][gt]=50&limit=10',
  '?filter[price][gte]=50.5&filter[price][lte]=80&sort=price',
  '?filter[qty][lt]=0',
  '?filter[category][neq]=cat-1&limit=10',
  '?filter[category][in]=cat-1,cat-4&limit=10',
  '?filter[qty][in]=1,2,3',
  '?filter[price][isnull]=true',
  '?filter[qty][isnull]=false&limit=4',
  '?filter[name][ilike]=apple*',
  '?filter[name][ilike]=*_top*',
  '?filter[day][gte]=2024-05-01&sort=day',
  '?filter[at][lt]=2024-02-01T00:00:00Z&sort=-at',
  '?filter[active][eq]=false&filter[category]=cat-3',
  '?sortField=price&sortDir=desc&limit=10',
  '?sortField=price&limit=10',
  '?sort=price',
  '?sort=-day,name&limit=20',
  '?sort=-at&limit=15',
  '?sort=active,-qty&limit=12',
  '?sort=-id&limit=9',
  '?sort=name&limit=20',
  '?sort=category,-price,id&limit=25',
  '?field=category&value=cat-3&sortField=price&sortDir=desc&limit=5',
  '?field=category&value=cat-3&sortField=price&sortDir=desc&limit=5&includeTotal=true',
  '?q=apple',
  '?q=%25',
  '?q=_',
  '?q=HI&limit=5',
  '?q=cat-1&searchFields=name,category&limit=5',
  '?dateField=day&dateFrom=2024-02-01&dateTo=2024-03-31',
  '?dateField=at&dateFrom=2024-02-01&dateTo=2024-02-29&sort=at',
  '?dateField=at&dateFrom=2024-03-01T12:00:00Z&limit=6',
  '?dateField=day&dateTo=2024-01-20&sort=-day',
  '?bbox=-10,-10,40,60',
  '?bbox=170,-90,-170,90',
  '?bbox=0,0,90,90&sort=-lat&limit=5',
  '?aggregate=count',
  '?aggregate=count&aggregateField=price',
  '?aggregate=sum&aggregateField=price',
  '?aggregate=avg&aggregateField=qty&groupBy=category',
  '?aggregate=min&aggregateField=day',
  '?aggregate=max&aggregateField=at&groupBy=active',
  '?aggregate=min&aggregateField=name&groupBy=category&filter[qty][gt]=10',
  '?aggregate=max&aggregateField=price&groupBy=day',
  '?aggregate=count&groupBy=qty&field=active&value=true',
  '?compact=true&limit=5',
  '?compact=true&limit=5&includeTotal=true&field=category&value=cat-5',
  '?fields=name,price&limit=5',
  '?columns=price,name&sort=-price&limit=5',
  '?compact=true&fields=day,at&sort=day&limit=8',
  '?fields=meta,name&limit=5',
  '?fields=qty&filter[qty][isnull]=true',
];

/** Sorts (and their filters) paged through by `nextCursor` to the end. */
const CURSOR_WALKS = [
  '?limit=40',
  '?sort=-price&limit=30',
  '?sort=day,-name&limit=25',
  '?sort=-at&filter[qty][gt]=10&limit=8',
  '?sort=name&limit=35&compact=true',
  '?sort=-id&limit=45&fields=name',
  '?sort=active,qty&limit=50',
  '?field=category&value=cat-1&sort=price&limit=6',
];

/** One-record reads. */
const RECORD_IDS = ['1', '17', '66', '150'];

type Answers = Record<string, string | string[]>;

/** An answer's digest (a cursor walk's, page by page). */
function sha256(answer: string | string[]): string | string[] {
  return typeof answer === 'string' ? createHash('sha256').update(answer).digest('hex') : answer.map((a) => sha256(a) as string);
}

const fixedClock: Clock = { now: () => new Date('2026-12-05T09:00:00.000Z') };

describe.each(dbKinds())('Table API answers, byte for byte as before (%s)', (kind) => {
  let h: Harness;
  let recordsPath: string;
  let columnsPath: string;
  const golden: Record<string, Answers> = UPDATE ? {} : (JSON.parse(fs.readFileSync(GOLDEN, 'utf8')) as Record<string, Answers>);

  beforeAll(async () => {
    h = await startHarness(kind, {}, { clock: fixedClock });
    const t = await makeTable(h, { name: 'Items', schema: SCHEMA });
    const all = records();
    for (let i = 0; i < all.length; i += 50) {
      const res = await h.fetch(t.path, { method: 'POST', headers: { 'x-svc-write-key': t.table.writeKey }, json: { records: all.slice(i, i + 50) } });
      expect(res.status).toBe(201);
    }
    recordsPath = t.path;
    // The same records in a dataset's column table, ids 1…150 as a conversion numbers them.
    const { table } = await createTable(
      h.deps,
      { id: t.siteId, slug: t.siteSlug },
      { name: 'Cols', slug: 'cols', kind: 'dataset', storage: 'columns', schema: SCHEMA },
    );
    await h.deps.db.transaction(async (tx) => {
      await createColumnTable(tx, table.id, SCHEMA.fields);
      const rows = all.map((r, i) => ({ id: i + 1, ...r }));
      await tx.execute(
        sql`insert into ${sql.raw(columnTableName(table.id))} select * from jsonb_populate_recordset(null::${sql.raw(columnTableName(table.id))}, ${JSON.stringify(rows)}::jsonb)`,
      );
      await finishColumnTable(tx, table.id);
    });
    columnsPath = `/api/data/${t.siteSlug}/cols`;
  });
  afterAll(async () => {
    if (UPDATE && kind === 'pglite') fs.writeFileSync(GOLDEN, `${JSON.stringify(golden, null, 1)}\n`);
    await h?.close();
  });

  /** The body of a 200 GET, asked through the app and then through the fast path: the same bytes both ways. */
  async function body(p: string): Promise<string> {
    const [, , , site, table] = p.split(/[/?]/);
    h.deps.tableLists.rows.delete(tableListKey(site!, table!));
    const viaApp = await h.fetch(p);
    const first = await viaApp.text();
    expect(viaApp.status, `${p}: ${first}`).toBe(200);
    const viaFastPath = await h.fetch(p);
    expect(await viaFastPath.text(), p).toBe(first);
    return first;
  }

  async function answersOf(base: string): Promise<Answers> {
    const out: Answers = {};
    for (const shape of SHAPES) out[shape] = await body(`${base}${shape}`);
    for (const walk of CURSOR_WALKS) {
      const pages: string[] = [];
      let next: string | null = null;
      do {
        const page = await body(`${base}${walk}${next ? `&cursor=${encodeURIComponent(next)}` : ''}`);
        pages.push(page);
        next = (JSON.parse(page) as { nextCursor: string | null }).nextCursor;
      } while (next && pages.length < 50);
      out[`walk ${walk}`] = pages;
    }
    for (const id of RECORD_IDS) out[`/${id}`] = await body(`${base}/${id}`);
    return out;
  }

  for (const storage of ['records', 'columns'] as const) {
    it(`${storage}: every shape answers the same bytes as before`, async () => {
      const answers = await answersOf(storage === 'records' ? recordsPath : columnsPath);
      if (UPDATE) {
        golden[storage] = Object.fromEntries(Object.entries(answers).map(([shape, answer]) => [shape, sha256(answer)]));
        return;
      }
      for (const [shape, answer] of Object.entries(answers)) {
        expect(sha256(answer), `${storage} ${shape}: ${JSON.stringify(answer).slice(0, 2000)}`).toEqual(golden[storage]![shape]);
      }
      expect(Object.keys(answers)).toEqual(Object.keys(golden[storage]!));
    });
  }
});
