import { randomUUID } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { routePath } from 'hono/route';
import { type TraceContext, traceContextOf } from '../../shared/trace-context.js';
import type { Logger } from '../kernel/logger.js';
import type { AppEnv } from '../kernel/request-env.js';

/** What the request log uses: the logger and this node's HTTP counters (service/metrics). */
interface RequestLogDeps {
  log: Logger;
  metrics: { http: { record(method: string, route: string, status: number, seconds: number): void } };
}

/** The caller's `x-request-id` when well-formed (one value, as Node's headers may hold several), else a new one. */
export function requestIdOf(incoming: string | string[] | undefined): string {
  return typeof incoming === 'string' && /^[\w.-]{1,100}$/.test(incoming) ? incoming : randomUUID();
}

export interface AnsweredRequest {
  method: string;
  path: string;
  /** The route pattern that answered (bounded metric labels). */
  route: string;
  status: number;
  ms: number;
  requestId: string;
  /** The caller's W3C trace context (`traceparent` header), when well-formed: the line joins its trace. */
  trace?: TraceContext;
}

/** Metrics by route pattern and one access log line (SVC_LOG_LEVEL=warn turns the line off). */
export function recordRequest(deps: RequestLogDeps, r: AnsweredRequest): void {
  deps.metrics.http.record(r.method, r.route, r.status, r.ms / 1000);
  const trace = r.trace ? { traceparent: r.trace.traceparent, ...(r.trace.tracestate ? { tracestate: r.trace.tracestate } : {}) } : {};
  deps.log.info('request', {
    method: r.method,
    path: r.path,
    route: r.route,
    status: r.status,
    ms: Math.round(r.ms * 10) / 10,
    requestId: r.requestId,
    ...trace,
  });
}

/** Request id (kept from `x-request-id` when well-formed), metrics by route pattern, one access log line. */
export function requestLog(deps: RequestLogDeps): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const requestId = requestIdOf(c.req.header('x-request-id'));
    c.set('requestId', requestId);
    const started = performance.now();
    await next();
    c.res.headers.set('x-request-id', requestId);
    // The pattern of the handler that answered; a middleware that answered (sites on their own host,
    // CORS preflights) or no route at all gives its own pattern, e.g. `*`.
    const trace = traceContextOf({ traceparent: c.req.header('traceparent'), tracestate: c.req.header('tracestate') });
    recordRequest(deps, {
      method: c.req.method,
      path: c.req.path,
      route: routePath(c),
      status: c.res.status,
      ms: performance.now() - started,
      requestId,
      trace,
    });
  };
}
