import type { MiddlewareHandler } from 'hono';
import { cors } from 'hono/cors';

export interface PublicCorsOptions {
  allowMethods: string[];
  allowHeaders?: string[];
  exposeHeaders?: string[];
  maxAge?: number;
}

/** The headers `publicCors` adds to every answer but a preflight's. */
export function publicCorsHeaders(options: PublicCorsOptions): Record<string, string> {
  const headers: Record<string, string> = { 'access-control-allow-origin': '*' };
  if (options.exposeHeaders?.length) headers['access-control-expose-headers'] = options.exposeHeaders.join(',');
  return headers;
}

/**
 * CORS for routes open to every origin. Preflights (OPTIONS) are answered by hono's `cors`; every
 * other response gets its headers after the handler ran. (hono's `cors` touches the response before
 * the handler, which makes @hono/node-server turn each answer into a full fetch Response: about a
 * tenth of a Table API read's CPU.)
 */
export function publicCors(options: PublicCorsOptions): MiddlewareHandler {
  const preflight = cors({ origin: '*', ...options });
  const headers = Object.entries(publicCorsHeaders(options));
  return async (c, next) => {
    if (c.req.method === 'OPTIONS') return preflight(c, next);
    await next();
    for (const [name, value] of headers) c.res.headers.set(name, value);
  };
}
