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

interface ChildResult {
  paid: number;
  capped: number;
  refusals: string[];
}

/** One payer process: `count` concurrent calls of create_app_from_html (counted toward `tool`'s cap when given), with `env` on top of the shared wallet. */
function child(ledgerPath: string, env: Record<string, string>, count: number, tool?: string): Promise<ChildResult> {
  const script = path.resolve(import.meta.dirname, 'pay-from-child.ts');
  const all = { ...process.env, SVC_URL: server.url, SVC_WALLET_PRIVATE_KEY: payerKey, SVC_SPEND_LEDGER: ledgerPath, ...env };
  return new Promise((resolve, reject) =>
    execFile(process.execPath, ['--import', 'tsx', script, server.url, String(count), ...(tool ? [tool] : [])], { env: all }, (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout)),
    ),
  );
}

const entriesOf = (ledgerPath: string) => JSON.parse(fs.readFileSync(ledgerPath, 'utf8')).entries as { status: string; tool?: string }[];

it('two processes sharing one ledger file never pass the daily cap together', async () => {
  const ledgerPath = path.join(dir, 'shared.json');
  const settledBefore = server.state.settled.length;
  const [a, b] = await Promise.all([child(ledgerPath, { SVC_MAX_USDC_PER_DAY: '0.021' }, 3), child(ledgerPath, { SVC_MAX_USDC_PER_DAY: '0.021' }, 3)]);
  expect(a.paid + b.paid).toBe(3);
  expect(a.capped + b.capped).toBe(3);
  expect(server.state.settled.length - settledBefore).toBe(3);
  expect(entriesOf(ledgerPath).filter((e) => e.status === 'committed')).toHaveLength(3);
  expect(fs.existsSync(`${ledgerPath}.lock`)).toBe(false);
}, 60_000);

it("two processes never pass a tool's cap (SVC_MAX_USDC_PER_TOOL) together; another tool still pays", async () => {
  const ledgerPath = path.join(dir, 'per-tool.json');
  // 0.021 for deploy_site's payments over 24 h: three of 0.007, whichever process makes them.
  const env = { SVC_MAX_USDC_PER_TOOL: 'deploy_site=0.021,upload_dataset=0.05' };
  const settledBefore = server.state.settled.length;
  const [a, b] = await Promise.all([child(ledgerPath, env, 3, 'deploy_site'), child(ledgerPath, env, 3, 'deploy_site')]);
  expect(a.paid + b.paid).toBe(3);
  expect(a.capped + b.capped).toBe(3);
  for (const refusal of [...a.refusals, ...b.refusals]) {
    expect(refusal).toContain('the deploy_site rolling 24-hour cap is 0.021 USDC and 0 USDC of it is left. Nothing was paid.');
    expect(refusal).toContain('raise deploy_site in SVC_MAX_USDC_PER_TOOL');
  }
  // The day's other caps are far: the tool's cap refused them, and another tool's calls still pay.
  const other = await child(ledgerPath, env, 1, 'upload_dataset');
  expect(other).toMatchObject({ paid: 1, capped: 0 });
  expect(server.state.settled.length - settledBefore).toBe(4);
  expect(
    entriesOf(ledgerPath)
      .filter((e) => e.status === 'committed')
      .map((e) => e.tool)
      .sort(),
  ).toEqual(['deploy_site', 'deploy_site', 'deploy_site', 'upload_dataset']);
}, 60_000);

it('two processes never sign more payments in an hour than SVC_MAX_PAID_CALLS_PER_HOUR together', async () => {
  const ledgerPath = path.join(dir, 'per-hour.json');
  const env = { SVC_MAX_PAID_CALLS_PER_HOUR: '4' };
  const settledBefore = server.state.settled.length;
  const [a, b] = await Promise.all([child(ledgerPath, env, 3), child(ledgerPath, env, 3)]);
  expect(a.paid + b.paid).toBe(4);
  expect(a.capped + b.capped).toBe(2);
  for (const refusal of [...a.refusals, ...b.refusals]) {
    expect(refusal).toMatch(
      /the paid-calls-per-hour limit is 4, with 0 left in the last hour\. Nothing was paid\. The next payment may be signed after \d{4}-\d\d-\d\dT/,
    );
    expect(refusal).toContain('SVC_MAX_PAID_CALLS_PER_HOUR');
  }
  expect(server.state.settled.length - settledBefore).toBe(4);
  expect(entriesOf(ledgerPath)).toHaveLength(4);
}, 60_000);
