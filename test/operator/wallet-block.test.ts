import { wrapFetchWithSIWx } from '@x402/extensions/sign-in-with-x';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_RECIPIENT } from '../../service/payments/x402-config.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { devChain, fundedWallet, html, jsonInit, signAuthorization, xPaymentHeader } from '../payments/helpers.js';
import { ADMIN_TOKEN, callAdmin } from './admin.js';

const PRICE = 7000n; // create_app_from_html, atomic

describe.each(dbKinds())('Takedowns: a blocked wallet on the dev chain (%s)', (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(kind, {}, { adminToken: ADMIN_TOKEN });
  });
  afterAll(async () => h?.close());

  const admin = (operation: string, input: unknown) => callAdmin(h, operation, input);

  async function balances(addr: string) {
    const chain = devChain(h);
    return { payer: await chain.balanceOf(addr), recipient: await chain.balanceOf(DEV_RECIPIENT) };
  }

  it('refuses its paid calls before any payment is verified or settled (nothing charged), suspends its apps; unblock restores both', async () => {
    const payer = await fundedWallet(h, 1_000_000n);
    const create = async (name: string, header: Record<string, string>) =>
      fetch(`${h.url}/api/x402/apps`, jsonInit('POST', { name, html: html(name) }, header));
    const first = await create(`blocked-app-${kind}`, xPaymentHeader(await signAuthorization(payer, { to: DEV_RECIPIENT, value: PRICE })));
    expect(first.status).toBe(201);
    const app = (await first.json()).app;
    expect((await fetch(`${h.url}/s/${app.appName}/`)).status).toBe(200);

    // Mixed case in, lower case stored and matched.
    const blocked = await admin('wallet.block', { address: payer.address, reason: 'drained a faucet with stolen keys', actor: 'dave' });
    expect(blocked.status).toBe(200);
    expect(blocked.body.result).toMatchObject({ wallet: { address: payer.address.toLowerCase() }, appsSuspended: 1 });
    expect((await fetch(`${h.url}/s/${app.appName}/`)).status).toBe(451);

    const before = await balances(payer.address);
    const signed = await signAuthorization(payer, { to: DEV_RECIPIENT, value: PRICE });
    const refused = await create(`blocked-second-${kind}`, xPaymentHeader(signed));
    expect(refused.status).toBe(403);
    const body = await refused.json();
    expect(body.error.code).toBe('wallet_blocked');
    expect(body.error.message).toContain('drained a faucet with stolen keys');
    expect(body.error.message).toContain('Nothing was charged');
    // Free identity calls (list_apps) too, and a change to its suspended app.
    const list = await fetch(`${h.url}/api/x402/apps`, { headers: xPaymentHeader(await signAuthorization(payer, { to: DEV_RECIPIENT, value: 0n })) });
    expect(list.status).toBe(403);
    // Signing in with Sign-In-With-X instead of a zero-value payment changes nothing.
    const signedIn = await wrapFetchWithSIWx(fetch, payer)(`${h.url}/api/x402/apps`);
    expect(signedIn.status).toBe(403);
    expect(((await signedIn.json()) as { error: { code: string } }).error.code).toBe('wallet_blocked');
    expect(await balances(payer.address)).toEqual(before);
    const [row] = await h.deps.db.query.x402Payments.findMany({ where: (p, { eq }) => eq(p.nonce, signed.authorization.nonce.toLowerCase()) });
    expect(row).toBeUndefined();
    // Another wallet is served as before.
    const other = await fundedWallet(h, 1_000_000n);
    expect((await create(`unblocked-${kind}`, xPaymentHeader(await signAuthorization(other, { to: DEV_RECIPIENT, value: PRICE })))).status).toBe(201);

    expect((await admin('wallet.unblock', { address: payer.address, reason: 'keys recovered by the owner' })).status).toBe(200);
    expect((await fetch(`${h.url}/s/${app.appName}/`)).status).toBe(200);
    // The very authorization refused above was never used on chain: it pays now, once.
    const paid = await create(`blocked-second-${kind}`, xPaymentHeader(signed));
    expect(paid.status).toBe(201);
    expect((await balances(payer.address)).payer).toBe(before.payer - PRICE);

    const audit = (await admin('audit.list', { target: payer.address.toLowerCase() })).body.result.entries;
    expect(audit).toMatchObject([
      { action: 'wallet.unblock', reason: 'keys recovered by the owner', targetKind: 'wallet' },
      { action: 'wallet.block', actor: 'dave', reason: 'drained a faucet with stolen keys', details: { appsSuspended: 1 } },
    ]);
  });
});
