import { createSIWxPayload, encodeSIWxHeader, wrapFetchWithSIWx, type SIWxExtension } from '@x402/extensions/sign-in-with-x';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { devChain, fundedWallet, html, jsonInit, payV2 } from './helpers.js';

// Sign-In-With-X (x402 `sign-in-with-x` extension) on the Agent API's free identity call, list_apps,
// with the extension's own client: wrapFetchWithSIWx signs the challenge the 402 declares.
const decode = (header: string | null) => JSON.parse(Buffer.from(header ?? '', 'base64').toString('utf8'));

describe.each(dbKinds())('Sign-In-With-X on list_apps (%s)', (kind) => {
  let h: Harness;
  let owner: PrivateKeyAccount;
  const appName = `siwx-${kind}-${Date.now().toString(36)}`;

  beforeAll(async () => {
    h = await startHarness(kind, { SVC_X402_MODE: 'dev' });
    owner = await fundedWallet(h, 1_000_000n);
    const made = await payV2(owner)(`${h.url}/api/x402/apps`, jsonInit('POST', { name: appName, html: html('Signed in') }));
    expect(made.status, await made.text()).toBe(201);
  }, 120_000);
  afterAll(async () => {
    await h?.close();
  });

  /** The sign-in challenge of a fresh 402 of list_apps. */
  async function challenge(): Promise<SIWxExtension> {
    const res = await fetch(`${h.url}/api/x402/apps`);
    expect(res.status).toBe(402);
    return decode(res.headers.get('payment-required')).extensions['sign-in-with-x'];
  }
  /** A proof signed by `wallet` for `info` (altered as a test needs), as the SIGN-IN-WITH-X header. */
  async function proof(wallet: PrivateKeyAccount, info: SIWxExtension['info'], requestUrl = `${h.url}/api/x402/apps`): Promise<string> {
    return encodeSIWxHeader(await createSIWxPayload({ ...info, chainId: 'eip155:8453', type: 'eip191' }, wallet, requestUrl));
  }
  const listWith = async (header: string) => {
    const res = await fetch(`${h.url}/api/x402/apps`, { headers: { 'SIGN-IN-WITH-X': header } });
    return { status: res.status, text: await res.text(), required: res.headers.get('payment-required') };
  };

  it('the 402 of list_apps declares sign-in-with-x: this service, the request URL, a fresh nonce, five minutes, chain eip155:8453', async () => {
    const [a, b] = [await challenge(), await challenge()];
    const host = new URL(h.url).host;
    expect(a.info).toMatchObject({ domain: host, uri: `${h.url}/api/x402/apps`, version: '1', resources: [`${h.url}/api/x402/apps`] });
    expect(a.info.nonce).toMatch(/^[0-9a-f]{32}$/);
    expect(a.info.nonce).not.toBe(b.info.nonce);
    expect(Date.parse(a.info.expirationTime ?? '') - Date.parse(a.info.issuedAt)).toBe(300_000);
    expect(a.supportedChains).toEqual([{ chainId: 'eip155:8453', type: 'eip191' }]);
    // A paid action asks for no sign-in: only money does it.
    const paid = await fetch(`${h.url}/api/x402/apps`, jsonInit('POST', { name: 'x', html: html('x') }));
    expect(decode(paid.headers.get('payment-required')).extensions?.['sign-in-with-x']).toBeUndefined();
  });

  it('wrapFetchWithSIWx: the wallet that created an app lists it without paying; another wallet sees nothing of it', async () => {
    const before = await devChain(h).balanceOf(owner.address);
    const mine = await wrapFetchWithSIWx(fetch, owner)(`${h.url}/api/x402/apps`);
    expect(mine.status).toBe(200);
    const body = (await mine.json()) as { ok: boolean; apps: { appName: string }[]; receipt?: unknown };
    expect(body.apps.map((a) => a.appName)).toEqual([appName]);
    expect(body.receipt).toBeUndefined();
    expect(await devChain(h).balanceOf(owner.address)).toBe(before);

    const stranger = privateKeyToAccount(generatePrivateKey());
    const theirs = await wrapFetchWithSIWx(fetch, stranger)(`${h.url}/api/x402/apps`);
    expect(theirs.status).toBe(200);
    expect(await theirs.json()).toEqual({ ok: true, apps: [] });
  });

  it('a replayed proof is refused, as are two racing uses of one proof but the first', async () => {
    const header = await proof(owner, (await challenge()).info);
    expect((await listWith(header)).status).toBe(200);
    const replay = await listWith(header);
    expect(replay.status).toBe(402);
    expect(replay.text).not.toContain(appName);
    expect(JSON.parse(replay.text)).toMatchObject({ error: 'invalid_siwx_nonce', message: expect.stringContaining('already used') });
    // The refusal carries a fresh challenge to sign.
    expect(decode(replay.required).extensions['sign-in-with-x'].info.nonce).toMatch(/^[0-9a-f]{32}$/);

    const raced = await proof(owner, (await challenge()).info);
    const answers = await Promise.all([0, 1, 2].map(() => listWith(raced)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 402, 402]);
  });

  it('a proof for another origin, an expired one, one for another chain and a forged one see nothing', async () => {
    const info = (await challenge()).info;
    const elsewhere = 'https://svc.example';
    const otherOrigin = await listWith(await proof(owner, { ...info, domain: 'svc.example', uri: `${elsewhere}/api/x402/apps` }, `${elsewhere}/api/x402/apps`));
    expect([otherOrigin.status, JSON.parse(otherOrigin.text).error]).toEqual([402, 'invalid_siwx_domain_mismatch']);
    const now = Date.now();
    const expired = await listWith(
      await proof(owner, { ...info, issuedAt: new Date(now - 120_000).toISOString(), expirationTime: new Date(now - 60_000).toISOString() }),
    );
    expect([expired.status, JSON.parse(expired.text).error]).toEqual([402, 'invalid_siwx_expired']);
    const stale = await listWith(await proof(owner, { ...info, issuedAt: new Date(now - 600_000).toISOString() }));
    expect([stale.status, JSON.parse(stale.text).error]).toEqual([402, 'invalid_siwx_issued_at_too_old']);
    const otherChain = encodeSIWxHeader(await createSIWxPayload({ ...info, chainId: 'eip155:1', type: 'eip191' }, owner, `${h.url}/api/x402/apps`));
    expect(JSON.parse((await listWith(otherChain)).text).error).toBe('invalid_siwx_unsupported_chain');
    // Signed by another key but claiming the owner's address.
    const forged = JSON.parse(Buffer.from(await proof(privateKeyToAccount(generatePrivateKey()), (await challenge()).info), 'base64').toString('utf8'));
    const claimed = await listWith(Buffer.from(JSON.stringify({ ...forged, address: owner.address })).toString('base64'));
    expect([claimed.status, JSON.parse(claimed.text).error]).toEqual([402, 'invalid_siwx_signature']);
    for (const r of [otherOrigin, expired, stale, claimed]) expect(r.text).not.toContain(appName);
    expect((await listWith('not base64 at all')).status).toBe(402);
  });

  it('the zero-value authorization keeps working for clients that pay it', async () => {
    const res = await payV2(owner)(`${h.url}/api/x402/apps`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { apps: { appName: string }[]; receipt: { status: string; price: string } };
    expect(body.apps.map((a) => a.appName)).toEqual([appName]);
    expect(body.receipt).toMatchObject({ status: 'verified', price: '0' });
  });
});
