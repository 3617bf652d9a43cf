import { AsyncLocalStorage } from 'node:async_hooks';
import { type TraceContext, traceContextOf } from '../shared/trace-context.js';

/**
 * The trace a tool call belongs to, for the service requests it makes: the call's `_meta`
 * (`traceparent`, `tracestate`: MCP 2026-07-28, and the OpenTelemetry MCP conventions before it), else
 * the MCP POST's own headers. Kept in an AsyncLocalStorage for the time of the call, so that every
 * request to the service (ctx.fetch, the wallet's paid requests) carries it without each tool passing
 * it on; the service's request log then writes it beside each line (service/http/request-log.ts).
 */
const current = new AsyncLocalStorage<TraceContext>();

/** Runs `work` in the trace of `source` (a `_meta`, or headers read into an object); as it is when there is none. */
export function inTraceOf<T>(source: { traceparent?: unknown; tracestate?: unknown } | null | undefined, work: () => T): T {
  const trace = traceContextOf(source);
  return trace ? current.run(trace, work) : work();
}

/** `fetch` that adds the current call's trace headers to a request that carries none of its own. */
export function tracedFetch(inner: typeof fetch): typeof fetch {
  return ((input: string | URL | Request, init: RequestInit = {}) => {
    const trace = current.getStore();
    if (!trace) return inner(input, init);
    const headers = new Headers(init.headers);
    if (headers.has('traceparent')) return inner(input, init);
    headers.set('traceparent', trace.traceparent);
    if (trace.tracestate) headers.set('tracestate', trace.tracestate);
    return inner(input, { ...init, headers });
  }) as typeof fetch;
}
