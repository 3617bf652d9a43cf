import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { makeTable, type TableFixture } from './helpers.js';

/**
 * Property tests: random filter / sort / paging requests never answer 5xx, and their answers equal
 * a plain in-memory implementation of the documented semantics over the same records.
 */

const SCHEMA = {
  fields: [
    { name: 's', label: 'S', type: 'string' },
    { name: 'n', label: 'N', type: 'integer' },
    { name: 'x', label: 'X', type: 'number' },
    { name: 'b', label: 'B', type: 'boolean' },
    { name: 'd', label: 'D', type: 'date' },
  ],
};
type Field = 's' | 'n' | 'x' | 'b' | 'd';
type Val = string | number | boolean | null;
type Rec = Partial<Record<Field, Val>>;

const STRINGS = ['apple', 'Apple', 'banana', 'cherry', 'Cherry pie', 'date', 'ab', 'b', 'zz', 'Zulu'];
const DATES = ['2023-12-31', '2024-01-01', '2024-02-29', '2024-03-01', '2025-06-15'];
const gen: Record<Field, fc.Arbitrary<Val>> = {
  s: fc.constantFrom(...STRINGS),
  n: fc.integer({ min: -5, max: 5 }),
  x: fc.integer({ min: -8, max: 8 }).map((i) => i / 4),
  b: fc.boolean(),
  d: fc.constantFrom(...DATES),
};
const FIELDS: Field[] = ['s', 'n', 'x', 'b', 'd'];
/** Each field present, explicitly null, or missing. */
const recordArb: fc.Arbitrary<Rec> = fc.record(
  Object.fromEntries(FIELDS.map((f) => [f, fc.oneof({ weight: 6, arbitrary: gen[f] }, { weight: 1, arbitrary: fc.constant(null) })])) as Record<
    Field,
    fc.Arbitrary<Val>
  >,
  { requiredKeys: [] },
);

type Op = 'eq' | 'neq' | 'gt' | 'gte' | 'lt' | 'lte' | 'in' | 'isnull' | 'ilike';
interface Filter {
  field: Field;
  op: Op;
  value: Val | Val[] | boolean;
}
const filterArb: fc.Arbitrary<Filter> = fc.constantFrom(...FIELDS).chain((field) => {
  const ops: Op[] =
    field === 's'
      ? ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'in', 'isnull', 'ilike']
      : field === 'b'
        ? ['eq', 'neq', 'isnull', 'in']
        : ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'in', 'isnull'];
  return fc.constantFrom(...ops).chain((op): fc.Arbitrary<Filter> => {
    if (op === 'isnull') return fc.boolean().map((value) => ({ field, op, value }));
    if (op === 'in') return fc.uniqueArray(gen[field], { minLength: 1, maxLength: 3 }).map((value) => ({ field, op, value }));
    if (op === 'ilike') return fc.constantFrom('a*', '*e*', 'APPLE', '*pie', 'b', '*').map((value) => ({ field, op, value }));
    return gen[field].map((value) => ({ field, op, value }));
  });
});
interface Query {
  filters: Filter[];
  equality?: { field: Field; value: Val; spelling: 'field' | 'filter' };
  sort: { field: Field | 'id'; dir: 'asc' | 'desc' }[];
  q?: string;
  dateRange?: { from?: string; to?: string };
  limit: number;
  offset: number;
}
const queryArb: fc.Arbitrary<Query> = fc.record({
  filters: fc.array(filterArb, { maxLength: 3 }),
  equality: fc.option(
    fc
      .constantFrom<Field>(...FIELDS)
      .chain((field) => fc.record({ field: fc.constant(field), value: gen[field], spelling: fc.constantFrom<'field' | 'filter'>('field', 'filter') })),
    { nil: undefined },
  ),
  sort: fc.uniqueArray(fc.record({ field: fc.constantFrom<Field | 'id'>(...FIELDS, 'id'), dir: fc.constantFrom<'asc' | 'desc'>('asc', 'desc') }), {
    maxLength: 3,
    selector: (k) => k.field,
  }),
  q: fc.option(fc.constantFrom('a', 'APP', 'e', 'zz', 'pie', 'q'), { nil: undefined }),
  dateRange: fc.option(
    fc.record({ from: fc.option(fc.constantFrom(...DATES), { nil: undefined }), to: fc.option(fc.constantFrom(...DATES), { nil: undefined }) }),
    { nil: undefined },
  ),
  limit: fc.integer({ min: 1, max: 30 }),
  offset: fc.integer({ min: 0, max: 40 }),
});

