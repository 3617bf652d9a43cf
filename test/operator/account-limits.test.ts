import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { ADMIN_TOKEN, callAdmin } from './admin.js';

describe.each(dbKinds())('Per-account limits (%s)', (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(kind, { SVC_MAX_SITES_PER_ACCOUNT: '3', SVC_MAX_TABLES_PER_SITE: '5' }, { adminToken: ADMIN_TOKEN });
  });
  afterAll(async () => h?.close());

  const admin = (operation: string, input: unknown) => callAdmin(h, operation, input);
  const publish = (key: string) => h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: crypto.randomUUID(), html: '<p>x</p>' } });
  const usage = async (key: string) => (await (await h.fetch('/api/v1/usage', { key })).json()).usage;

  it('an operator raises or lowers one account’s quotas; usage shows them; the default comes back on request', async () => {
    const { key, email } = await h.account();
    const other = await h.account();
    const shown = await admin('account.limits', { email });
    expect(shown.status).toBe(200);
    expect(shown.body.result).toMatchObject({ limits: { sites: 3, tablesPerSite: 5 }, overrides: { sites: null, storageBytes: null }, changed: false });

    const lowered = await admin('account.limits', { email, set: { sites: 1, storageBytes: 2000 * 1024 * 1024 }, reason: 'trial account', actor: 'erin' });
    expect(lowered.status).toBe(200);
    expect(lowered.body.result).toMatchObject({ changed: true, limits: { sites: 1, storageBytes: 2000 * 1024 * 1024 }, overrides: { sites: 1 } });
    expect(await usage(key)).toMatchObject({ sites: { used: 0, limit: 1 }, storageBytes: { limit: 2000 * 1024 * 1024 } });
    expect((await usage(other.key)).sites.limit).toBe(3);

    expect((await publish(key)).status).toBe(201);
    const refused = await publish(key);
    expect(refused.status).toBe(429);
    expect((await refused.json()).error.message).toMatch(/site limit reached \(1 sites\)/);
    expect((await publish(other.key)).status).toBe(201);
    expect((await publish(other.key)).status).toBe(201);

    // Raised past the default for this account alone.
    expect((await admin('account.limits', { email, set: { sites: 500 } })).body.result.limits.sites).toBe(500);
    expect((await publish(key)).status).toBe(201);
    expect((await usage(key)).sites).toMatchObject({ used: 2, limit: 500 });

    const reset = await admin('account.limits', { email, set: { sites: null } });
    expect(reset.body.result).toMatchObject({ limits: { sites: 3 }, overrides: { sites: null, storageBytes: 2000 * 1024 * 1024 } });

    const audit = (await admin('audit.list', { target: email })).body.result.entries;
    expect(audit.map((e: { action: string }) => e.action)).toEqual(['account.limits', 'account.limits', 'account.limits']);
    expect(audit[2]).toMatchObject({ actor: 'erin', reason: 'trial account', details: { before: { sites: 3 }, after: { sites: 1 } } });
  });

  it('the tables-per-site quota of one account is its own', async () => {
    const { key, email } = await h.account();
    const site = (await (await publish(key)).json()).site;
    await admin('account.limits', { email, set: { tablesPerSite: 1 } });
    const make = (name: string) =>
      h.fetch(`/api/v1/sites/${site.id}/tables`, { method: 'POST', key, json: { name, schema: { fields: [{ name: 'a', label: 'A', type: 'string' }] } } });
    expect((await make('One')).status).toBe(201);
    const second = await make('Two');
    expect(second.status).toBe(429);
    expect((await second.json()).error.message).toMatch(/1 tables per site/);
  });

  it('bad input is a 400 or 404 naming the problem, and changes nothing', async () => {
    const { email } = await h.account();
    const cases: [unknown, number, RegExp][] = [
      [{ email, set: { sites: -1 } }, 400, /set\.sites/],
      [{ email, set: { sites: 1.5 } }, 400, /set\.sites/],
      [{ email, set: { planets: 3 } }, 400, /planets/],
      [{ email: 'nobody-here@example.com', set: { sites: 3 } }, 404, /no account/],
    ];
    for (const [input, status, message] of cases) {
      const res = await admin('account.limits', input);
      expect(res.status).toBe(status);
      expect(res.body.error.message).toMatch(message);
    }
    expect((await admin('account.limits', { email })).body.result.overrides.sites).toBeNull();
    expect((await admin('audit.list', { target: email })).body.result.entries).toEqual([]);
  });
});
