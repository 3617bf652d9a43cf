import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, describe, expect, it } from 'vitest';
import { startService, type RunningService } from '../../cli/server.js';
import { loadConfig } from '../../service/config.js';
import { lastGoodStatePath } from '../../service/payments/dev-chain/anvil.js';
import { DevChainFacilitator } from '../../service/payments/dev-chain/dev-facilitator.js';
import { freePort } from '../helpers/ports.js';
import { html, jsonInit, payV1 } from './helpers.js';

// anvil dies under a running service (killed by hand, OOM, a crash): the service starts it again from
// its saved state on the same port, and says "chain" (never "database") while it is down.
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-supervise-'));
let running: RunningService | undefined;
afterAll(async () => {
  await running?.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** Asks until `check` holds (each answer is a fresh request); fails after `limit` tries. */
async function until<T>(ask: () => Promise<T>, check: (v: T) => boolean, limit = 300): Promise<T> {
  for (let i = 0; ; i++) {
    const v = await ask();
    if (check(v) || i >= limit) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

const readyz = async (url: string) => {
  const res = await fetch(`${url}/readyz`);
  return { status: res.status, body: await res.json() };
};

describe('the dev chain is supervised', () => {
  it('anvil killed: /readyz says chain down and paid calls answer 503 naming the chain; it comes back on the same address with the balances it saved', async () => {
    const [port, chainPort] = [await freePort(), await freePort()];
    const config = loadConfig({
      PORT: String(port),
      SVC_HOST: '127.0.0.1',
      SVC_DATA_DIR: dataDir,
      SVC_BASE_URL: `http://127.0.0.1:${port}`,
      SVC_DEV_CHAIN_PORT: String(chainPort),
      SVC_LOG_LEVEL: 'silent',
    });
    running = await startService(config, { writeAdminFile: false });
    const chain = running.runtime.deps.facilitator;
    if (!(chain instanceof DevChainFacilitator)) throw new Error('dev mode expected');
    const payer = privateKeyToAccount(generatePrivateKey());
    await chain.mint(payer.address, 2_000_000n);
    // anvil writes its state every 5 s: wait for the write that holds the mint (the state file
    // changes), then for the service's complete copy of a write at least that recent.
    const statePath = path.join(dataDir, 'dev-chain', 'state.json');
    const mtime = (file: string) => (fs.existsSync(file) ? fs.statSync(file).mtimeMs : 0);
    const before = mtime(statePath);
    const written = await until(
      async () => mtime(statePath),
      (m) => m > before,
    );
    await until(
      async () => mtime(lastGoodStatePath(statePath)),
      (m) => m > written,
    );

    // Held down long enough to look at it (the default first retry is after 1 s).
    chain.restartDelayMs = 4000;
    const pid = chain.pid!;
    process.kill(pid, 'SIGKILL');
    // As if killed in the middle of a write: anvil writes its state in place, and refuses half a file.
    fs.writeFileSync(statePath, fs.readFileSync(statePath, 'utf8').slice(0, 100));

    const down = await until(
      () => readyz(running!.url),
      (r) => r.body.chain === 'down',
    );
    expect(down).toMatchObject({ status: 200, body: { ok: true, database: 'up', chain: 'down' } });

    const paid = await payV1(payer)(`${running.url}/api/x402/apps`, jsonInit('POST', { name: 'while-down', html: html('x') }));
    const refused = await paid.json();
    expect(paid.status).toBe(503);
    expect(paid.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(refused.error.message).toContain('dev chain (anvil');
    expect(refused.error.message).toContain('Nothing was charged');
    expect(refused.error.message).not.toContain('database');

    const up = await until(
      () => readyz(running!.url),
      (r) => r.body.chain === 'up',
    );
    expect(up.body.chain).toBe('up');
    expect(chain.pid).not.toBe(pid);
    expect(chain.rpcUrl).toBe(`http://127.0.0.1:${chainPort}`);
    expect(await chain.balanceOf(payer.address)).toBe(2_000_000n);

    const again = await payV1(payer)(`${running.url}/api/x402/apps`, jsonInit('POST', { name: 'after-restart', html: html('y') }));
    const body = await again.json();
    expect(again.ok, JSON.stringify(body)).toBe(true);
    expect(body.receipt).toMatchObject({ status: 'settled', price: '0.007' });
    expect(await chain.balanceOf(payer.address)).toBe(2_000_000n - 7_000n);
  }, 120_000);
});