function toSearch(q: Query): string {
  const p = new URLSearchParams();
  for (const f of q.filters) {
    const v = Array.isArray(f.value) ? f.value.map(String).join(',') : String(f.value);
    p.append(`filter[${f.field}][${f.op}]`, v);
  }
  if (q.equality) {
    p.set(q.equality.spelling, q.equality.field);
    p.set(q.equality.spelling === 'field' ? 'value' : 'filterValue', String(q.equality.value));
  }
  if (q.sort.length === 1 && q.sort[0]!.field !== 'id') {
    p.set('sortField', q.sort[0]!.field);
    p.set('sortDir', q.sort[0]!.dir);
  } else if (q.sort.length) p.set('sort', q.sort.map((k) => `${k.dir === 'desc' ? '-' : ''}${k.field}`).join(','));
  if (q.q) p.set('q', q.q);
  if (q.dateRange && (q.dateRange.from || q.dateRange.to)) {
    p.set('dateField', 'd');
    if (q.dateRange.from) p.set('dateFrom', q.dateRange.from);
    if (q.dateRange.to) p.set('dateTo', q.dateRange.to);
  }
  p.set('limit', String(q.limit));
  p.set('offset', String(q.offset));
  return p.toString();
}

// ---- the reference implementation -------------------------------------------------------------
const val = (r: Rec, f: Field): Val => (r[f] === undefined ? null : (r[f] as Val));
function cmp(a: Val, b: Val): number {
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0; // byte order for ASCII
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  return (a as number) - (b as number);
}
function likeRegex(pattern: string): RegExp {
  const body = pattern
    .replace(/\*/g, '%')
    .split('')
    .map((c) => (c === '%' ? '.*' : c === '_' ? '.' : c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${body}$`, 'is');
}
function matches(r: Rec, q: Query): boolean {
  for (const f of q.filters) {
    const v = val(r, f.field);
    if (f.op === 'isnull') {
      if ((v === null) !== f.value) return false;
      continue;
    }
    if (v === null) return false;
    const c = () => cmp(v, f.value as Val);
    const ok =
      f.op === 'eq'
        ? c() === 0
        : f.op === 'neq'
          ? c() !== 0
          : f.op === 'gt'
            ? c() > 0
            : f.op === 'gte'
              ? c() >= 0
              : f.op === 'lt'
                ? c() < 0
                : f.op === 'lte'
                  ? c() <= 0
                  : f.op === 'in'
                    ? (f.value as Val[]).some((x) => cmp(v, x) === 0)
                    : likeRegex(String(f.value)).test(String(v));
    if (!ok) return false;
  }
  if (q.equality) {
    const v = val(r, q.equality.field);
    if (v === null || cmp(v, q.equality.value) !== 0) return false;
  }
  if (q.q) {
    const s = val(r, 's');
    if (s === null || !String(s).toLowerCase().includes(q.q.toLowerCase())) return false;
  }
  if (q.dateRange) {
    const d = val(r, 'd');
    if ((q.dateRange.from || q.dateRange.to) && d === null) return false;
    if (q.dateRange.from && String(d) < q.dateRange.from) return false;
    if (q.dateRange.to && String(d) > q.dateRange.to) return false;
  }
  return true;
}
function reference(records: { id: number; rec: Rec }[], q: Query, noPaging = false): number[] {
  const keys = [...q.sort];
  const idx = keys.findIndex((k) => k.field === 'id');
  const effective = idx >= 0 ? keys.slice(0, idx + 1) : [...keys, { field: 'id' as const, dir: 'asc' as const }];
  const rows = records.filter((r) => matches(r.rec, q));
  rows.sort((a, b) => {
    for (const k of effective) {
      if (k.field === 'id') return k.dir === 'asc' ? a.id - b.id : b.id - a.id;
      const va = val(a.rec, k.field);
      const vb = val(b.rec, k.field);
      if (va === null && vb === null) continue;
      // asc: nulls last; desc: nulls first (PostgreSQL's defaults, documented).
      if (va === null) return k.dir === 'asc' ? 1 : -1;
      if (vb === null) return k.dir === 'asc' ? -1 : 1;
      const c = cmp(va, vb);
      if (c !== 0) return k.dir === 'asc' ? c : -c;
    }
    return 0;
  });
  const ids = rows.map((r) => r.id);
  return noPaging ? ids : ids.slice(q.offset, q.offset + q.limit);
}

describe.each(dbKinds())('Table API properties (%s)', (kind) => {
  let h: Harness;
  let t: TableFixture;
  let records: { id: number; rec: Rec }[];
  beforeAll(async () => {
    h = await startHarness(kind);
    t = await makeTable(h, { name: 'Props', schema: SCHEMA });
    const recs = fc.sample(recordArb, { numRuns: 120, seed: 42 });
    const res = await h.fetch(t.path, { method: 'POST', json: { records: recs }, headers: { 'x-svc-write-key': t.table.writeKey } });
    expect(res.status).toBe(201);
    const body = await res.json();
    records = body.records.map((r: { id: string }, i: number) => ({ id: Number(r.id), rec: recs[i] }));
  });
  afterAll(async () => h?.close());

  it('random filter/sort/paging requests answer 200 and equal the in-memory reference', async () => {
    await fc.assert(
      fc.asyncProperty(queryArb, async (q) => {
        const qs = toSearch(q);
        const res = await h.fetch(`${t.path}?${qs}&includeTotal=true`);
        const body = await res.json();
        expect(res.status, `${qs} → ${JSON.stringify(body)}`).toBe(200);
        expect(
          body.records.map((r: { id: string }) => Number(r.id)),
          qs,
        ).toEqual(reference(records, q));
        expect(body.total, qs).toBe(reference(records, q, true).length);
      }),
      { numRuns: 150, seed: 7 },
    );
  });

  it('cursor paging returns exactly the unpaged order, for any sort', async () => {
    await fc.assert(
      fc.asyncProperty(queryArb, fc.integer({ min: 1, max: 25 }), async (q, pageSize) => {
        const base = { ...q, offset: 0, limit: pageSize };
        const expected = reference(records, base, true);
        const seen: number[] = [];
        let cursor: string | null = null;
        for (let i = 0; i < 200; i++) {
          const qs = `${toSearch(base).replace(/&?offset=0/, '')}${cursor ? `&cursor=${cursor}` : ''}`;
          const res = await h.fetch(`${t.path}?${qs}`);
          const body = await res.json();
          expect(res.status, `${qs} → ${JSON.stringify(body)}`).toBe(200);
          seen.push(...body.records.map((r: { id: string }) => Number(r.id)));
          cursor = body.nextCursor;
          if (!cursor) break;
        }
        expect(seen).toEqual(expected);
      }),
      { numRuns: 40, seed: 11 },
    );
  });

  it('aggregates equal the reference (count/sum/min/max, with and without groupBy)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(filterArb, { maxLength: 2 }),
        fc.constantFrom('count', 'sum', 'min', 'max'),
        fc.option(fc.constantFrom<Field>('s', 'b', 'n'), { nil: undefined }),
        async (filters, fn, groupBy) => {
          const q: Query = { filters, sort: [], limit: 1, offset: 0 };
          const p = new URLSearchParams(toSearch(q));
          p.delete('limit');
          p.delete('offset');
          p.set('aggregate', fn);
          if (fn !== 'count') p.set('aggregateField', 'n');
          if (groupBy) p.set('groupBy', groupBy);
          const res = await h.fetch(`${t.path}?${p}`);
          const body = await res.json();
          expect(res.status, `${p} → ${JSON.stringify(body)}`).toBe(200);
          const rows = records.filter((r) => matches(r.rec, q));
          const agg = (rs: typeof rows) => {
            const ns = rs.map((r) => val(r.rec, 'n')).filter((v): v is number => v !== null);
            if (fn === 'count') return rs.length;
            if (ns.length === 0) return null;
            return fn === 'sum' ? ns.reduce((a, b) => a + b, 0) : fn === 'min' ? Math.min(...ns) : Math.max(...ns);
          };
          if (!groupBy) {
            expect(body.value).toBe(agg(rows));
            return;
          }
          const keys = [...new Set(rows.map((r) => val(r.rec, groupBy)))].sort((a, b) => (a === null ? 1 : b === null ? -1 : cmp(a, b)));
          expect(body.groups).toEqual(
            keys.map((k) => {
              const g = rows.filter((r) => val(r.rec, groupBy) === k);
              return { key: k, value: agg(g), count: g.length };
            }),
          );
        },
      ),
      { numRuns: 80, seed: 5 },
    );
  });

  it('arbitrary query strings never cause a 5xx', async () => {
    const names = [
      'limit',
      'offset',
      'includeTotal',
      'field',
      'value',
      'filter',
      'filterValue',
      'sortField',
      'sortDir',
      'sort',
      'q',
      'searchFields',
      'dateField',
      'dateFrom',
      'dateTo',
      'fields',
      'columns',
      'compact',
      'aggregate',
      'aggregateField',
      'groupBy',
      'bbox',
      'longitudeField',
      'latitudeField',
      'cursor',
      'filter[s][ilike]',
      'filter[n][in]',
      'filter[x][gt]',
      'filter[d][lte]',
      'filter[b][isnull]',
      'filter[s][bogus]',
    ];
    const valueArb = fc.oneof(
      fc.string({ maxLength: 12 }),
      fc.constantFrom(
        's',
        'n',
        'x',
        'b',
        'd',
        'id',
        '-n,s',
        'asc',
        'desc',
        'sum',
        'count',
        '1',
        '0',
        '-1',
        '1e309',
        'NaN',
        '2024-02-30',
        '0,0,1,1',
        '%',
        '\\',
        "'",
        '"',
        'true',
        'null',
      ),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.constantFrom(...names), valueArb), { maxLength: 6 }), async (pairs) => {
        const p = new URLSearchParams(pairs);
        const res = await h.fetch(`${t.path}?${p}`);
        const body = await res.json();
        expect(res.status, `${p} → ${JSON.stringify(body)}`).toBeLessThan(500);
        if (res.status !== 200) expect(body.error.code).toMatch(/^(validation_failed|bad_request)$/);
      }),
      { numRuns: 300, seed: 3 },
    );
  });
});
