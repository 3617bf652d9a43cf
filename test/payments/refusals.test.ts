import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { AGENT_ACTIONS } from '../../shared/agent-api/catalogue.js';
import { USDC_ADDRESS } from '../../shared/agent-api/network.js';
import { usdcToAtomic } from '../../shared/money.js';
import { agentHandlers } from '../../service/agent-handlers.js';
import { DEV_RECIPIENT } from '../../service/payments/x402-config.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { devChain, fundedWallet, html, jsonInit, payV1, paymentSignatureHeader, signAuthorization, xPaymentHeader } from './helpers.js';

const PRICE = 7000n; // create_app_from_html, atomic

/** Valid sample bodies, so a request without payment reaches the 402 (bodies are validated first). */
const SAMPLE_BODIES: Record<string, unknown> = {
  'x402.create_app_from_html': { name: 'sample-app', html: '<p>x</p>' },
  'x402.update_app_file': { path: 'a.css', content: 'body{}' },
  'x402.update_app_meta': { visibility: 'public' },
  'x402.create_site_upload_urls': { files: [{ path: 'a.png', size: 10, type: 'image/png' }] },
  'x402.finalize_site_upload': { uploadToken: 't', entryPoint: 'index.html', files: [{ path: 'a.png', size: 10 }] },
  'x402.create_table_api': { name: 'Things', schema: { fields: [{ name: 'title', label: 'Title', type: 'string' }] } },
  'x402.insert_table_records': { records: [{ title: 'x' }] },
  'x402.create_data_file_upload_url': { fileName: 'a.csv', fileSize: 10 },
  'x402.complete_data_file_multipart_upload': { uploadId: 'u', key: 'k', parts: [{ ETag: 'e', PartNumber: 1 }] },
  'x402.convert_data_file_to_api': { key: 'k', fileName: 'a.csv' },
  'x402.rollback_app': { version: 1 },
};

const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

/** The other signature of the same key and digest: s → n − s, v 27 ↔ 28. */
function highSTwin(signature: `0x${string}`): `0x${string}` {
  const s = BigInt(`0x${signature.slice(66, 130)}`);
  const v = Number.parseInt(signature.slice(130), 16);
  return `${signature.slice(0, 66)}${(SECP256K1_N - s).toString(16).padStart(64, '0')}${(v === 27 ? 28 : 27).toString(16)}` as `0x${string}`;
}

/** A promise a test resolves by hand: `fired` settles once `fire()` is called. */
function signal(): { fired: Promise<void>; fire: () => void } {
  let fire!: () => void;
  const fired = new Promise<void>((r) => (fire = r));
  return { fired, fire };
}

