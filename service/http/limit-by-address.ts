import type { IncomingMessage } from 'node:http';
import type { Context, MiddlewareHandler } from 'hono';
import type { AddressSurface, Config } from '../kernel/config.js';
import type { AddressLimiter } from './address-limits.js';
import { clientIp, socketAddress } from './client-ip.js';

/** Requests a fast path counted already before handing them to the app. */
export const countedRequests = new WeakSet<IncomingMessage>();

/**
 * Counts the request against its client address on `surface` (429 with Retry-After past the limit).
 * A request that came in no socket is a hosted MCP tool's in-process call: the POST that carried it
 * was counted on its own surface already.
 */
export function limitByAddress(
  deps: { config: Config; addressLimits: AddressLimiter },
  surface: AddressSurface | ((c: Context) => AddressSurface | null),
): MiddlewareHandler {
  return async (c, next) => {
    const which = typeof surface === 'function' ? surface(c) : surface;
    const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
    if (which && socketAddress(c) !== undefined && !(incoming && countedRequests.has(incoming)))
      deps.addressLimits.enforce(which, clientIp(c, deps.config.trustProxy));
    await next();
  };
}
