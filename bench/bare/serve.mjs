// What both bare servers of `npm run bench tables` share (table-server.mjs, table-floor.mjs): node:http
// on BARE_PORT answering each known path with the JSON of its route's value, as any small server
// would. Nothing else happens per request: no routing library, no auth, no validation, no logging.
import { createServer } from 'node:http';

/**
 * Serves `routes[path]()` as JSON (404 for any other path, 500 with the error's text), prints
 * "listening" once it listens, and on SIGTERM closes the server and then `sql` (postgres.js).
 */
export function serveJson(sql, routes) {
  const server = createServer(async (req, res) => {
    const route = Object.hasOwn(routes, req.url) ? routes[req.url] : undefined;
    if (!route) {
      res.writeHead(404).end();
      return;
    }
    try {
      const body = JSON.stringify(await route());
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
    } catch (e) {
      res.writeHead(500, { 'content-type': 'text/plain' }).end(String(e));
    }
  });
  server.keepAliveTimeout = 65_000;
  server.listen(Number(process.env.BARE_PORT), '127.0.0.1', () => process.stdout.write('listening\n'));
  process.on('SIGTERM', () => server.close(() => sql.end().then(() => process.exit(0))));
}
