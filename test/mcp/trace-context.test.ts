import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mountHostedMcp } from '../../cli/hosted-mcp.js';
import { buildApp } from '../../service/app.js';
import { createLogger } from '../../service/kernel/logger.js';
import { createMetrics } from '../../service/metrics/metrics.js';
import { startHarness, type Harness } from '../helpers/harness.js';

// OpenTelemetry trace context on the hosted /mcp: a call's `_meta.traceparent` (2026-07-28) or the
// POST's `traceparent` header reaches the service's request log, on the MCP POST's line (the header)
// and on the line of every service request the tool makes (both).
let h: Harness;
let key: string;
let app: ReturnType<typeof buildApp>;
const lines: Record<string, unknown>[] = [];

beforeAll(async () => {
  h = await startHarness('pglite');
  key = (await h.account()).key;
  const deps = { ...h.deps, metrics: createMetrics(), log: createLogger('info', (l) => lines.push(JSON.parse(l))) };
  app = buildApp(deps);
  await mountHostedMcp(app, deps, null);
}, 120_000);
afterAll(async () => {
  await h?.close();
});

const T1 = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const T2 = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

/** A tools/call of account_list_apps on /mcp: 2026-07-28 (envelope, standard headers) or 2025 (none). */
async function listApps(era: '2026' | '2025', meta: Record<string, unknown>, headers: Record<string, string> = {}) {
  lines.length = 0;
  const modern = era === '2026';
  const res = await app.request('/mcp', {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${key}`,
      ...(modern ? { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'account_list_apps' } : {}),
      ...headers,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: {
        name: 'account_list_apps',
        arguments: {},
        _meta: { ...(modern ? { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } : {}), ...meta },
      },
    }),
  });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { result?: { isError?: boolean } };
  expect(body.result?.isError).toBeFalsy();
  const logged = lines.filter((l) => l.msg === 'request');
  return { mcp: logged.find((l) => l.path === '/mcp'), service: logged.filter((l) => String(l.path).startsWith('/api/v1/sites')) };
}

describe('trace context into the request log', () => {
  it("a 2026-07-28 call's _meta traceparent and tracestate go with the service requests its tool makes", async () => {
    const { mcp, service } = await listApps('2026', { traceparent: T1, tracestate: 'svc=1' });
    expect(service.length).toBeGreaterThan(0);
    for (const line of service) expect(line).toMatchObject({ traceparent: T1, tracestate: 'svc=1' });
    // The POST itself carried no header: its line has no trace (the body is the tool's, not the log's).
    expect(mcp).toBeDefined();
    expect(mcp!.traceparent).toBeUndefined();
  });

  it("the MCP POST's traceparent header is on its own line and on its tool's requests, on both eras; _meta wins over it", async () => {
    for (const era of ['2025', '2026'] as const) {
      const { mcp, service } = await listApps(era, {}, { traceparent: T2 });
      expect(mcp, era).toMatchObject({ traceparent: T2 });
      expect(service.length, era).toBeGreaterThan(0);
      for (const line of service) expect(line, era).toMatchObject({ traceparent: T2 });
    }
    const both = await listApps('2026', { traceparent: T1 }, { traceparent: T2 });
    for (const line of both.service) expect(line.traceparent).toBe(T1);
  });

  it('a malformed trace context is neither logged nor passed on', async () => {
    for (const bad of ['00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331', '00-00000000000000000000000000000000-b7ad6b7169203331-01', 'x'.repeat(55)]) {
      const { mcp, service } = await listApps('2026', { traceparent: bad }, { traceparent: bad });
      expect(mcp!.traceparent, bad).toBeUndefined();
      for (const line of service) expect(line.traceparent, bad).toBeUndefined();
    }
  });
});
