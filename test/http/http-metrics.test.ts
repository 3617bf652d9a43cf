import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { HttpMetrics } from '../../service/metrics/http-metrics.js';

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** What prom-client's own Counter and Histogram print for the same requests (the text HttpMetrics replaced). */
function promClientText(requests: [string, string, number, number][]): Promise<string> {
  const registry = new Registry();
  const registers = [registry];
  const counter = new Counter({ name: 'svc_http_requests_total', help: 'HTTP requests answered', labelNames: ['method', 'route', 'status'], registers });
  const histogram = new Histogram({
    name: 'svc_http_request_duration_seconds',
    help: 'Time to answer an HTTP request (headers sent; a streamed body may take longer)',
    labelNames: ['method', 'route'],
    buckets: BUCKETS,
    registers,
  });
  for (const [method, route, status, seconds] of requests) {
    counter.inc({ method, route, status });
    histogram.observe({ method, route }, seconds);
  }
  return registry.metrics();
}

describe('HTTP request metrics', () => {
  it('prints at /metrics exactly what prom-client printed for the same requests', async () => {
    const requests: [string, string, number, number][] = [
      ['GET', '/s/:slug/*', 200, 0.0004],
      ['GET', '/s/:slug/*', 200, 0.001], // on a bucket's bound: counted in it
      ['GET', '/s/:slug/*', 304, 0.0031],
      ['HEAD', '*', 200, 0.02],
      ['POST', '/api/x402/:action', 402, 0.7],
      ['POST', '/api/x402/:action', 200, 12.5], // above the largest bound: only in +Inf
      ['GET', '/api/data/:appName/:tableSlug', 200, 0.0061],
      ['GET', '/s/:slug/*', 200, 0.049],
      ['HEAD', '*', 404, 0.0002], // a new status of a series seen before, after other series
      ['GET', '/s/:slug/*', 404, 0.3],
    ];
    const registry = new Registry();
    const metrics = new HttpMetrics(registry);
    for (const [method, route, status, seconds] of requests) metrics.record(method, route, status, seconds);
    const ours = await registry.metrics();
    expect(ours).toBe(await promClientText(requests));
    expect(ours).toContain('svc_http_requests_total{method="GET",route="/s/:slug/*",status="200"} 3');
    expect(ours).toContain('svc_http_request_duration_seconds_bucket{le="0.001",method="GET",route="/s/:slug/*"} 2');
    expect(ours).toContain('svc_http_request_duration_seconds_bucket{le="10",method="POST",route="/api/x402/:action"} 1');
    expect(ours).toContain('svc_http_request_duration_seconds_bucket{le="+Inf",method="POST",route="/api/x402/:action"} 2');
  });

  it('prints the headers of both metrics before any request', async () => {
    const registry = new Registry();
    new HttpMetrics(registry);
    expect(await registry.metrics()).toBe(await promClientText([]));
  });
});
