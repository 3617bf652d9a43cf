import type { Context, MiddlewareHandler } from 'hono';
import type { ReadPools } from '../db/read-pools.js';
import type { Logger } from '../kernel/logger.js';
import type { AppEnv } from '../kernel/request-env.js';
import { writerAddress } from './client-ip.js';

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The paths whose writes a client may look for at its next read: the Account API, the Agent API, the dashboard. */
const WRITING_SURFACES = ['/api/v1/', '/api/x402/', '/dashboard/'];

/**
 * Who a request is, for read-your-writes (db/read-pools.ts): its address (a hosted MCP tool's call:
 * its caller's, client-ip.ts), and the account it signed in as, so that another client of the same
 * key or account (the dashboard after an MCP tool) reads past the account's writes too.
 */
export function readersOf(c: Context<AppEnv>, trustedHops: number | boolean): string[] {
  const readers = [writerAddress(c, trustedHops)];
  const principal = c.get('principal') as AppEnv['Variables']['principal'] | undefined;
  if (principal) readers.push(`account:${principal.accountId}`);
  return readers;
}

/**
 * After a change through the Account API, the Agent API (paid or not, from any MCP tool in
 * process) or the dashboard committed (a write method answered below 400): the primary's position
 * is remembered for its writer, whose next public reads (site resolution, listings, the Table API)
 * then see it on whichever replica. The Table API records its own writes (tables/table-api.ts).
 * A failure to read the position is logged, never answered as the write's: the write stands.
 */
export function recordWrites(deps: { readPools: ReadPools; config: { trustProxy: number }; log: Logger }): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    await next();
    if (!deps.readPools.enabled || READ_METHODS.has(c.req.method) || c.res.status >= 400) return;
    if (!WRITING_SURFACES.some((p) => c.req.path.startsWith(p))) return;
    await deps.readPools
      .wrote(readersOf(c, deps.config.trustProxy))
      .catch((e: unknown) => deps.log.warn('read-your-writes: the write position could not be read', { error: (e as Error).message }));
  };
}
