import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PrivateKeyAccount } from 'viem/accounts';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { fundedWallet, html, paidCaller, payV2 } from './helpers.js';

describe.each(dbKinds())("Agent API: a wallet's app versions, rollback and traffic (%s)", (kind) => {
  let h: Harness;
  let wallet: PrivateKeyAccount;
  let other: PrivateKeyAccount;
  beforeAll(async () => {
    h = await startHarness(kind);
    wallet = await fundedWallet(h, 1_000_000n);
    other = await fundedWallet(h, 1_000_000n);
  });
  afterAll(async () => h?.close());

  const call = paidCaller(
    () => h,
    () => payV2(wallet),
  );
  const callAsOther = paidCaller(
    () => h,
    () => payV2(other),
  );

  it('lists versions free with the wallet proof, rolls back for the catalogue price, and reads traffic free', async () => {
    const created = await call('POST', '/api/x402/apps', { name: `ver-${kind}`, html: html('First') });
    expect(created.status).toBe(201);
    const id = created.body.app.appId;
    expect((await call('POST', `/api/x402/apps/${id}/files`, { path: 'index.html', content: html('Second') })).status).toBe(200);

    const listed = await call('GET', `/api/x402/apps/${id}/versions`);
    expect(listed.status).toBe(200);
    expect(listed.body).toMatchObject({ ok: true, siteId: id, current: 2, total: 2 });
    expect(listed.body.versions[0]).toMatchObject({ version: 2, current: true, action: 'change', summary: 'changed index.html' });
    expect(listed.body.versions[1].by).toEqual({ kind: 'wallet', wallet: wallet.address.toLowerCase() });
    expect(listed.body.receipt).toMatchObject({ action: 'x402.list_app_versions', price: '0', txHash: '' });
    expect(await (await fetch(listed.body.versions[1].previewUrl)).text()).toContain('<h1>First</h1>');

    const back = await call('POST', `/api/x402/apps/${id}/rollback`, { version: 1, requestId: 'w-back' });
    expect(back.status).toBe(200);
    expect(back.body.version).toMatchObject({ version: 3, rollbackOf: 1, current: true });
    expect(back.body.receipt.price).toBe('0.002');
    expect(await (await fetch(created.body.app.pathUrl)).text()).toContain('<h1>First</h1>');

    await h.deps.traffic.flush(h.deps);
    const traffic = await call('GET', `/api/x402/apps/${id}/traffic`);
    expect(traffic.status).toBe(200);
    expect(traffic.body.days).toHaveLength(30);
    expect(traffic.body.total.requests).toBe(1);
    expect(traffic.body.total.previewRequests).toBe(1);
    expect(traffic.body.receipt.price).toBe('0');

    // Another wallet: 404 in the Agent API's words, and nothing charged.
    const foreign = await callAsOther('POST', `/api/x402/apps/${id}/rollback`, { version: 2 });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.message).toBe(`app ${id} not found for this wallet`);
    // A version not kept is refused before the payment.
    const none = await call('POST', `/api/x402/apps/${id}/rollback`, { version: 42 });
    expect(none.status).toBe(404);
    expect(none.body.receipt).toBeUndefined();
  });
});
