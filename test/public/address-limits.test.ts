import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mountHostedMcp } from '../../cli/hosted-mcp.js';
import { AddressLimiter } from '../../service/http/address-limits.js';
import { parseAddressLimits } from '../../service/http/address-surfaces.js';
import { forwardedAddress } from '../../service/http/client-ip.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';

// A clock that stands still: every request falls in the same one-minute window (45 s before its end).
const AT = new Date('2026-11-28T12:00:15Z');
const LIMIT = 4;

describe('the client address behind trusted proxies', () => {
  it('is the entry the outermost trusted proxy appended, never one the client wrote', () => {
    // nginx proxy_add_x_forwarded_for appends: whatever the client sent stays on the left.
    expect(forwardedAddress('6.6.6.6, 203.0.113.9', 1)).toBe('203.0.113.9');
    expect(forwardedAddress('6.6.6.6,203.0.113.9 , 10.0.0.2', 2)).toBe('203.0.113.9');
    expect(forwardedAddress('203.0.113.9', 3)).toBe('203.0.113.9');
    expect(forwardedAddress(' , ', 1)).toBeUndefined();
    expect(forwardedAddress(undefined, 1)).toBeUndefined();
  });

  it('SVC_ADDRESS_LIMITS changes the surfaces it names and refuses anything else', () => {
    expect(parseAddressLimits('table-read=5000, signup=0')).toMatchObject({ 'table-read': 5000, signup: 0, 'table-write': 120 });
    expect(() => parseAddressLimits('tables=5')).toThrow(/SVC_ADDRESS_LIMITS: "tables=5"/);
    expect(() => parseAddressLimits('agent=-1')).toThrow(/surfaces: agent, mcp-x402/);
  });
});

describe.each(dbKinds())('per-address limits of the anonymous surfaces (%s)', (kind) => {
  let h: Harness;
  let table: string;
  beforeAll(async () => {
    h = await startHarness(
      kind,
      {
        SVC_TRUST_PROXY: '1',
        SVC_ADDRESS_LIMITS: `agent=${LIMIT},table-read=${LIMIT},table-write=${LIMIT},mcp-x402=${LIMIT},invoke=${LIMIT}`,
        SVC_ADDRESS_LIMIT_SYNC_MS: '0',
      },
      { clock: { now: () => AT }, mount: (app, deps) => mountHostedMcp(app, deps, null) },
    );
    const { key } = await h.account();
    const site = await (
      await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: 'limits', html: '<h1>x</h1>', slug: `limits-${kind}` } })
    ).json();
    const made = await h.fetch(`/api/v1/sites/${site.site.id}/tables`, {
      method: 'POST',
      key,
      json: { name: 'Notes', slug: 'notes', publicInsert: true, schema: { fields: [{ name: 'text', label: 'Text', type: 'string' }] } },
    });
    expect(made.status).toBe(201);
    table = `/api/data/limits-${kind}/notes`;
  }, 120_000);
  afterAll(async () => h?.close());

  /** A request from `address` as the trusted proxy saw it; the client wrote the left part itself. */
  const from = (address: string, path: string, init: RequestInit = {}) =>
    h.fetch(path, {
      ...init,
      headers: { ...(init.headers as Record<string, string>), 'x-forwarded-for': `1.2.3.${Math.floor(Math.random() * 250)}, ${address}` },
    });

  it('the Agent API: one address gets 429 with Retry-After while another is still served', async () => {
    for (let i = 0; i < LIMIT; i++) expect((await from('198.51.100.1', '/api/x402/pricing')).status).toBe(200);
    const refused = await from('198.51.100.1', '/api/x402/pricing');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('45');
    const body = await refused.json();
    expect(body.error.code).toBe('rate_limited');
    expect(body.error.message).toContain(`limit of ${LIMIT} agent requests per minute`);
    // Changing the part the client writes does not make it someone else.
    expect((await h.fetch('/api/x402/pricing', { headers: { 'x-forwarded-for': '9.9.9.9, 198.51.100.1' } })).status).toBe(429);
    expect((await from('198.51.100.2', '/api/x402/pricing')).status).toBe(200);
  });

  it('public Table API reads (the fast path too) and writes are limited apart', async () => {
    const statuses: number[] = [];
    for (let i = 0; i <= LIMIT; i++) statuses.push((await from('198.51.100.3', table)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 429]);
    const refused = await from('198.51.100.3', `${table}?limit=1`);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('45');
    expect((await from('198.51.100.4', table)).status).toBe(200);
    // Writes have their own count: the reader above may still write.
    const write = () =>
      from('198.51.100.3', table, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ record: { text: 'hi' } }) });
    for (let i = 0; i < LIMIT; i++) expect((await write()).status).toBe(201);
    expect((await write()).status).toBe(429);
  });

  it('/mcp/x402: the POSTs of one address are limited; its in-process Agent API calls are not counted again', async () => {
    const post = (address: string, id: number) =>
      from(address, '/mcp/x402', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'list_pricing', arguments: {} } }),
      });
    for (let i = 0; i < LIMIT; i++) {
      const res = await post('198.51.100.5', i);
      expect(res.status).toBe(200);
      expect(await res.text()).not.toContain('rate_limited');
    }
    const refused = await post('198.51.100.5', 99);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('45');
    expect((await post('198.51.100.6', 100)).status).toBe(200);
  });

  it('two nodes share one count: after a sync neither serves an address past the limit', async () => {
    const limits = parseAddressLimits('agent=10');
    const clock = { now: () => AT };
    const a = new AddressLimiter(h.deps.db, clock, limits);
    const b = new AddressLimiter(h.deps.db, clock, limits);
    for (let i = 0; i < 6; i++) expect(a.take('agent', '203.0.113.77')).toBeNull();
    await a.sync();
    // Node b's first request starts its sync, which brings a's six: 3 more, and then no.
    expect(b.take('agent', '203.0.113.77')).toBeNull();
    await b.sync();
    let more = 0;
    while (b.take('agent', '203.0.113.77') === null) more++;
    expect(more).toBe(3);
    expect(b.take('agent', '203.0.113.77')).toBe(45);
    await b.sync();
    // Node a last heard 6: it serves one more (the slack of one sync), and its sync brings the total.
    expect(a.take('agent', '203.0.113.77')).toBeNull();
    await a.sync();
    expect(a.take('agent', '203.0.113.77')).toBe(45);
  });
});
