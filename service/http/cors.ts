import type { MiddlewareHandler } from 'hono';
import { cors } from 'hono/cors';

export interface PublicCorsOptions {
  allowMethods: string[];
  allowHeaders?: string[];
  exposeHeaders?: string[];
  maxAge?: number;
}

/**
 * CORS for routes open to every origin. Preflights (OPTIONS) are answered by hono's `cors`; every
 * other response gets its headers after the handler ran. (hono's `cors` touches the response before
 * the handler, which makes @hono/node-server turn each answer into a full fetch Response: about a
 * tenth of a Table API read's CPU.)
 */
export function publicCors(options: PublicCorsOptions): MiddlewareHandler {
  const preflight = cors({ origin: '*', ...options });
  const expose = options.exposeHeaders?.join(',');
  return async (c, next) => {
    if (c.req.method === 'OPTIONS') return preflight(c, next);
    await next();
    c.res.headers.set('Access-Control-Allow-Origin', '*');
    if (expose) c.res.headers.set('Access-Control-Expose-Headers', expose);
  };
}
