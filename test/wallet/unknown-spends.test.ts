import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { devChain } from '../payments/helpers.js';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { loadWalletConfig } from '../../wallet/config.js';
import { WalletError } from '../../wallet/errors.js';
import { createWallet, type Wallet } from '../../wallet/wallet.js';

// A signed payment whose answer never came is booked `unknown` and counted against the caps. The
// wallet asks the chain: a used authorization becomes a charge, one never used is released once it
// has expired (never before: the service may still collect it), and wallet_status shows the rest.
let h: Harness;
let dir: string;
const key = generatePrivateKey();
const payer = privateKeyToAccount(key);
beforeAll(async () => {
  h = await startHarness('pglite');
  await devChain(h).mint(payer.address, 1_000_000n);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-unknown-'));
}, 120_000);
afterAll(async () => {
  await h?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A wallet whose paid request is lost on the way: `reaches` says whether the service got it first. */
function lossyWallet(reaches: boolean, now: () => number, caps: Record<string, string> = {}): Wallet {
  const lossy: typeof fetch = async (input, init) => {
    const paid = Boolean((init?.headers as Record<string, string> | undefined)?.['X-PAYMENT']);
    if (!paid) return fetch(input, init);
    if (reaches) await (await fetch(input, init)).arrayBuffer();
    throw new TypeError('fetch failed: the connection was lost');
  };
  const config = loadWalletConfig({
    SVC_URL: h.url,
    SVC_WALLET_PRIVATE_KEY: key,
    SVC_SPEND_LEDGER: path.join(dir, `ledger-${reaches}.json`),
    SVC_MAX_USDC_PER_SESSION: '0.01',
    ...caps,
  });
  return createWallet(config, { fetch: lossy, now });
}

const create = (w: Wallet, name: string) =>
  w.fetch({
    action: 'x402.create_app_from_html',
    method: 'POST',
    url: `${h.url}/api/x402/apps`,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name, html: '<p>x</p>' }),
    quote: '0.007',
  });

async function refusal(p: Promise<unknown>): Promise<WalletError> {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(WalletError);
  return e as WalletError;
}

describe('svc-mcp resolves payments whose answer never came', () => {
  it('charged on chain: the unknown spend becomes a committed one', async () => {
    const w = lossyWallet(true, Date.now);
    const lost = await refusal(create(w, 'charged-but-lost'));
    expect(lost.code).toBe('outcome_unknown');
    expect(lost.message).toContain('wallet_status checks it');
    const status = await w.status();
    expect(status.pending).toEqual([]);
    const [entry] = await w.ledger.entries();
    expect(entry).toMatchObject({ status: 'committed', amount: '7000' });
    expect(status.spent.session).toBe('0.007');
    expect(status.balance).toBe('0.993');
  }, 60_000);

  it('never charged: pending while its authorization could still be used, released once it expired unused', async () => {
    let now = Date.now();
    const w = lossyWallet(false, () => now);
    expect((await refusal(create(w, 'never-arrived'))).code).toBe('outcome_unknown');

    const status = await w.status();
    expect(status.spent.session).toBe('0.007');
    expect(status.pending).toHaveLength(1);
    expect(status.pending[0]).toMatchObject({ tool: 'create_app_from_html', price: '0.007', status: 'unknown' });
    expect(status.pending[0]!.state).toContain('not charged so far');
    // The session cap (0.01) has no room for a second call while the first may still be charged.
    expect((await refusal(create(w, 'second'))).code).toBe('cap_exceeded');

    now += 10 * 60_000; // past the authorization's validBefore (the service asks for 300 s) and the margin
    const later = await w.status();
    expect(later.pending).toEqual([]);
    expect(later.spent.session).toBe('0');
    const [entry] = await w.ledger.entries();
    expect(entry).toMatchObject({ status: 'released' });
    expect(entry!.note).toContain('can never be charged');
    expect(later.balance).toBe('0.993'); // only the first test's charge moved money
  }, 60_000);
});
