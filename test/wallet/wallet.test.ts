import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { inspect } from 'node:util';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadWalletConfig } from '../../wallet/config.js';
import { WalletError } from '../../wallet/errors.js';
import { createWallet, type Wallet } from '../../wallet/wallet.js';
import { startFakeX402 } from './fake-x402-server.js';

const PRICE = 7000n; // 0.007 USDC
const recipient = privateKeyToAccount(generatePrivateKey()).address;
const payerKey = generatePrivateKey();
const payer = privateKeyToAccount(payerKey).address;
let server: Awaited<ReturnType<typeof startFakeX402>>;
let dir: string;

beforeAll(async () => {
  server = await startFakeX402({ recipient, price: PRICE });
});
afterAll(() => server.close());

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-wallet-'));
  Object.assign(server.state, {
    price: PRICE,
    payTo: recipient,
    network: 'base',
    maxTimeoutSeconds: 60,
    rejectPayments: false,
    failAfterPayment: false,
    x402Version: 1,
    paymentHeadersSeen: 0,
    requests: 0,
    settled: [],
  });
  server.state.balances.set(payer, 1_000_000n);
});

function wallet(env: Record<string, string> = {}, now?: () => number): Wallet {
  return createWallet(loadWalletConfig({ SVC_URL: server.url, SVC_WALLET_PRIVATE_KEY: payerKey, SVC_SPEND_LEDGER: path.join(dir, 'ledger.json'), ...env }), {
    now,
  });
}

const create = (w: Wallet, quote = '0.007') =>
  w.fetch({
    action: 'x402.create_app_from_html',
    method: 'POST',
    url: `${server.url}/api/x402/apps`,
    headers: { 'content-type': 'application/json' },
    body: '{"name":"a","html":"<p>x</p>"}',
    quote,
  });

async function refusal(p: Promise<unknown>): Promise<WalletError> {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(WalletError);
  return e as WalletError;
}

