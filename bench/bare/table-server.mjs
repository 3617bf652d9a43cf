// The floor `npm run bench tables` measures the Table API against: a bare node:http server with
// postgres.js in a process of its own, answering each path with the rows of one fixed statement as
// JSON. No routing, no auth, no validation, no row check: what any server must do to answer the
// same query. BARE_DATABASE_URL, BARE_PORT, and BARE_QUERIES = JSON { "/path": { sql, params } }.
import { createServer } from 'node:http';
import postgres from 'postgres';

const sql = postgres(process.env.BARE_DATABASE_URL, { max: 10, onnotice: () => {} });
// JSON parameters pass through as text, as drizzle's postgres.js driver sends them.
sql.options.serializers['114'] = sql.options.serializers['3802'] = (v) => v;
const queries = JSON.parse(process.env.BARE_QUERIES);

const server = createServer(async (req, res) => {
  const q = queries[req.url];
  if (!q) {
    res.writeHead(404).end();
    return;
  }
  try {
    const rows = await sql.unsafe(q.sql, q.params);
    const body = JSON.stringify({ ok: true, rows });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
  } catch (e) {
    res.writeHead(500, { 'content-type': 'text/plain' }).end(String(e));
  }
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.BARE_PORT), '127.0.0.1', () => process.stdout.write('listening\n'));
process.on('SIGTERM', () => server.close(() => sql.end().then(() => process.exit(0))));
