import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../service/app.js';
import { createLogger } from '../../service/logger.js';
import { startHarness, type Harness } from '../helpers/harness.js';

// What a load balancer and an operator read: liveness, readiness, one access line per request.
// (The database going away, and /readyz answering 503, is test/e2e/database-outage.test.ts.)
describe('health, readiness and the access log', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => h?.close());

  it('/healthz and /readyz answer 200 while the database answers', async () => {
    expect(await (await h.fetch('/healthz')).json()).toEqual({ ok: true });
    const ready = await h.fetch('/readyz');
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ ok: true, database: 'up' });
  });

  it('every request writes one request line at info level with its status and id', async () => {
    const lines: Record<string, unknown>[] = [];
    const app = buildApp({ ...h.deps, log: createLogger('info', (l) => lines.push(JSON.parse(l))) });
    const res = await app.request('/api/v1/sites/site_nope', { headers: { 'x-request-id': 'req-42' } });
    expect(res.status).toBe(401);
    expect(lines.filter((l) => l.msg === 'request')).toEqual([
      expect.objectContaining({ level: 'info', method: 'GET', path: '/api/v1/sites/site_nope', status: 401, requestId: 'req-42', ms: expect.any(Number) }),
    ]);
  });
});