describe('per-tool caps and paid calls per hour, beside the other caps', () => {
  const forTool = (w: Wallet, tool: string) =>
    w.fetch({ action: 'x402.create_app_from_html', method: 'POST', url: `${server.url}/api/x402/apps`, body: '{}', quote: '0.007', tool });

  it("a tool's cap (rolling 24 h) refuses its calls before signing, names the setting and what is left; other tools still pay; it rolls after 24 h", async () => {
    let now = Date.UTC(2026, 0, 1, 12);
    const w = wallet({ SVC_MAX_USDC_PER_TOOL: 'deploy_site=0.01, create_app_from_html=0.05' }, () => now);
    await forTool(w, 'deploy_site');
    const e = await refusal(forTool(w, 'deploy_site'));
    expect(e.code).toBe('cap_exceeded');
    expect(e.spent).toBe('none');
    expect(e.message).toBe(
      'Refused to pay 0.007 USDC for x402.create_app_from_html: the deploy_site rolling 24-hour cap is 0.01 USDC and 0.003 USDC of it is left. Nothing was paid. Wait until its older payments leave the 24-hour window, or ask the user to raise deploy_site in SVC_MAX_USDC_PER_TOOL.',
    );
    expect(server.state.paymentHeadersSeen).toBe(1);
    // The action's own tool has a cap of its own, untouched by deploy_site's payment.
    await create(w);
    const status = await w.status();
    expect(status.caps).toMatchObject({ perTool: { deploy_site: '0.01', create_app_from_html: '0.05' }, paidCallsPerHour: null });
    expect(status.spent.perTool).toEqual({ deploy_site: '0.007', create_app_from_html: '0.007' });
    expect(status.headroom.perTool).toEqual({ deploy_site: '0.003', create_app_from_html: '0.043' });
    now += 24 * 60 * 60 * 1000 + 1;
    await forTool(w, 'deploy_site');
    expect(server.state.settled).toHaveLength(3);
  });

  it('SVC_MAX_PAID_CALLS_PER_HOUR counts every payment signed in the rolling hour, refused ones too; the refusal says when the next may be signed', async () => {
    let now = Date.UTC(2026, 0, 1, 12);
    const w = wallet({ SVC_MAX_PAID_CALLS_PER_HOUR: '2' }, () => now);
    await create(w);
    server.state.rejectPayments = true;
    expect((await refusal(create(w))).code).toBe('payment_rejected');
    server.state.rejectPayments = false;
    expect(server.state.paymentHeadersSeen).toBe(2);
    const status = await w.status();
    expect(status.headroom).toMatchObject({ paidCallsThisHour: 0, nextCall: '0', nextPaidCallAt: '2026-01-01T13:00:00.000Z' });
    const e = await refusal(create(w));
    expect(e.code).toBe('cap_exceeded');
    expect(e.message).toBe(
      'Refused to pay 0.007 USDC for x402.create_app_from_html: it takes 1 payment and the paid-calls-per-hour limit is 2, with 0 left in the last hour. Nothing was paid. The next payment may be signed after 2026-01-01T13:00:00.000Z. Wait, or ask the user to raise SVC_MAX_PAID_CALLS_PER_HOUR.',
    );
    expect(server.state.paymentHeadersSeen).toBe(2);
    now += 60 * 60 * 1000 + 1;
    await create(w);
    expect(server.state.settled).toHaveLength(2);
  });

  it('wallet_status names the pinned payee of each service and SVC_PAY_TO', async () => {
    const w = wallet({ SVC_PAY_TO: recipient });
    await create(w);
    const { payees } = await w.status();
    expect(payees.payTo).toBe(recipient);
    expect(payees.pinned).toEqual([
      expect.objectContaining({ serviceUrl: server.url, recipient, network: 'eip155:8453', source: 'first-use', pinnedAt: expect.stringMatching(/^\d{4}-/) }),
    ]);
    // A pins file that cannot be read is said, not shown as "nothing pinned".
    fs.writeFileSync(path.join(dir, 'known-payees.json'), '{"version":');
    expect((await wallet().status()).payees).toMatchObject({ pinned: [], note: expect.stringContaining('is not valid; nothing was signed or paid') });
  });

  it('settings that cannot be read are refused at start, naming the setting', () => {
    expect(() => wallet({ SVC_MAX_USDC_PER_TOOL: 'deploy_site:0.05' })).toThrow(
      /SVC_MAX_USDC_PER_TOOL: "deploy_site:0.05" is not tool=USDC \(e\.g\. deploy_site=0\.05\)/,
    );
    expect(() => wallet({ SVC_MAX_USDC_PER_TOOL: 'deploy_site=0.05,deploy_site=1' })).toThrow(/SVC_MAX_USDC_PER_TOOL: deploy_site is given twice/);
    expect(() => wallet({ SVC_MAX_PAID_CALLS_PER_HOUR: '0' })).toThrow(/SVC_MAX_PAID_CALLS_PER_HOUR: a whole number of calls, at least 1/);
    expect(() => wallet({ SVC_MAX_PAID_CALLS_PER_HOUR: '2.5' })).toThrow(/SVC_MAX_PAID_CALLS_PER_HOUR/);
  });
});