describe.each(dbKinds())('Agent API payment refusals (%s)', (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(kind);
  });
  afterAll(async () => h?.close());

  async function balances(addr: string) {
    const chain = devChain(h);
    return { payer: await chain.balanceOf(addr), recipient: await chain.balanceOf(DEV_RECIPIENT) };
  }
  /**
   * The first request, then the retry once the first reached the step a test holds (`firstHeld`);
   * `release` ends the hold once the first answered. Both answer 201 with one app, the retry as a replay.
   */
  async function expectRetryReplaysFirst(o: { first: () => Promise<Response>; retry: () => Promise<Response>; firstHeld: Promise<void>; release: () => void }) {
    const first = o.first();
    await o.firstHeld;
    const retry = o.retry();
    const firstRes = await first;
    o.release();
    const retryRes = await retry;
    expect([firstRes.status, retryRes.status]).toEqual([201, 201]);
    expect((await retryRes.json()).app.appId).toBe((await firstRes.json()).app.appId);
    expect(retryRes.headers.get('x-svc-replayed')).toBe('true');
  }
  async function appExists(name: string) {
    return (await fetch(`${h.url}/s/${name}/`)).status === 200;
  }

  it('every action that needs the wallet (list_apps, list_app_versions, get_app_traffic + 14 paid: apps, tables, datasets) answers 402 with the v1 body and the v2 PAYMENT-REQUIRED header', async () => {
    const paid = AGENT_ACTIONS.filter((a) => a.identity);
    expect(paid.length).toBe(17);
    for (const action of paid) {
      const path = action.path.replace(':siteId', 'site_doesnotexist').replace(':tableId', 'tbl_doesnotexist');
      const res = await fetch(
        `${h.url}${path}`,
        action.method === 'GET' || action.method === 'DELETE' ? { method: action.method } : jsonInit(action.method, SAMPLE_BODIES[action.name] ?? {}),
      );
      expect(res.status, action.name).toBe(402);
      const body = await res.json();
      const amount = usdcToAtomic(action.price).toString();
      expect(body, action.name).toMatchObject({ x402Version: 1, error: 'payment_required' });
      expect(body.accepts, action.name).toEqual([
        {
          scheme: 'exact',
          network: 'base',
          maxAmountRequired: amount,
          resource: `${h.url}${path}`,
          description: expect.stringContaining(action.name),
          mimeType: 'application/json',
          payTo: DEV_RECIPIENT,
          maxTimeoutSeconds: 300,
          asset: USDC_ADDRESS,
          outputSchema: expect.any(Object),
          extra: { name: 'USD Coin', version: '2' },
        },
      ]);
      const v2 = JSON.parse(Buffer.from(res.headers.get('payment-required')!, 'base64').toString());
      expect(v2, action.name).toMatchObject({
        x402Version: 2,
        resource: { url: `${h.url}${path}`, mimeType: 'application/json' },
        accepts: [
          {
            scheme: 'exact',
            network: 'eip155:8453',
            amount,
            asset: USDC_ADDRESS,
            payTo: DEV_RECIPIENT,
            maxTimeoutSeconds: 300,
            extra: { name: 'USD Coin', version: '2' },
          },
        ],
      });
    }
  });

  it('invalid input is a free 400 before any payment is asked for', async () => {
    const res = await fetch(`${h.url}/api/x402/apps`, jsonInit('POST', { html: 42 }));
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.error.code).toBe('validation_failed');
    expect(body.error.details.issues.map((i: { field: string }) => i.field).sort()).toEqual(['html', 'name']);
  });

  it('a body field the action does not declare is a free 400 naming it and the declared ones: nothing done, nothing charged, even with a payment', async () => {
    // `appName` is the MCP tool's word; the Agent API's field is `name`. Dropped silently, the app
    // would have been created (and paid for) under a random name.
    const payer = await fundedWallet(h, 1_000_000n);
    const before = await balances(payer.address);
    const header = xPaymentHeader(await signAuthorization(payer, { to: DEV_RECIPIENT, value: PRICE }));
    for (const headers of [{}, header]) {
      const res = await fetch(`${h.url}/api/x402/apps`, jsonInit('POST', { appName: `misnamed-${kind}`, html: html('x') }, headers));
      expect(res.status).toBe(400);
      const body = await res.json();
      expect(body.error.code).toBe('validation_failed');
      expect(body.error.message).toBe('invalid body: unknown field appName; its fields are name, html, password, visibility. Nothing was done.');
      expect(body.error.details.issues).toEqual([{ field: 'appName', message: 'unknown field' }]);
    }
    expect(await balances(payer.address)).toEqual(before);
    const listed = await (
      await fetch(`${h.url}/api/x402/apps`, { headers: xPaymentHeader(await signAuthorization(payer, { to: DEV_RECIPIENT, value: 0n })) })
    ).json();
    expect(listed.apps).toEqual([]);
  });

  const badPayments: [string, (a: ReturnType<typeof privateKeyToAccount>) => Promise<Record<string, string>>, RegExp][] = [
    ['over-price', async (a) => xPaymentHeader(await signAuthorization(a, { to: DEV_RECIPIENT, value: PRICE + 1n })), /authorization_value/],
    ['under-price', async (a) => xPaymentHeader(await signAuthorization(a, { to: DEV_RECIPIENT, value: PRICE - 1n })), /authorization_value/],
    [
      'wrong recipient',
      async (a) => xPaymentHeader(await signAuthorization(a, { to: privateKeyToAccount(generatePrivateKey()).address, value: PRICE })),
      /recipient/,
    ],
    [
      'wrong network (v1 base-sepolia)',
      async (a) => xPaymentHeader(await signAuthorization(a, { to: DEV_RECIPIENT, value: PRICE }), 'base-sepolia'),
      /invalid_network/,
    ],
    [
      'wrong network (v2 eip155:84532)',
      async (a) =>
        paymentSignatureHeader(await signAuthorization(a, { to: DEV_RECIPIENT, value: PRICE, chainId: 84532 }), {
          amount: `${PRICE}`,
          payTo: DEV_RECIPIENT,
          network: 'eip155:84532',
        }),
      /invalid_network/,
    ],
    ['signed for another chain id', async (a) => xPaymentHeader(await signAuthorization(a, { to: DEV_RECIPIENT, value: PRICE, chainId: 84532 })), /signature/],
    [
      'signed for another token domain',
      async (a) => xPaymentHeader(await signAuthorization(a, { to: DEV_RECIPIENT, value: PRICE, name: 'USDC' })),
      /signature/,
    ],
    [
      'expired',
      async (a) => xPaymentHeader(await signAuthorization(a, { to: DEV_RECIPIENT, value: PRICE, validBefore: BigInt(Math.floor(Date.now() / 1000) - 1) })),
      /valid_before/,
    ],
    [
      'not yet valid',
      async (a) => xPaymentHeader(await signAuthorization(a, { to: DEV_RECIPIENT, value: PRICE, validAfter: BigInt(Math.floor(Date.now() / 1000) + 600) })),
      /valid_after/,
    ],
    [
      'tampered (value raised after signing)',
      async (a) => {
        const p = await signAuthorization(a, { to: DEV_RECIPIENT, value: PRICE - 1000n });
        return xPaymentHeader({ ...p, authorization: { ...p.authorization, value: `${PRICE}` } });
      },
      /signature/,
    ],
    [
      'tampered (from swapped to another wallet)',
      async (a) => {
        const p = await signAuthorization(a, { to: DEV_RECIPIENT, value: PRICE });
        return xPaymentHeader({ ...p, authorization: { ...p.authorization, from: privateKeyToAccount(generatePrivateKey()).address } });
      },
      /signature/,
    ],
    [
      // The same key's other valid ECDSA signature (s → n − s, v flipped): it recovers `from`, but
      // USDC refuses a high s, so it could never be settled.
      'malleated (the high-s twin of a valid signature)',
      async (a) => {
        const p = await signAuthorization(a, { to: DEV_RECIPIENT, value: PRICE });
        return xPaymentHeader({ ...p, signature: highSTwin(p.signature) });
      },
      /signature/,
    ],
    ['garbage header', async () => ({ 'X-PAYMENT': 'not-base64-json' }), /invalid_payment/],
  ];

  for (const [label, header, reason] of badPayments) {
    it(`refuses a payment that is ${label}: 402, no app, no money moved`, async () => {
      const payer = await fundedWallet(h, 100_000n);
      const before = await balances(payer.address);
      const name = `refused-${label.replace(/[^a-z0-9]+/g, '-')}-${kind}`.slice(0, 60).replace(/-+$/, '');
      const res = await fetch(`${h.url}/api/x402/apps`, jsonInit('POST', { name, html: html('x') }, await header(payer)));
      expect(res.status).toBe(402);
      const body = await res.json();
      expect(body.error).toMatch(reason);
      expect(body.accepts).toHaveLength(1);
      expect(await appExists(name)).toBe(false);
      expect(await balances(payer.address)).toEqual(before);
    });
  }

  it('refuses an unfunded wallet before any work (insufficient_funds)', async () => {
    const payer = await fundedWallet(h, 0n);
    const res = await fetch(
      `${h.url}/api/x402/apps`,
      jsonInit('POST', { name: `broke-${kind}`, html: html('x') }, xPaymentHeader(await signAuthorization(payer, { to: DEV_RECIPIENT, value: PRICE }))),
    );
    expect(res.status).toBe(402);
    const body = await res.json();
    expect(body.error).toBe('insufficient_funds');
    // In development the answer says how to fund the wallet.
    expect(body.message).toContain(`npm run svc -- faucet ${payer.address.toLowerCase()} 5`);
    expect(await appExists(`broke-${kind}`)).toBe(false);
  });

  it('a replayed payment returns the first result for the same request and is refused for another; charged once', async () => {
    const payer = await fundedWallet(h, 100_000n);
    const before = await balances(payer.address);
    const header = xPaymentHeader(await signAuthorization(payer, { to: DEV_RECIPIENT, value: PRICE }));
    const name = `replay-${kind}`;
    const first = await fetch(`${h.url}/api/x402/apps`, jsonInit('POST', { name, html: html('one') }, header));
    expect(first.status).toBe(201);
    const firstBody = await first.json();

    const again = await fetch(`${h.url}/api/x402/apps`, jsonInit('POST', { html: html('one'), name }, header));
    expect(again.status).toBe(201);
    expect(again.headers.get('x-svc-replayed')).toBe('true');
    expect(await again.json()).toEqual(firstBody);

    const other = await fetch(`${h.url}/api/x402/apps`, jsonInit('POST', { name: `${name}-other`, html: html('two') }, header));
    expect(other.status).toBe(402);
    expect((await other.json()).error).toBe('payment_already_used');
    expect(await appExists(`${name}-other`)).toBe(false);

    const after = await balances(payer.address);
    expect(after.payer).toBe(before.payer - PRICE);
    expect(after.recipient).toBe(before.recipient + PRICE);
  });

  it('another wallet acting on an app it does not own: 404, not charged, app unchanged', async () => {
    const owner = await fundedWallet(h, 100_000n);
    const created = await (await payV1(owner)(`${h.url}/api/x402/apps`, jsonInit('POST', { name: `owned-${kind}`, html: html('Owner') }))).json();
    const intruder = await fundedWallet(h, 100_000n);
    const before = await balances(intruder.address);
    // By its id or by its name (every app route takes either): the same 404 for another wallet.
    for (const siteId of [created.app.appId, created.app.appName]) {
      const attempts: [string, string, unknown, bigint][] = [
        ['POST', `/api/x402/apps/${siteId}/files`, { path: 'index.html', content: 'pwned' }, 3000n],
        ['PATCH', `/api/x402/apps/${siteId}`, { password: 'mine-now' }, 1000n],
        ['POST', `/api/x402/apps/${siteId}/unpublish`, undefined, 1000n],
        ['DELETE', `/api/x402/apps/${siteId}`, undefined, 1000n],
        ['POST', `/api/x402/apps/${siteId}/upload-urls`, { files: [{ path: 'x.png', size: 8, type: 'image/png' }] }, 1000n],
        ['POST', `/api/x402/apps/${siteId}/tables`, { name: 'Mine', schema: { fields: [{ name: 'a' }] } }, 8000n],
        ['POST', `/api/x402/apps/${siteId}/data-files/upload-url`, { fileName: 'd.csv', fileSize: 10 }, 1000n],
      ];
      for (const [method, path, body, value] of attempts) {
        const header = xPaymentHeader(await signAuthorization(intruder, { to: DEV_RECIPIENT, value }));
        const res = await fetch(`${h.url}${path}`, body === undefined ? { method, headers: header } : jsonInit(method, body, header));
        expect(res.status, `${method} ${path}`).toBe(404);
        // The same words on every app route (Tables and data files said "site … not found").
        expect((await res.json()).error, `${method} ${path}`).toMatchObject({ code: 'not_found', message: `app ${siteId} not found for this wallet` });
      }
    }
    expect(await balances(intruder.address)).toEqual(before);
    const page = await fetch(`${h.url}/s/owned-${kind}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<h1>Owner</h1>');
  });

  it('concurrent retries of the same paid request: one app, one charge (same payment, and same Idempotency-Key)', async () => {
    const payer = await fundedWallet(h, 1_000_000n);
    const before = await balances(payer.address);
    // The same signed payment sent five times at once.
    const header = xPaymentHeader(await signAuthorization(payer, { to: DEV_RECIPIENT, value: PRICE }));
    const same = await Promise.all(
      Array.from({ length: 5 }, () => fetch(`${h.url}/api/x402/apps`, jsonInit('POST', { name: `race-${kind}`, html: html('race') }, header))),
    );
    const bodies = await Promise.all(same.map((r) => r.json()));
    expect(same.map((r) => r.status)).toEqual([201, 201, 201, 201, 201]);
    expect(new Set(bodies.map((b) => b.app.appId)).size).toBe(1);
    expect(new Set(bodies.map((b) => b.receipt.receiptId)).size).toBe(1);

    // Five different payments with one Idempotency-Key (a client retrying with fresh signatures).
    const headers = await Promise.all(
      Array.from({ length: 5 }, async () => ({
        ...xPaymentHeader(await signAuthorization(payer, { to: DEV_RECIPIENT, value: PRICE })),
        'Idempotency-Key': `idem-${kind}`,
      })),
    );
    const keyed = await Promise.all(headers.map((hd) => fetch(`${h.url}/api/x402/apps`, jsonInit('POST', { name: `race2-${kind}`, html: html('race') }, hd))));
    const keyedBodies = await Promise.all(keyed.map((r) => r.json()));
    expect(keyed.map((r) => r.status)).toEqual([201, 201, 201, 201, 201]);
    expect(new Set(keyedBodies.map((b) => b.app.appId)).size).toBe(1);

    const after = await balances(payer.address);
    expect(after.payer).toBe(before.payer - 2n * PRICE);
    expect(after.recipient).toBe(before.recipient + 2n * PRICE);
    const list = await (await payV1(payer)(`${h.url}/api/x402/apps`)).json();
    expect(list.apps.map((a: { appName: string }) => a.appName).sort()).toEqual([`race-${kind}`, `race2-${kind}`]);
  });

  it('a retry of a payment that settled while the retry was checking it on chain gets the first answer, not a 402', async () => {
    // The retry passes step 1 (no payment row yet), then asks the chain; meanwhile the first attempt
    // claims, works and settles, so the chain sees the nonce used. Seen across nodes (the same payment
    // sent to two nodes at once); made deterministic here by holding the retry's on-chain check.
    const payer = await fundedWallet(h, 100_000n);
    const before = await balances(payer.address);
    const header = xPaymentHeader(await signAuthorization(payer, { to: DEV_RECIPIENT, value: PRICE }));
    const facilitator = h.deps.facilitator;
    const realVerify = facilitator.verify.bind(facilitator);
    const firstVerifying = signal();
    const firstAnswered = signal();
    let calls = 0;
    facilitator.verify = async (p) => {
      if (++calls === 1) firstVerifying.fire();
      else if (calls === 2) await firstAnswered.fired;
      return realVerify(p);
    };
    try {
      const send = () => fetch(`${h.url}/api/x402/apps`, jsonInit('POST', { name: `late-retry-${kind}`, html: html('late') }, header));
      await expectRetryReplaysFirst({ first: send, retry: send, firstHeld: firstVerifying.fired, release: firstAnswered.fire });
    } finally {
      facilitator.verify = realVerify;
    }
    const after = await balances(payer.address);
    expect(after.payer).toBe(before.payer - PRICE);
    const counted = (outcome: string) => h.deps.metrics.payments.get().then((m) => m.values.find((v) => v.labels.outcome === outcome)?.value ?? 0);
    expect(await counted('replayed')).toBeGreaterThanOrEqual(1);
    expect(await counted('settled')).toBeGreaterThanOrEqual(1);
  });

  it.each([
    ['the same payment', false],
    ['the same Idempotency-Key with a new payment', true],
  ])('a retry (%s) whose free check ran after the first attempt created the app gets the first answer, not 409 slug_taken', async (_, keyed) => {
    // The retry passes steps 1–2 (no payment row, no key yet), then runs the action's free check; the
    // first attempt meanwhile claims, creates the app and settles, so the check sees the name taken.
    // Seen across nodes; made deterministic here by holding both checks.
    const payer = await fundedWallet(h, 100_000n);
    const before = await balances(payer.address);
    const name = `late-check-${keyed ? 'key' : 'pay'}-${kind}`;
    const signed = async () => xPaymentHeader(await signAuthorization(payer, { to: DEV_RECIPIENT, value: PRICE }));
    const idem: Record<string, string> = keyed ? { 'Idempotency-Key': `late-check-${kind}` } : {};
    const firstHeader = { ...(await signed()), ...idem };
    const retryHeader = keyed ? { ...(await signed()), ...idem } : firstHeader;
    const action = 'x402.create_app_from_html';
    const real = agentHandlers[action]!;
    // The first check waits until the retry's check started; the retry's waits until the first answered.
    const firstChecking = signal();
    const retryChecking = signal();
    const firstAnswered = signal();
    let checks = 0;
    agentHandlers[action] = {
      ...real,
      check: async (call) => {
        if (++checks === 1) {
          firstChecking.fire();
          await retryChecking.fired;
        } else {
          retryChecking.fire();
          await firstAnswered.fired;
        }
        return real.check?.(call);
      },
    };
    try {
      const send = (header: Record<string, string>) => () => fetch(`${h.url}/api/x402/apps`, jsonInit('POST', { name, html: html('late') }, header));
      await expectRetryReplaysFirst({ first: send(firstHeader), retry: send(retryHeader), firstHeld: firstChecking.fired, release: firstAnswered.fire });
    } finally {
      agentHandlers[action] = real;
    }
    expect((await balances(payer.address)).payer).toBe(before.payer - PRICE);
  });

  it('an Idempotency-Key reused with a different body is a 409 and costs nothing', async () => {
    const payer = await fundedWallet(h, 100_000n);
    const first = await fetch(
      `${h.url}/api/x402/apps`,
      jsonInit(
        'POST',
        { name: `idem-a-${kind}`, html: html('a') },
        { ...xPaymentHeader(await signAuthorization(payer, { to: DEV_RECIPIENT, value: PRICE })), 'Idempotency-Key': 'k1' },
      ),
    );
    expect(first.status).toBe(201);
    const before = await balances(payer.address);
    const second = await fetch(
      `${h.url}/api/x402/apps`,
      jsonInit(
        'POST',
        { name: `idem-b-${kind}`, html: html('b') },
        { ...xPaymentHeader(await signAuthorization(payer, { to: DEV_RECIPIENT, value: PRICE })), 'Idempotency-Key': 'k1' },
      ),
    );
    expect(second.status).toBe(409);
    expect(await balances(payer.address)).toEqual(before);
    expect(await appExists(`idem-b-${kind}`)).toBe(false);
  });
});
