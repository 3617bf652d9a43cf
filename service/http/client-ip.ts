import type { Context } from 'hono';
import { getConnInfo } from '@hono/node-server/conninfo';

/**
 * The caller's address as the trusted proxies in front saw it. `trustedHops` is how many proxies
 * of ours stand in front of the service (SVC_TRUST_PROXY: `true` = 1): each appends the address it
 * received the request from to X-Forwarded-For, so the client's own address is the `trustedHops`-th
 * entry from the right. Everything left of it was written by the client and is never used (an
 * appending proxy — nginx `proxy_add_x_forwarded_for` — keeps what the client sent). With no proxy
 * trusted, or no header, it is the socket peer.
 */
export function clientIp(c: Context, trustedHops: number | boolean): string {
  const hops = typeof trustedHops === 'boolean' ? (trustedHops ? 1 : 0) : trustedHops;
  if (hops > 0) {
    const forwarded = forwardedAddress(c.req.header('x-forwarded-for'), hops);
    if (forwarded) return forwarded;
  }
  return socketAddress(c) ?? 'unknown';
}

/**
 * The `hops`-th entry from the right of an X-Forwarded-For value (its left-most when it holds
 * fewer: all of it was then written by our proxies). Undefined when the header is absent or empty.
 */
export function forwardedAddress(header: string | undefined, hops: number): string | undefined {
  if (!header) return undefined;
  const entries = header
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  if (entries.length === 0) return undefined;
  return entries[Math.max(0, entries.length - hops)];
}

/** Where an in-process request (a hosted MCP tool's call of a route) keeps the address of the request that made it. */
const CALLER_ADDRESS = Symbol('svc.caller-address');

/** The Hono env of an in-process request made on behalf of a caller at `address` (merged into the env it passes). */
export function callerAddressEnv(address: string): Record<symbol, string> {
  return { [CALLER_ADDRESS]: address };
}

/**
 * Who wrote, for read-your-writes (db/read-pools.ts): the client's address, and for an in-process
 * request the address of the caller it was made for (a hosted MCP tool's reads and writes are its
 * caller's). Not an address for limits or loopback checks: those keep `clientIp`.
 */
export function writerAddress(c: Context, trustedHops: number | boolean): string {
  if (socketAddress(c) === undefined) {
    const env = c.env as Record<symbol, unknown> | undefined;
    const address = typeof env === 'object' && env !== null ? env[CALLER_ADDRESS] : undefined;
    if (typeof address === 'string') return address;
  }
  return clientIp(c, trustedHops);
}

/** The socket peer's address; undefined for a request that came in no socket (an in-process `app.request`). */
export function socketAddress(c: Context): string | undefined {
  try {
    return getConnInfo(c).remote.address ?? undefined;
  } catch {
    return undefined;
  }
}

export function isLoopback(address: string): boolean {
  return address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');
}

/** `clientIp` for a request still on Node's IncomingMessage (the fast paths, before the app). */
export function clientIpOfRequest(
  req: { headers: Record<string, string | string[] | undefined>; socket: { remoteAddress?: string } },
  trustedHops: number,
): string {
  if (trustedHops > 0) {
    const header = req.headers['x-forwarded-for'];
    const forwarded = forwardedAddress(Array.isArray(header) ? header.join(',') : header, trustedHops);
    if (forwarded) return forwarded;
  }
  return req.socket.remoteAddress ?? 'unknown';
}