describe('wallet pays x402 within its caps', () => {
  it('pays a quoted call, records it committed with the receipt, and the balance moves by the price', async () => {
    const w = wallet();
    const { response, payment } = await create(w);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { receipt: { receiptId: string } };
    expect(payment?.status).toBe('committed');
    expect(payment?.amount).toBe('7000');
    expect(payment?.receiptId).toBe(body.receipt.receiptId);
    expect(server.state.balances.get(payer)).toBe(1_000_000n - PRICE);
    const status = await w.status();
    expect(status.spent).toEqual({ session: '0.007', day: '0.007', total: '0.007', perTool: {}, paidCallsLastHour: 1 });
    expect(status.address).toBe(payer);
  });

  it('a per-call cap below the price refuses before anything is sent', async () => {
    const w = wallet({ SVC_MAX_USDC_PER_CALL: '0.005' });
    const e = await refusal(create(w));
    expect(e.code).toBe('cap_exceeded');
    expect(e.spent).toBe('none');
    expect(e.message).toMatch(/per-call cap is 0\.005 USDC/);
    expect(server.state.requests).toBe(0);
    expect(server.state.paymentHeadersSeen).toBe(0);
    expect(server.state.balances.get(payer)).toBe(1_000_000n);
  });

  it('a per-call cap below what the 402 asks refuses before signing even when the quote was higher', async () => {
    server.state.price = 60_000n; // above the default 0.05 per-call cap
    const e = await refusal(create(wallet(), '0.06'));
    expect(e.code).toBe('cap_exceeded');
    expect(server.state.paymentHeadersSeen).toBe(0);
  });

  it('a session cap of N x price allows exactly N of 2N concurrent calls', async () => {
    const N = 4;
    const w = wallet({ SVC_MAX_USDC_PER_SESSION: '0.028' });
    const results = await Promise.allSettled(Array.from({ length: 2 * N }, () => create(w)));
    const ok = results.filter((r) => r.status === 'fulfilled');
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(ok).toHaveLength(N);
    expect(refused).toHaveLength(N);
    for (const r of refused) expect((r.reason as WalletError).code).toBe('cap_exceeded');
    expect(server.state.settled).toHaveLength(N);
    // Refused calls never sent a signed payment.
    expect(server.state.paymentHeadersSeen).toBe(N);
    expect(server.state.balances.get(payer)).toBe(1_000_000n - BigInt(N) * PRICE);
    expect((await w.status()).spent.session).toBe('0.028');
  });

  it('two wallets sharing one ledger file never pass the daily cap together', async () => {
    const env = { SVC_MAX_USDC_PER_DAY: '0.021' };
    const a = wallet(env);
    const b = wallet(env);
    const results = await Promise.allSettled([...Array.from({ length: 3 }, () => create(a)), ...Array.from({ length: 3 }, () => create(b))]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    expect(server.state.settled).toHaveLength(3);
    expect((await a.status()).spent.day).toBe('0.021');
  });

  it('the daily cap holds across a restart with the same ledger and rolls after 24 h', async () => {
    let now = Date.UTC(2026, 0, 1, 12);
    const env = { SVC_MAX_USDC_PER_DAY: '0.014' };
    const first = wallet(env, () => now);
    await create(first);
    await create(first);
    // "Restart": a new wallet object (new session) on the same ledger file.
    const second = wallet(env, () => now);
    expect((await second.status()).spent).toEqual({ session: '0', day: '0.014', total: '0.014', perTool: {}, paidCallsLastHour: 2 });
    const e = await refusal(create(second));
    expect(e.code).toBe('cap_exceeded');
    expect(e.message).toMatch(/rolling 24-hour cap/);
    expect(server.state.settled).toHaveLength(2);
    now += 24 * 60 * 60 * 1000 + 1;
    await create(second);
    expect(server.state.settled).toHaveLength(3);
  });

  it('the lifetime cap counts every payment in the ledger', async () => {
    const w = wallet({ SVC_MAX_USDC_TOTAL: '0.01' });
    await create(w);
    expect((await refusal(create(w))).message).toMatch(/lifetime cap is 0\.01 USDC and 0\.003 USDC of it is left/);
  });

  it('refuses a price drift and reports the new price; nothing signed', async () => {
    server.state.price = 9000n;
    const e = await refusal(create(wallet()));
    expect(e.code).toBe('price_drift');
    expect(e.details).toMatchObject({ quoted: '0.007', price: '0.009' });
    expect(e.message).toMatch(/changed from 0\.007 to 0\.009 USDC/);
    expect(server.state.paymentHeadersSeen).toBe(0);
    expect(server.state.balances.get(payer)).toBe(1_000_000n);
  });

  it('a free call that suddenly asks for payment is refused', async () => {
    const e = await refusal(create(wallet(), '0'));
    expect(e.code).toBe('price_drift');
    expect(e.details).toMatchObject({ price: '0.007' });
    expect(server.state.paymentHeadersSeen).toBe(0);
  });

  it.each([
    ['another recipient', { payTo: privateKeyToAccount(generatePrivateKey()).address }, /recipient 0x/],
    ['another network', { network: 'base-sepolia' }, /network base-sepolia/],
    ['a long validity window', { maxTimeoutSeconds: 3600 }, /validity 3600 s/],
  ])('refuses a 402 naming %s; nothing signed, no money moved', async (_name, change, why) => {
    Object.assign(server.state, change);
    const e = await refusal(create(wallet()));
    expect(e.code).toBe('terms_refused');
    expect(e.message).toMatch(why);
    expect(server.state.paymentHeadersSeen).toBe(0);
    expect(server.state.balances.get(payer)).toBe(1_000_000n);
  });

  it('a 402 that is not an x402 v1 payment request is refused; nothing signed, no money moved', async () => {
    server.state.x402Version = 2;
    const e = await refusal(create(wallet()));
    expect(e.code).toBe('terms_refused');
    expect(e.message).toMatch(/Could not read the service's payment request .*not an x402 v1 payment request.*nothing was signed or paid/);
    expect(server.state.paymentHeadersSeen).toBe(0);
    expect(server.state.balances.get(payer)).toBe(1_000_000n);
  });

  it('a payment the service refuses (402 on the paid retry) is released, not counted', async () => {
    server.state.rejectPayments = true;
    const w = wallet();
    const e = await refusal(create(w));
    expect(e.code).toBe('payment_rejected');
    expect(e.spent).toBe('none');
    expect(server.state.paymentHeadersSeen).toBe(1);
    const entries = await w.ledger.entries();
    expect(entries.map((x) => x.status)).toEqual(['released']);
    expect((await w.status()).spent.session).toBe('0');
  });

  it('a 5xx after the payment left counts as spent (outcome unknown)', async () => {
    server.state.failAfterPayment = true;
    const w = wallet();
    const { response, payment } = await create(w);
    expect(response.status).toBe(500);
    expect(payment).toBeUndefined();
    expect((await w.ledger.entries()).map((x) => x.status)).toEqual(['unknown']);
    expect((await w.status()).spent.session).toBe('0.007');
  });

  it('refuses origins that are not allowed, without sending anything', async () => {
    const w = wallet({ SVC_ALLOWED_ORIGINS: 'http://example.invalid' });
    const e = await refusal(create(w));
    expect(e.code).toBe('origin_not_allowed');
    expect(server.state.requests).toBe(0);
  });

  it('the private key never appears in config dumps, status, ledger or errors', async () => {
    const config = loadWalletConfig({ SVC_URL: server.url, SVC_WALLET_PRIVATE_KEY: payerKey, SVC_SPEND_LEDGER: path.join(dir, 'l.json') });
    const w = createWallet(config);
    await create(w);
    server.state.price = 9000n;
    const e = await refusal(create(w));
    const texts = [
      JSON.stringify(config, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)),
      inspect(config, { depth: 10 }),
      String(config.key),
      JSON.stringify(await w.status()),
      fs.readFileSync(config.ledgerPath, 'utf8'),
      e.message,
      inspect(e),
      JSON.stringify(e),
    ];
    for (const t of texts) expect(t.toLowerCase()).not.toContain(payerKey.slice(2).toLowerCase());
    let bad: unknown;
    try {
      loadWalletConfig({ SVC_WALLET_PRIVATE_KEY: `${payerKey}zz` });
    } catch (err) {
      bad = err;
    }
    expect(String((bad as Error).message)).toMatch(/SVC_WALLET_PRIVATE_KEY does not hold/);
    expect(String((bad as Error).message)).not.toContain(payerKey.slice(2, 20));
  });

  it('reads the key from a key file', async () => {
    const file = path.join(dir, 'key');
    fs.writeFileSync(file, `${payerKey}\n`, { mode: 0o600 });
    const w = createWallet(loadWalletConfig({ SVC_URL: server.url, SVC_WALLET_KEY_FILE: file, SVC_SPEND_LEDGER: path.join(dir, 'l.json') }));
    expect(w.address).toBe(payer);
  });

  it('a lock left by a crashed process is broken; a reservation left by a crash stays counted', async () => {
    const ledgerPath = path.join(dir, 'ledger.json');
    const w = wallet({ SVC_MAX_USDC_PER_SESSION: '1', SVC_MAX_USDC_PER_DAY: '0.014' });
    await create(w);
    // A crashed payer: its lock file names a pid that no longer exists, and its payment was still "reserved".
    const data = JSON.parse(fs.readFileSync(ledgerPath, 'utf8'));
    data.entries.push({ ...data.entries[0], id: 'crashed', sessionId: 'other', pid: 999999, status: 'reserved', reservedAt: Date.now() });
    fs.writeFileSync(ledgerPath, JSON.stringify(data));
    fs.writeFileSync(`${ledgerPath}.lock`, JSON.stringify({ pid: 999999, token: 'dead', at: Date.now() }));
    const again = wallet({ SVC_MAX_USDC_PER_DAY: '0.014' });
    expect((await again.status()).spent.day).toBe('0.014');
    const e = await refusal(create(again));
    expect(e.code).toBe('cap_exceeded');
    expect(server.state.settled).toHaveLength(1);
  });

  it('an unreadable ledger blocks payments instead of resetting the caps', async () => {
    fs.writeFileSync(path.join(dir, 'ledger.json'), '{"version":1,"entr');
    const e = await refusal(create(wallet()));
    expect(e.code).toBe('ledger_invalid');
    expect(e.message).toMatch(/not a valid ledger file; nothing was paid/);
    expect(server.state.requests).toBe(0);
  });
});
