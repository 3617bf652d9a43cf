import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../service/app.js';
import { createLogger } from '../../service/kernel/logger.js';
import { createMetrics } from '../../service/metrics/metrics.js';
import { startHarness, type Harness } from '../helpers/harness.js';

// What a load balancer and an operator read: liveness, readiness, one access line per request.
// (The database going away, and /readyz answering 503, is test/e2e/database-outage.test.ts.)
describe('health, readiness and the access log', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => h?.close());

  it('/healthz and /readyz answer 200 while the database and the blob store answer; the chain is reported', async () => {
    expect(await (await h.fetch('/healthz')).json()).toEqual({ ok: true });
    const ready = await h.fetch('/readyz');
    expect(ready.status).toBe(200);
    // The harness never starts its dev chain: reported down, and the node is still ready.
    expect(await ready.json()).toEqual({ ok: true, database: 'up', blobs: 'up', chain: 'down' });
  });

  it('/readyz answers 503 with Retry-After while the node is stopping, and when the blob store is gone', async () => {
    let stopping = false;
    const app = buildApp(h.deps, { isStopping: () => stopping });
    expect((await app.request('/readyz')).status).toBe(200);
    stopping = true;
    const res = await app.request('/readyz');
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(await res.json()).toMatchObject({ ok: false, database: 'up', stopping: true });
    const brokenBlobs: typeof h.deps.blobs = Object.assign(Object.create(h.deps.blobs), { ping: () => Promise.reject(new Error('EACCES')) });
    const res2 = await buildApp({ ...h.deps, blobs: brokenBlobs }).request('/readyz');
    expect(res2.status).toBe(503);
    expect(await res2.json()).toMatchObject({ ok: false, database: 'up', blobs: 'down' });
  });

  it('every request writes one request line at info level with its status and id', async () => {
    const lines: Record<string, unknown>[] = [];
    const app = buildApp({ ...h.deps, metrics: createMetrics(), log: createLogger('info', (l) => lines.push(JSON.parse(l))) });
    const res = await app.request('/api/v1/sites/site_nope', { headers: { 'x-request-id': 'req-42' } });
    expect(res.status).toBe(401);
    expect(lines.filter((l) => l.msg === 'request')).toEqual([
      expect.objectContaining({
        level: 'info',
        method: 'GET',
        path: '/api/v1/sites/site_nope',
        route: '/api/v1/sites/:siteId',
        status: 401,
        requestId: 'req-42',
        ms: expect.any(Number),
      }),
    ]);
  });

  it('GET /metrics (loopback) counts requests by route pattern and status, and Agent API payment outcomes', async () => {
    await h.fetch('/api/v1/sites/site_a');
    await h.fetch('/api/v1/sites/site_b');
    await h.fetch('/api/x402/apps', { method: 'POST', json: { name: 'metrics-app', html: '<p>x</p>' } });
    const res = await h.fetch('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    // Two different ids, one series: labels are route patterns, never raw paths.
    expect(text).toContain('svc_http_requests_total{method="GET",route="/api/v1/sites/:siteId",status="401"} 2');
    expect(text).not.toContain('site_a');
    expect(text).toMatch(/svc_http_request_duration_seconds_count\{method="GET",route="\/api\/v1\/sites\/:siteId"\} 2/);
    expect(text).toContain('svc_x402_payments_total{outcome="required"} 1');
    expect(text).toMatch(/svc_process_resident_memory_bytes \d+/);
  });
});

describe('GET /metrics with SVC_METRICS_TOKEN', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('pglite', { SVC_METRICS_TOKEN: 'scrape-secret' });
  });
  afterAll(async () => h?.close());

  it('answers the bearer of the token, and no one else (not even loopback)', async () => {
    expect((await h.fetch('/metrics')).status).toBe(401);
    expect((await h.fetch('/metrics', { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    const ok = await h.fetch('/metrics', { headers: { authorization: 'Bearer scrape-secret' } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('# TYPE svc_http_requests_total counter');
  });

  it('without a token, a caller that is not loopback is refused with what to do', async () => {
    const app = buildApp({ ...h.deps, config: { ...h.deps.config, metricsToken: undefined } });
    // app.request has no socket: the peer is "unknown", not loopback.
    const res = await app.request('/metrics');
    expect(res.status).toBe(403);
    expect((await res.json()).error.message).toContain('set SVC_METRICS_TOKEN');
  });
});
