import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startFakeX402 } from './fake-x402-server.js';

// Spawns two payer processes: one of the process suites (vitest.config.ts), outside the fast tier.
const PRICE = 7000n; // 0.007 USDC
const payerKey = generatePrivateKey();
let server: Awaited<ReturnType<typeof startFakeX402>>;
let dir: string;

beforeAll(async () => {
  server = await startFakeX402({ recipient: privateKeyToAccount(generatePrivateKey()).address, price: PRICE });
  server.state.balances.set(privateKeyToAccount(payerKey).address, 1_000_000n);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-wallet-processes-'));
});
afterAll(() => {
  server.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

it('two processes sharing one ledger file never pass the daily cap together', async () => {
  const ledgerPath = path.join(dir, 'shared.json');
  const env = { ...process.env, SVC_URL: server.url, SVC_WALLET_PRIVATE_KEY: payerKey, SVC_SPEND_LEDGER: ledgerPath, SVC_MAX_USDC_PER_DAY: '0.021' };
  const script = path.resolve(import.meta.dirname, 'pay-from-child.ts');
  const child = () =>
    new Promise<{ paid: number; capped: number }>((resolve, reject) =>
      execFile(process.execPath, ['--import', 'tsx', script, server.url, '3'], { env }, (err, stdout, stderr) =>
        err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout)),
      ),
    );
  const [a, b] = await Promise.all([child(), child()]);
  expect(a.paid + b.paid).toBe(3);
  expect(a.capped + b.capped).toBe(3);
  expect(server.state.settled).toHaveLength(3);
  const entries = JSON.parse(fs.readFileSync(ledgerPath, 'utf8')).entries as { status: string; pid: number }[];
  expect(entries.filter((e) => e.status === 'committed')).toHaveLength(3);
  expect(fs.existsSync(`${ledgerPath}.lock`)).toBe(false);
}, 60_000);
