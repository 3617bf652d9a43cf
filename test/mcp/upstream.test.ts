import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mountHostedMcp } from '../../cli/hosted-mcp.js';
import { DATA_ICONS } from '../../mcp/icons.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { devChain, html } from '../payments/helpers.js';
import { call, connectStdio, text } from './helpers.js';

// svc-mcp pointed at a hosted svc's /mcp (SVC_TRANSPORT=mcp), as a user runs it: the remote tools are
// forwarded, and a paid one is paid by the local wallet over x402 `_meta`, within the local caps.
let h: Harness;
let key: string;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-upstream-'));
beforeAll(async () => {
  h = await startHarness('pglite', { SVC_X402_MODE: 'dev' }, { mount: (app, deps) => mountHostedMcp(app, deps) });
  key = (await h.account(['svc.sites.read', 'svc.publish'])).key;
}, 120_000);
afterAll(async () => {
  await h?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** The real svc-mcp over stdio in front of the hosted service, with a new wallet holding 1 test USDC. */
async function svcMcpWithFundedWallet(ledger: string, env: Record<string, string>) {
  const pk = generatePrivateKey();
  const account = privateKeyToAccount(pk);
  await devChain(h).mint(account.address, 1_000_000n);
  const client = await connectStdio({
    SVC_URL: h.url,
    SVC_TRANSPORT: 'mcp',
    SVC_WALLET_PRIVATE_KEY: pk,
    SVC_SPEND_LEDGER: path.join(dir, ledger),
    ...env,
  });
  return { account, client };
}

describe('svc-mcp with SVC_TRANSPORT=mcp', () => {
  it('lists the remote tools beside the wallet tools, pays a paid one once from the local wallet, and keeps the caps', async () => {
    const { account, client } = await svcMcpWithFundedWallet('ledger.json', {
      SVC_API_KEY: key,
      SVC_MAX_USDC_TOTAL: '0.01',
      SVC_TOOLSETS: 'apps,wallet,account',
    });
    try {
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(['create_app_from_html', 'list_apps', 'account_list_apps', 'wallet_status', 'list_receipts']));
      // The hosted endpoint names its icons by URL on its origin; svc-mcp (stdio, no origin) lists the same ones as data: URIs.
      for (const t of tools) expect(t.icons?.[0]?.src, t.name).toMatch(/^data:image\/svg\+xml;base64,/);
      expect(tools.find((t) => t.name === 'account_list_apps')?.icons).toEqual(DATA_ICONS.toolsets.account);
      expect(names).toContain('deploy_site'); // local files, paid over the same service's HTTP Agent API
      expect(names).not.toContain('table_query'); // tables toolset not chosen

      const before = await devChain(h).balanceOf(account.address);
      const created = await call(client, 'create_app_from_html', { appName: `via-mcp-${Date.now()}`, html: html('over mcp') });
      expect(created.isError, text(created)).toBeFalsy();
      expect(text(created)).toMatch(/^Paid 0\.007 USDC from the wallet \(tx 0x[0-9a-f]{64}\)/);
      const app = (created.structuredContent as { app: { pathUrl: string } }).app;
      expect(await (await fetch(app.pathUrl)).text()).toContain('over mcp');
      expect(before - (await devChain(h).balanceOf(account.address))).toBe(7000n);

      const receipts = await call(client, 'list_receipts', {});
      expect(receipts.structuredContent).toMatchObject({ count: 1, receipts: [{ tool: 'create_app_from_html', price: '0.007', status: 'committed' }] });

      // 0.007 spent of a 0.01 total cap: the next 0.007 is refused before anything is signed.
      const refused = await call(client, 'create_app_from_html', { appName: `over-cap-${Date.now()}`, html: html('no') });
      expect(refused.isError).toBe(true);
      expect(text(refused)).toMatch(/cap/i);
      expect(before - (await devChain(h).balanceOf(account.address))).toBe(7000n);

      // A free Account API tool goes through with the key, no payment.
      const mine = await call(client, 'account_list_apps', {});
      expect(mine.isError, text(mine)).toBeFalsy();
    } finally {
      await client.close();
    }
  });

  it('without SVC_API_KEY uses /mcp/x402: the wallet alone is the caller, with no Account API tools', async () => {
    const { account, client } = await svcMcpWithFundedWallet('wallet-only-ledger.json', { SVC_TOOLSETS: 'all' });
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(['create_app_from_html', 'list_apps', 'table_query', 'wallet_status']));
      expect(names.filter((n) => n.startsWith('account_') || n.startsWith('function_'))).toEqual([]);
      const before = await devChain(h).balanceOf(account.address);
      const appName = `wallet-only-${Date.now()}`;
      const created = await call(client, 'create_app_from_html', { appName, html: html('no account') });
      expect(created.isError, text(created)).toBeFalsy();
      expect(before - (await devChain(h).balanceOf(account.address))).toBe(7000n);
      const mine = await call(client, 'list_apps', {});
      expect(mine.isError, text(mine)).toBeFalsy();
      expect(JSON.stringify(mine.structuredContent)).toContain(appName);

      // The composites run here too: deploy_site reads the files, pays each step from the same wallet
      // within the same ledger, and the app is the wallet's, beside the one made over MCP.
      const deployed = await call(client, 'deploy_site', {
        files: [
          { path: 'index.html', content: html('deployed over mcp') },
          { path: 'css/a.css', content: 'h1{}' },
        ],
      });
      expect(deployed.isError, text(deployed)).toBeFalsy();
      const site = deployed.structuredContent as { appName: string; pathUrl: string; paid: string };
      expect(site.paid).toBe('0.011');
      expect(before - (await devChain(h).balanceOf(account.address))).toBe(18_000n);
      expect(await (await fetch(site.pathUrl)).text()).toContain('deployed over mcp');
      expect(await (await fetch(`${site.pathUrl}css/a.css`)).text()).toBe('h1{}');
      const both = JSON.stringify((await call(client, 'list_apps', {})).structuredContent);
      expect(both).toContain(appName);
      expect(both).toContain(site.appName);
      const spent = (await call(client, 'wallet_status', {})).structuredContent as { spent: { session: string } };
      expect(spent.spent.session).toBe('0.018');
    } finally {
      await client.close();
    }
  });
});
