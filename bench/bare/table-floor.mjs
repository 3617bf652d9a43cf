// The floor of section 4 of `npm run bench tables` (issue 53): the simplest server a user could
// write for the same answers as the Table API, by hand. node:http + postgres.js in a process of its
// own, one hand-written statement per read shape and storage, the answer built with JSON.stringify.
// No routing library, no auth, no validation, no row check, nothing from svc's compiler. Each handler
// answers one fixed request (the bench's), as svc answers it: the bench checks the two answers are the
// same JSON before timing them.
// BARE_DATABASE_URL, BARE_PORT, BARE_TABLE (the records table's id), BARE_COLUMNS (the dataset's
// column table, quoted), BARE_CREATED (the dataset's creation time: its records' times).
import postgres from 'postgres';
import { serveJson } from './serve.mjs';

// Named for the bench, which reads the CPU of this server's database backends apart from svc's.
const sql = postgres(process.env.BARE_DATABASE_URL, { max: 10, onnotice: () => {}, connection: { application_name: 'bare-floor' } });
const table = process.env.BARE_TABLE;
const cols = process.env.BARE_COLUMNS;
const created = process.env.BARE_CREATED;
/** The fields of a column table's row, as a record shows them. */
const colList = `name, category, price, qty, active, to_char(day, 'YYYY-MM-DD') as day, lat, lon`;

const cursor = (s, v, id) => Buffer.from(JSON.stringify({ s, v, id: Number(id) })).toString('base64url');
/** A page of 50 from 51 rows: `fieldsOf` a row's fields, `sortValues` the cursor's values of the last. */
function page(rows, s, fieldsOf, sortValues = () => []) {
  const more = rows.length > 50;
  const kept = more ? rows.slice(0, 50) : rows;
  const last = kept.at(-1);
  return {
    ok: true,
    records: kept.map((r) => ({ id: String(r.id), fields: fieldsOf(r) })),
    limit: 50,
    offset: 0,
    nextCursor: more ? cursor(s, sortValues(last), last.id) : null,
  };
}
const jsonFields = (r) => r.fields;
const columnFields = ({ id, ...fields }) => fields;

const handlers = {
  '/records/first': async () => page(await sql`select id, fields from table_records where table_id = ${table} order by id limit 51`, 'id', jsonFields),
  '/columns/first': async () => page(await sql.unsafe(`select id, ${colList} from ${cols} order by id limit 51`), 'id', columnFields),

  '/records/one': async () => {
    const [r] = await sql`select id, fields, created_at, updated_at from table_records where table_id = ${table} and id = 7`;
    return { ok: true, record: { id: String(r.id), fields: r.fields, createdAt: r.created_at.toISOString(), updatedAt: r.updated_at.toISOString() } };
  },
  '/columns/one': async () => {
    const [{ id, ...fields }] = await sql.unsafe(`select id, ${colList} from ${cols} where id = 7`);
    return { ok: true, record: { id: String(id), fields, createdAt: created, updatedAt: created } };
  },

  '/records/filter-sort': async () =>
    page(
      await sql`select id, fields from table_records where table_id = ${table} and fields @> ${sql.json({ category: 'cat-7' })}
                order by (fields->>'price')::float8 desc, id limit 51`,
      '-price,id',
      jsonFields,
      (r) => [r.fields.price],
    ),
  '/columns/filter-sort': async () =>
    page(
      await sql.unsafe(`select id, ${colList} from ${cols} where category = $1 order by price desc, id limit 51`, ['cat-7']),
      '-price,id',
      columnFields,
      (r) => [r.price],
    ),

  '/records/search': async () =>
    page(
      await sql`select id, fields from table_records where table_id = ${table} and fields->>'name' ilike ${'%item 123%'} order by id limit 51`,
      'id',
      jsonFields,
    ),
  '/columns/search': async () =>
    page(await sql.unsafe(`select id, ${colList} from ${cols} where name ilike $1 order by id limit 51`, ['%item 123%']), 'id', columnFields),

  '/records/date-range': async () =>
    page(
      await sql`select id, fields from table_records where table_id = ${table} and fields->>'day' between '2021-01-01' and '2021-01-31' order by id limit 51`,
      'id',
      jsonFields,
    ),
  '/columns/date-range': async () =>
    page(await sql.unsafe(`select id, ${colList} from ${cols} where day between '2021-01-01' and '2021-01-31' order by id limit 51`), 'id', columnFields),

  '/records/bbox': async () =>
    page(
      await sql`select id, fields from table_records where table_id = ${table}
                and (fields->>'lat')::float8 between -20 and 20 and (fields->>'lon')::float8 between -20 and 20 order by id limit 51`,
      'id',
      jsonFields,
    ),
  '/columns/bbox': async () =>
    page(
      await sql.unsafe(`select id, ${colList} from ${cols} where lat between -20 and 20 and lon between -20 and 20 order by id limit 51`),
      'id',
      columnFields,
    ),

  '/records/aggregate': async () => ({
    ok: true,
    aggregate: 'avg',
    field: 'price',
    groupBy: 'category',
    groups: await sql`select fields->>'category' as key, avg((fields->>'price')::float8) as value, count(*)::int as count
                      from table_records where table_id = ${table} group by 1 order by 1`,
    truncated: false,
  }),
  '/columns/aggregate': async () => ({
    ok: true,
    aggregate: 'avg',
    field: 'price',
    groupBy: 'category',
    groups: await sql.unsafe(`select category as key, avg(price) as value, count(*)::int as count from ${cols} group by 1 order by 1`),
    truncated: false,
  }),

  '/records/compact': async () =>
    compact(await sql`select id, fields->'name' as name, fields->'price' as price from table_records where table_id = ${table} order by id limit 51`),
  '/columns/compact': async () => compact(await sql.unsafe(`select id, name, price from ${cols} order by id limit 51`)),

  '/records/cursor': async () =>
    page(await sql`select id, fields from table_records where table_id = ${table} and id > 15000 order by id limit 51`, 'id', jsonFields),
  '/columns/cursor': async () => page(await sql.unsafe(`select id, ${colList} from ${cols} where id > 15000 order by id limit 51`), 'id', columnFields),
};

function compact(rows) {
  const more = rows.length > 50;
  const kept = more ? rows.slice(0, 50) : rows;
  return {
    ok: true,
    columns: ['id', 'name', 'price'],
    rows: kept.map((r) => [String(r.id), r.name, r.price]),
    limit: 50,
    offset: 0,
    nextCursor: more ? cursor('id', [], kept.at(-1).id) : null,
  };
}

serveJson(sql, handlers);
