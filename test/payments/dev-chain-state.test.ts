import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, describe, expect, it } from 'vitest';
import { startService, type RunningService } from '../../cli/server.js';
import { isDevFacilitator } from '../../service/payments/facilitator.js';
import { loadConfig } from '../../service/config.js';
import { loadWalletConfig } from '../../wallet/config.js';
import { createWallet } from '../../wallet/wallet.js';
import { freePort } from '../helpers/ports.js';

// `npm start` twice on the same data directory: the dev chain's state (test USDC, the token) is kept,
// its RPC address is the same, and wallets find it in the discovery document.
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-devchain-'));
let running: RunningService | undefined;
afterAll(async () => {
  await running?.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

async function start(port: number, chainPort: number): Promise<RunningService> {
  const config = loadConfig({
    PORT: String(port),
    SVC_HOST: '127.0.0.1',
    SVC_DATA_DIR: dataDir,
    SVC_BASE_URL: `http://127.0.0.1:${port}`,
    SVC_DEV_CHAIN_PORT: String(chainPort),
    SVC_LOG_LEVEL: 'silent',
  });
  return startService(config, { writeAdminFile: false });
}

describe('the dev chain survives restarts', () => {
  it('keeps balances and its RPC address, publishes the address in discovery, and the wallet reads the balance with no SVC_RPC_URL', async () => {
    const [port, chainPort] = [await freePort(), await freePort()];
    const key = generatePrivateKey();
    const payer = privateKeyToAccount(key);
    running = await start(port, chainPort);
    const first = running.runtime.deps.facilitator;
    if (!isDevFacilitator(first)) throw new Error('dev mode expected');
    await first.mint(payer.address, 2_500_000n);
    expect(running.payments).toContain(`127.0.0.1:${chainPort}`);
    await running.stop();

    running = await start(port, chainPort);
    const again = running.runtime.deps.facilitator;
    if (!isDevFacilitator(again)) throw new Error('dev mode expected');
    expect(await again.balanceOf(payer.address)).toBe(2_500_000n);

    const discovery = await (await fetch(`http://127.0.0.1:${port}/api/x402`)).json();
    expect(discovery.rpcUrl).toBe(`http://127.0.0.1:${chainPort}`);
    const wallet = createWallet(
      loadWalletConfig({ SVC_URL: `http://127.0.0.1:${port}`, SVC_WALLET_PRIVATE_KEY: key, SVC_SPEND_LEDGER: path.join(dataDir, 'ledger.json') }),
    );
    expect((await wallet.status()).balance).toBe('2.5');
  }, 120_000);
});
