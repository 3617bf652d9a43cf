import { timingSafeEqual } from 'node:crypto';
import { Hono } from 'hono';
import type { Deps } from '../deps.js';
import { AppError } from '../kernel/app-error.js';
import { clientIp, isLoopback } from '../http/client-ip.js';
import { runAdminOperation } from './operations.js';

function tokenMatches(given: string | undefined, expected: string): boolean {
  if (!given) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * `POST /_admin/:operation` for the CLI: loopback peers only (never X-Forwarded-For), and the
 * token from admin.json. Anything else is a plain 404, so the endpoint is invisible from outside.
 */
export function adminRoutes(deps: Deps, adminToken: string): Hono {
  const r = new Hono();
  r.post('/_admin/:operation', async (c) => {
    if (!isLoopback(clientIp(c, false)) || !tokenMatches(c.req.header('x-svc-admin-token'), adminToken)) {
      throw new AppError('not_found', 'not found');
    }
    const input = await c.req.json().catch(() => ({}));
    return c.json({ ok: true, result: await runAdminOperation(deps, c.req.param('operation'), input) });
  });
  return r;
}
