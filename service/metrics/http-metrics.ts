import type { Registry } from 'prom-client';

const REQUESTS = 'svc_http_requests_total';
const DURATION = 'svc_http_request_duration_seconds';
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Answers of one method, route pattern and status. */
interface StatusCount {
  labels: { method: string; route: string; status: number };
  value: number;
}

/** One method and route pattern: its answers by status and its durations by bucket. */
interface Series {
  labels: { method: string; route: string };
  statuses: Map<number, StatusCount>;
  /** Observations per bucket (not cumulative); the last slot is above the largest bound. */
  buckets: number[];
  sum: number;
  count: number;
}

/**
 * `svc_http_requests_total` (by method, route pattern and status) and
 * `svc_http_request_duration_seconds` (by method and route pattern), counted in plain maps and
 * read by the registry at scrape time. prom-client's Counter and Histogram check and hash their
 * labels on every observation: ~4 % of the CPU of a cached site file's request, the hottest path
 * of a node (docs/performance.md, "Hosted sites"). The text at `GET /metrics` is the same as
 * theirs, line for line.
 */
export class HttpMetrics {
  /** By method, then route: two lookups of interned strings, no key built per request. */
  private readonly series = new Map<string, Map<string, Series>>();
  /** Every series, and every status count, in the order first seen (prom-client's order at /metrics). */
  private readonly ordered: Series[] = [];
  private readonly orderedCounts: StatusCount[] = [];

  constructor(registry: Registry) {
    registry.registerMetric(this.metric(REQUESTS, 'HTTP requests answered', 'counter', () => this.requestValues()) as never);
    registry.registerMetric(
      this.metric(DURATION, 'Time to answer an HTTP request (headers sent; a streamed body may take longer)', 'histogram', () =>
        this.durationValues(),
      ) as never,
    );
  }

  /** One answered request; `route` is the pattern that answered (bounded labels), never the raw path. */
  record(method: string, route: string, status: number, seconds: number): void {
    let byRoute = this.series.get(method);
    if (!byRoute) {
      byRoute = new Map();
      this.series.set(method, byRoute);
    }
    let s = byRoute.get(route);
    if (!s) {
      s = { labels: { method, route }, statuses: new Map(), buckets: new Array<number>(BUCKETS.length + 1).fill(0), sum: 0, count: 0 };
      byRoute.set(route, s);
      this.ordered.push(s);
    }
    let answered = s.statuses.get(status);
    if (!answered) {
      answered = { labels: { method, route, status }, value: 0 };
      s.statuses.set(status, answered);
      this.orderedCounts.push(answered);
    }
    answered.value++;
    let b = 0;
    while (b < BUCKETS.length && seconds > BUCKETS[b]!) b++;
    s.buckets[b]!++;
    s.sum += seconds;
    s.count++;
  }

  private metric(name: string, help: string, type: 'counter' | 'histogram', values: () => unknown[]) {
    return { name, help, type, aggregator: 'sum', get: async () => ({ name, help, type, aggregator: 'sum', values: values() }) };
  }

  private requestValues() {
    return this.orderedCounts.map(({ labels, value }) => ({ labels, value }));
  }

  /** prom-client's shape: cumulative `_bucket` lines with `le` first, then `_sum` and `_count`. */
  private durationValues() {
    const values: unknown[] = [];
    for (const s of this.ordered) {
      let cumulative = 0;
      BUCKETS.forEach((le, i) => {
        cumulative += s.buckets[i]!;
        values.push({ labels: { le }, sharedLabels: s.labels, value: cumulative, metricName: `${DURATION}_bucket` });
      });
      values.push({ labels: { le: '+Inf' }, sharedLabels: s.labels, value: s.count, metricName: `${DURATION}_bucket` });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${DURATION}_sum` });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${DURATION}_count` });
    }
    return values;
  }
}
