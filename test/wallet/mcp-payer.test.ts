import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mountHostedMcp } from '../../cli/hosted-mcp.js';
import { loadWalletConfig } from '../../wallet/config.js';
import { isWalletError } from '../../wallet/errors.js';
import { callPaidTool } from '../../wallet/mcp-payer.js';
import { createWallet } from '../../wallet/wallet.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { devChain, html } from '../payments/helpers.js';

// Our wallet paying an MCP server over x402 `_meta`: the hosted svc endpoint, on the dev chain, with
// the same caps and ledger as HTTP payments.
let h: Harness;
let key: string;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-mcp-payer-'));
beforeAll(async () => {
  h = await startHarness('pglite', { SVC_X402_MODE: 'dev' }, { mount: (app, deps) => mountHostedMcp(app, deps) });
  key = (await h.account()).key;
}, 120_000);
afterAll(async () => {
  await h?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function setup(caps: Record<string, string> = {}) {
  const pk = generatePrivateKey();
  const address = privateKeyToAccount(pk).address;
  await devChain(h).mint(address, 1_000_000n);
  const wallet = createWallet(loadWalletConfig({ SVC_URL: h.url, SVC_WALLET_PRIVATE_KEY: pk, SVC_SPEND_LEDGER: path.join(dir, `${address}.json`), ...caps }));
  const client = new Client({ name: 'payer', version: '1' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${h.url}/mcp?toolsets=apps`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }),
  );
  return { wallet, client, address };
}

let n = 0;
const create = () => ({ name: 'create_app_from_html', arguments: { appName: `paid-by-wallet-${Date.now()}-${++n}`, html: html('w') }, quote: '0.007' });

describe('wallet pays MCP tools over x402 _meta', () => {
  it('pays the price exactly once, commits the ledger entry with the transaction', async () => {
    const { wallet, client, address } = await setup();
    const before = await devChain(h).balanceOf(address);
    const { result, entry } = await callPaidTool(wallet, client, create());
    expect(result.isError).toBeFalsy();
    expect(entry).toMatchObject({ status: 'committed', amount: '7000', action: 'create_app_from_html' });
    expect(entry?.txHash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(before - (await devChain(h).balanceOf(address))).toBe(7000n);
    await client.close();
  });

  it('refuses a price above the quote before signing: nothing reserved, nothing paid', async () => {
    const { wallet, client, address } = await setup();
    const before = await devChain(h).balanceOf(address);
    const err = await callPaidTool(wallet, client, { ...create(), quote: '0.005' }).catch((e) => e);
    expect(isWalletError(err) && err.code).toBe('price_drift');
    expect(await wallet.ledger.entries()).toHaveLength(0);
    expect(await devChain(h).balanceOf(address)).toBe(before);
    await client.close();
  });

  it('concurrent calls cannot pass the session cap together: exactly N of 2N are paid', async () => {
    const { wallet, client, address } = await setup({ SVC_MAX_USDC_PER_SESSION: '0.021' });
    const before = await devChain(h).balanceOf(address);
    const outcomes = await Promise.allSettled(Array.from({ length: 6 }, () => callPaidTool(wallet, client, create())));
    const paid = outcomes.filter((o) => o.status === 'fulfilled' && !o.value.result.isError);
    const capped = outcomes.filter((o) => o.status === 'rejected' && isWalletError(o.reason) && o.reason.code === 'cap_exceeded');
    expect(paid).toHaveLength(3);
    expect(capped).toHaveLength(3);
    expect(before - (await devChain(h).balanceOf(address))).toBe(21_000n);
    await client.close();
  });

  it("concurrent calls cannot pass the tool's cap or the hour's calls together (SVC_MAX_USDC_PER_TOOL, SVC_MAX_PAID_CALLS_PER_HOUR)", async () => {
    const perTool = await setup({ SVC_MAX_USDC_PER_TOOL: 'create_app_from_html=0.014' });
    const perHour = await setup({ SVC_MAX_PAID_CALLS_PER_HOUR: '1' });
    for (const [{ wallet, client, address }, paidCount, setting] of [
      [perTool, 2, 'SVC_MAX_USDC_PER_TOOL'],
      [perHour, 1, 'SVC_MAX_PAID_CALLS_PER_HOUR'],
    ] as const) {
      const before = await devChain(h).balanceOf(address);
      const outcomes = await Promise.allSettled(Array.from({ length: 4 }, () => callPaidTool(wallet, client, create())));
      const paid = outcomes.filter((o) => o.status === 'fulfilled' && !o.value.result.isError);
      const capped = outcomes.flatMap((o) =>
        o.status === 'rejected' && isWalletError(o.reason) && o.reason.code === 'cap_exceeded' ? [o.reason.message] : [],
      );
      expect(paid, setting).toHaveLength(paidCount);
      expect(capped, setting).toHaveLength(4 - paidCount);
      for (const message of capped) expect(message).toContain(setting);
      expect(before - (await devChain(h).balanceOf(address)), setting).toBe(BigInt(paidCount) * 7000n);
      await client.close();
    }
  });
});
