import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { getAddress } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acceptPayeeFromCli } from '../../wallet/accept-payee.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { call, connectHttp, text } from '../mcp/helpers.js';
import { devChain } from '../payments/helpers.js';
import { startTamperingFront } from './tampering-front.js';

// The payee pinned per service (wallet/payees.ts): a front that rewrites the recipient the service
// names, in its discovery answer and in its 402s, gets no signature, on the dev chain.
let h: Harness;
let front: Awaited<ReturnType<typeof startTamperingFront>>;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-payees-'));
const key = generatePrivateKey();
const payer = privateKeyToAccount(key).address;
const attacker = privateKeyToAccount(generatePrivateKey()).address;
let recipient: string;
let n = 0;
const appName = () => `pinned-${Date.now().toString(36)}-${++n}`;

beforeAll(async () => {
  h = await startHarness('pglite', { SVC_X402_MODE: 'dev' });
  await devChain(h).mint(payer, 1_000_000n);
  recipient = getAddress(h.config.x402.recipient);
  front = await startTamperingFront(h.url);
}, 120_000);
afterAll(async () => {
  await front?.close();
  await h?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const env = (extra: Record<string, string> = {}) => ({
  SVC_URL: front.url,
  SVC_WALLET_PRIVATE_KEY: key,
  SVC_SPEND_LEDGER: path.join(dir, 'ledger.json'),
  ...extra,
});
const balances = async () => ({
  payer: await devChain(h).balanceOf(payer),
  recipient: await devChain(h).balanceOf(recipient as `0x${string}`),
  attacker: await devChain(h).balanceOf(attacker),
});
const ledgerEntries = () => (JSON.parse(fs.readFileSync(path.join(dir, 'ledger.json'), 'utf8')) as { entries: unknown[] }).entries.length;
const pins = () =>
  JSON.parse(fs.readFileSync(path.join(dir, 'known-payees.json'), 'utf8')) as { payees: Record<string, { recipient: string; source: string }> };

describe('the payee is pinned per service', () => {
  it('first use pins the recipient; a front that swaps it in discovery and in the 402 gets no signature, on every path', async () => {
    front.state.payTo = undefined;
    const first = await connectHttp(env());
    try {
      const paid = await call(first.client, 'create_app_from_html', { appName: appName(), html: '<p>x</p>' });
      expect(paid.isError, text(paid)).toBeFalsy();
      expect(pins().payees[front.url]).toMatchObject({ recipient, source: 'first-use' });

      front.state.payTo = attacker;
      const before = await balances();
      const entries = ledgerEntries();
      const signatures = front.state.signaturesSeen;

      // The server that pinned it (terms read before the swap): the 402's recipient is refused.
      const again = await call(first.client, 'create_app_from_html', { appName: appName(), html: '<p>x</p>' });
      expect(again.isError).toBe(true);
      expect(text(again)).toContain(`recipient ${attacker} (the payee pinned for this service is ${recipient})`);

      // A server started after the swap: its discovery answer names the attacker.
      const later = await connectHttp(env());
      try {
        const r = await call(later.client, 'create_app_from_html', { appName: appName(), html: '<p>x</p>' });
        expect(r.isError).toBe(true);
        expect(text(r)).toContain(`its payee changed since`);
        expect(text(r)).toContain(`recipient ${recipient} → ${attacker}`);
        expect(text(r)).toContain(`svc-mcp --accept-payee ${front.url}`);
        expect(text(r)).toContain('Nothing was signed or paid');
        // The quote says so too, and the composites refuse before their first step.
        const q = (await call(later.client, 'quote', { tool: 'create_app_from_html' })).structuredContent as {
          quotes: { allowed: boolean; refusal: string }[];
        };
        expect(q.quotes[0]).toMatchObject({ allowed: false, refusal: expect.stringContaining('payee changed') });
        const deploy = await call(later.client, 'deploy_site', { appName: appName(), files: [{ path: 'index.html', content: '<p>x</p>' }] });
        expect(deploy.isError).toBe(true);
        expect(text(deploy)).toContain('payee changed');
        // list_apps signs a zero-value proof: not for the attacker either.
        expect(text(await call(later.client, 'list_apps'))).toContain('payee changed');
        // The pin did not move.
        expect(pins().payees[front.url]).toMatchObject({ recipient, source: 'first-use' });
      } finally {
        await later.close();
      }
      expect(front.state.signaturesSeen).toBe(signatures);
      expect(ledgerEntries()).toBe(entries);
      expect(await balances()).toEqual(before);
    } finally {
      front.state.payTo = undefined;
      await first.close();
    }
  });

  it('a real change is taken only through svc-mcp --accept-payee, then payments go on', async () => {
    // What a service whose recipient really changed looks like from the pin: another recipient pinned before.
    const file = path.join(dir, 'known-payees.json');
    const data = pins();
    data.payees[front.url] = { ...data.payees[front.url]!, recipient: attacker };
    fs.writeFileSync(file, JSON.stringify(data));
    const s = await connectHttp(env());
    try {
      const refused = await call(s.client, 'create_app_from_html', { appName: appName(), html: '<p>x</p>' });
      expect(text(refused)).toContain(`recipient ${attacker} → ${recipient}`);
    } finally {
      await s.close();
    }
    const said: string[] = [];
    expect(await acceptPayeeFromCli(front.url, env(), (l) => said.push(l))).toBe(0);
    expect(said.join('\n')).toContain(`is now ${recipient}`);
    expect(said.join('\n')).toContain(`was ${attacker}`);
    expect(pins().payees[front.url]).toMatchObject({ recipient, source: 'accepted' });
    const after = await connectHttp(env());
    try {
      const before = await balances();
      const paid = await call(after.client, 'create_app_from_html', { appName: appName(), html: '<p>x</p>' });
      expect(paid.isError, text(paid)).toBeFalsy();
      expect(before.payer - (await balances()).payer).toBe(7000n);
    } finally {
      await after.close();
    }
  });

  it('SVC_PAY_TO pins the recipient outright: another one is refused before anything is signed', async () => {
    const s = await connectHttp(env({ SVC_PAY_TO: attacker, SVC_SPEND_LEDGER: path.join(dir, 'pay-to', 'ledger.json') }));
    try {
      const signatures = front.state.signaturesSeen;
      const before = await balances();
      const r = await call(s.client, 'create_app_from_html', { appName: appName(), html: '<p>x</p>' });
      expect(r.isError).toBe(true);
      expect(text(r)).toContain(`SVC_PAY_TO (the person's setting) pins ${attacker}`);
      expect(front.state.signaturesSeen).toBe(signatures);
      expect(await balances()).toEqual(before);
    } finally {
      await s.close();
    }
  });

  it('a paid call never follows a redirect: nothing signed', async () => {
    const s = await connectHttp(env());
    try {
      const signatures = front.state.signaturesSeen;
      front.state.redirectTo = h.url;
      const r = await call(s.client, 'create_app_from_html', { appName: appName(), html: '<p>x</p>' });
      expect(r.isError).toBe(true);
      expect(text(r)).toMatch(
        /redirect \(HTTP 307 to http:\/\/127\.0\.0\.1:\d+\/api\/x402\/apps\); a paid call never follows one\. Nothing was signed or paid/,
      );
      expect(front.state.signaturesSeen).toBe(signatures);
    } finally {
      front.state.redirectTo = undefined;
      await s.close();
    }
  });
});
