// The floor `npm run bench tables` measures the Table API against: a bare node:http server with
// postgres.js in a process of its own, answering each path with the rows of one fixed statement as
// JSON. No routing, no auth, no validation, no row check: what any server must do to answer the
// same query. BARE_DATABASE_URL, BARE_PORT, and BARE_QUERIES = JSON { "/path": { sql, params, prepare? } }:
// a statement with `prepare` is kept prepared on each connection, as svc's read pools keep theirs
// (and never sent in the simple protocol, which postgres.js takes for one without parameters).
import postgres from 'postgres';
import { serveJson } from './serve.mjs';

const sql = postgres(process.env.BARE_DATABASE_URL, { max: 10, onnotice: () => {} });
// JSON parameters pass through as text, as drizzle's postgres.js driver sends them.
sql.options.serializers['114'] = sql.options.serializers['3802'] = (v) => v;
const queries = JSON.parse(process.env.BARE_QUERIES);

const run = (q) => (q.prepare ? sql.unsafe(q.sql, q.params, { prepare: true, simple: false }) : sql.unsafe(q.sql, q.params));
serveJson(sql, Object.fromEntries(Object.entries(queries).map(([path, q]) => [path, async () => ({ ok: true, rows: await run(q) })])));
