import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { BrowserClient, formFields, signUp } from '../oauth/browser-client.js';

describe.each(dbKinds())('Dashboard sites and tables (%s)', (kind) => {
  let h: Harness;
  let n = 0;
  beforeAll(async () => {
    h = await startHarness(kind, { SVC_TRUST_PROXY: '1' });
  });
  afterAll(async () => h?.close());

  async function ownerWithTable() {
    const browser = new BrowserClient(h.url);
    expect((await signUp(browser, `tables${++n}-${kind}@example.com`, 'a long enough password')).status).toBe(303);
    const page = await (await browser.get('/dashboard/keys')).text();
    const made = await (
      await browser.post('/dashboard/keys', { csrf: formFields(page, '/dashboard/keys').csrf, name: 'k', scopes: ['svc.publish', 'svc.data.write'] })
    ).text();
    const key = /id="new-key-secret">(svc_pat_[\w-]+)</.exec(made)![1];
    const { site } = await (
      await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: 'x', html: '<p>t</p>', slug: `tbl-site-${kind}-${n}` } })
    ).json();
    const res = await h.fetch(`/api/v1/sites/${site.id}/tables`, {
      method: 'POST',
      key,
      json: { name: 'Guestbook', slug: 'guestbook', schema: { fields: [{ name: 'msg', label: 'Message', type: 'string' }] } },
    });
    expect(res.status).toBe(201);
    const { table } = await res.json();
    return { browser, site, table: table as { id: string; writeKey: string; pathUrl: string } };
  }

  const insert = (t: { pathUrl: string }, writeKey: string) =>
    h.fetch(new URL(t.pathUrl).pathname, { method: 'POST', json: { record: { msg: 'hi' } }, headers: { 'x-svc-write-key': writeKey } });

  it('lists tables under their site and regenerates a write key: the old one stops, the new one works', async () => {
    const { browser, site, table } = await ownerWithTable();
    expect((await insert(table, table.writeKey)).status).toBe(201);
    const page = await (await browser.get('/dashboard/sites')).text();
    expect(page).toContain('Guestbook');
    expect(page).toContain(table.id);
    const action = `/dashboard/sites/${site.id}/tables/${table.id}/write-key`;
    const res = await browser.post(action, formFields(page, action));
    expect(res.status).toBe(200);
    const html = await res.text();
    const newKey = /<code class="secret">(svc_tk_[\w-]+)</.exec(html)![1];
    expect(newKey).not.toBe(table.writeKey);
    expect([401, 403]).toContain((await insert(table, table.writeKey)).status);
    expect((await insert(table, newKey!)).status).toBe(201);
    expect(await (await browser.get('/dashboard/sites')).text()).not.toContain(newKey);
  });

  // As the Account API keeps a suspended site as it was (451), so does the dashboard: the restore
  // brings back the very key the owner's clients hold.
  it('a suspended site’s table keeps its write key: regenerating is refused with the operator’s reason', async () => {
    const { browser, site, table } = await ownerWithTable();
    await h.deps.db.execute(sql`update sites set suspended_at = now(), suspension_reason = 'spam reported by a visitor' where id = ${site.id}`);
    const page = await (await browser.get('/dashboard/sites')).text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(page)![1]!;
    const res = await browser.post(`/dashboard/sites/${site.id}/tables/${table.id}/write-key`, { csrf });
    expect(res.status).toBe(451);
    const html = await res.text();
    expect(html).toContain('spam reported by a visitor');
    expect(html).not.toMatch(/svc_tk_/);
    await h.deps.db.execute(sql`update sites set suspended_at = null, suspension_reason = null where id = ${site.id}`);
    expect((await insert(table, table.writeKey)).status).toBe(201);
  });

  it('another account cannot regenerate the key of a table it does not own', async () => {
    const { site, table } = await ownerWithTable();
    const { browser: other } = await ownerWithTable();
    const page = await (await other.get('/dashboard/sites')).text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(page)![1]!;
    const res = await other.post(`/dashboard/sites/${site.id}/tables/${table.id}/write-key`, { csrf });
    expect(res.status).toBe(404);
    expect((await insert(table, table.writeKey)).status).toBe(201);
  });
});
