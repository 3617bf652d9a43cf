/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/), as MCP 2026-07-28 carries it in a
 * request's `_meta` (`traceparent`, `tracestate`) and HTTP in headers of the same names. Only a
 * well-formed value is kept: what is logged or passed on is never a stranger's free text.
 */
export interface TraceContext {
  traceparent: string;
  tracestate?: string;
}

/** version-traceid-parentid-flags, lower-case hex; the all-zero ids are invalid (the spec's words). */
const TRACEPARENT = /^[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;
/** tracestate: at most 32 list members of ~256 characters; printable ASCII only. */
const TRACESTATE = /^[\x20-\x7e]{1,512}$/;

/** The trace context in `source` (a request's `_meta`, or its headers read into an object), or undefined. */
export function traceContextOf(source: { traceparent?: unknown; tracestate?: unknown } | null | undefined): TraceContext | undefined {
  const parent = source?.traceparent;
  if (typeof parent !== 'string' || !TRACEPARENT.test(parent) || parent.startsWith('ff')) return undefined;
  const state = source?.tracestate;
  return typeof state === 'string' && TRACESTATE.test(state) ? { traceparent: parent, tracestate: state } : { traceparent: parent };
}
