import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdminOperation } from '../../service/admin/operations.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { BrowserClient, signIn } from '../oauth/browser-client.js';

describe.each(dbKinds())('svc account password (%s)', (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(kind, { SVC_TRUST_PROXY: '1' });
  });
  afterAll(async () => h?.close());

  it('gives a CLI-made account a dashboard password and ends its sessions when it changes', async () => {
    const { email } = await h.account(); // made like `svc account create`: no password
    expect((await signIn(new BrowserClient(h.url), email, 'first password 1')).status).toBe(401);

    const result = (await runAdminOperation(h.deps, 'account.password', { email, password: 'first password 1' })) as Record<string, unknown>;
    expect(result).toMatchObject({ account: { email }, sessionsEnded: 0 });
    expect(JSON.stringify(result)).not.toContain('scrypt');
    const browser = new BrowserClient(h.url);
    expect((await signIn(browser, email, 'first password 1')).status).toBe(303);
    expect((await browser.get('/dashboard')).status).toBe(200);

    await expect(runAdminOperation(h.deps, 'account.password', { email, password: 'short' })).rejects.toThrow(/at least 10/);
    expect(await runAdminOperation(h.deps, 'account.password', { email, password: 'second password 2' })).toMatchObject({ sessionsEnded: 1 });
    expect((await browser.get('/dashboard')).status).toBe(303);
    expect((await signIn(new BrowserClient(h.url), email, 'first password 1')).status).toBe(401);
    expect((await signIn(new BrowserClient(h.url), email, 'second password 2')).status).toBe(303);
  });
});
