import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sites } from '../../service/db/schema/index.js';
import { writeSiteFile } from '../../service/sites/sites.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { devChain, fundedWallet, html, jsonInit, payV2 } from '../payments/helpers.js';

// Every limit holds when the requests that would pass it arrive at once: N× the limit fired together
// makes exactly the limit (sites and tables per site: site-files-and-quotas.test.ts; across nodes:
// nodes.test.ts). Each is counted and written under one lock in PostgreSQL, never in the process.
describe.each(dbKinds())('limits under concurrency (%s)', (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(kind, {
      SVC_MAX_FILES_PER_SITE: '5',
      SVC_MAX_STORAGE_BYTES: '40000',
      SVC_MAX_FUNCTIONS_PER_ACCOUNT: '3',
      SVC_MAX_FUNCTION_INVOCATIONS_PER_MONTH: '4',
      SVC_FUNCTION_INVOKES_PER_MINUTE: '1000',
    });
  });
  afterAll(async () => h?.close());

  async function siteOf(key: string, html = '<p>x</p>') {
    const res = await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: `s-${Math.random()}`, html } });
    const { site } = await res.json();
    const [row] = await h.deps.db.select().from(sites).where(eq(sites.id, site.id));
    return row!;
  }
  const quotaRefusals = (results: PromiseSettledResult<unknown>[]) =>
    results.filter((r) => r.status === 'rejected' && (r.reason as { code?: string }).code === 'quota_exceeded').length;

  it('ten new files written at once to a site limited to five files (one there already) make four', async () => {
    const { key } = await h.account();
    const site = await siteOf(key);
    const results = await Promise.allSettled(
      [...Array(10).keys()].map((i) => writeSiteFile(h.deps, site, { path: `f${i}.txt`, bytes: Buffer.from(`file ${i}`), contentType: 'text/plain' })),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(4);
    expect(quotaRefusals(results)).toBe(6);
    const content = await (await h.fetch(`/api/v1/sites/${site.id}/content`, { key })).json();
    expect(content.files).toHaveLength(5);
  });

  it('eight 9,000-byte files written at once for an account limited to 40,000 bytes stop at the limit', async () => {
    const { key } = await h.account();
    const site = await siteOf(key);
    const results = await Promise.allSettled(
      [...Array(8).keys()].map((i) => writeSiteFile(h.deps, site, { path: `big${i}.txt`, bytes: Buffer.alloc(9000, 97 + i), contentType: 'text/plain' })),
    );
    // One small index.html is there already: four 9,000-byte files fit, a fifth would pass 40,000.
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(4);
    expect(quotaRefusals(results)).toBe(4);
    const usage = await (await h.fetch('/api/v1/usage', { key })).json();
    expect(usage.usage.storageBytes.used).toBeLessThanOrEqual(40_000);
    expect(usage.usage.storageBytes.used).toBeGreaterThanOrEqual(36_000);
  });

  it('an Agent API upload is counted as a whole: five new files on an app of one (limit five) are refused, unpaid; four are not', async () => {
    const wallet = await fundedWallet(h);
    const pay = payV2(wallet);
    const created = await pay(`${h.url}/api/x402/apps`, jsonInit('POST', { name: `whole-${kind}`, html: html('one') }));
    expect(created.status).toBe(201);
    const files = (n: number) => [...Array(n).keys()].map((i) => ({ path: `img${i}.png`, size: 100, type: 'image/png' }));
    const ask = (n: number) => pay(`${h.url}/api/x402/apps/whole-${kind}/upload-urls`, jsonInit('POST', { files: files(n) }));
    const before = await devChain(h).balanceOf(wallet.address);
    const five = await ask(5);
    expect(five.status).toBe(429);
    expect((await five.json()).error.message).toMatch(/the site has 1 files, 5 more would pass the limit of 5 files per site/);
    expect(await devChain(h).balanceOf(wallet.address)).toBe(before);
    const four = await ask(4);
    expect(four.status).toBe(200);
    expect((await four.json()).files).toHaveLength(4);
  });

  it('six function creates at once for an account limited to three functions make three', async () => {
    const { key } = await h.account();
    const results = await Promise.all(
      [...Array(6).keys()].map((i) =>
        h.fetch('/api/v1/functions', { method: 'POST', key, json: { name: `f${i}`, slug: `f${i}-${kind}`, code: 'export default () => "hi"' } }),
      ),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 201, 201, 429, 429, 429]);
    const list = await (await h.fetch('/api/v1/functions', { key })).json();
    expect(list.total).toBe(3);
  });

  it('eight invocations at once for an account limited to four a month run four; usage says four', async () => {
    const { key } = await h.account();
    const created = await h.fetch('/api/v1/functions', { method: 'POST', key, json: { name: 'inv', slug: `inv-${kind}`, code: 'export default () => "hi"' } });
    const { function: fn } = await created.json();
    expect((await h.fetch(`/api/v1/functions/${fn.id}/publish`, { method: 'POST', key })).status).toBe(200);
    const results = await Promise.all(
      [...Array(8).keys()].map(() => h.fetch(`/api/v1/functions/invoke/${fn.slug}`, { method: 'POST', key, json: { method: 'GET', path: '/' } })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 429, 429, 429, 429]);
    const usage = await (await h.fetch('/api/v1/usage', { key })).json();
    expect(usage.usage.functionInvocations).toMatchObject({ used: 4, limit: 4 });
  });
});
