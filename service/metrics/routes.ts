import { createHash, timingSafeEqual } from 'node:crypto';
import { Hono } from 'hono';
import { AppError } from '../kernel/app-error.js';
import { clientIp, isLoopback } from '../http/client-ip.js';
import type { Config } from '../kernel/config.js';
import type { AppEnv } from '../kernel/request-env.js';
import type { Metrics } from './metrics.js';

function sameSecret(given: string, expected: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/**
 * `GET /metrics` (Prometheus text format). With `SVC_METRICS_TOKEN` set, a scraper sends
 * `Authorization: Bearer <token>` from anywhere; without it, only loopback peers (the socket's own
 * address, never X-Forwarded-For) are answered: the figures say how busy the service is and which
 * routes fail, which is the operator's business.
 */
export function metricsRoutes(deps: { config: Config; metrics: Metrics }): Hono<AppEnv> {
  const r = new Hono<AppEnv>();
  r.get('/metrics', async (c) => {
    const token = deps.config.metricsToken;
    if (token) {
      const given = /^Bearer (.+)$/i.exec(c.req.header('authorization') ?? '')?.[1];
      if (!given || !sameSecret(given, token))
        throw new AppError('unauthorized', 'GET /metrics needs Authorization: Bearer <SVC_METRICS_TOKEN>', undefined, {
          'WWW-Authenticate': 'Bearer realm="svc-metrics"',
        });
    } else if (!isLoopback(clientIp(c, false))) {
      throw new AppError('forbidden', 'GET /metrics answers loopback callers only; set SVC_METRICS_TOKEN to scrape it from another host');
    }
    const body = await deps.metrics.registry.metrics();
    return c.body(body, 200, { 'content-type': deps.metrics.registry.contentType });
  });
  return r;
}
