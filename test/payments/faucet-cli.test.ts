import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createPublicClient, http, parseAbi } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { USDC_ADDRESS } from '../../shared/agent-api/network.js';
import { startNode, type ServiceNode } from '../helpers/nodes.js';

const ADDRESS = '0x000000000000000000000000000000000000dEaD';

function cli(args: string[], env: Record<string, string>) {
  const r = spawnSync(process.execPath, ['bin/svc.mjs', ...args], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('svc faucet <address> <usdc> (the real CLI against a running `svc serve`)', () => {
  let node: ServiceNode;
  let env: Record<string, string>;
  beforeAll(async () => {
    env = { SVC_DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'svc-faucet-')), SVC_LOG_LEVEL: 'warn' };
    // Not running yet: a clear refusal, non-zero exit.
    const early = cli(['faucet', ADDRESS, '1'], env);
    expect(early.stderr).toContain('start it first');
    expect(early.code).not.toBe(0);
    node = await startNode('', env);
  });
  afterAll(async () => {
    await node?.stop();
    fs.rmSync(env.SVC_DATA_DIR!, { recursive: true, force: true });
  });

  it('mints test USDC on the running dev chain; the balance is on chain', async () => {
    const r = cli(['faucet', ADDRESS, '2.5'], env);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ address: ADDRESS, minted: '2.5', balance: '2.5' });
    const client = createPublicClient({ transport: http(out.rpcUrl) });
    const balance = await client.readContract({
      address: USDC_ADDRESS,
      abi: parseAbi(['function balanceOf(address) view returns (uint256)']),
      functionName: 'balanceOf',
      args: [ADDRESS],
    });
    expect(balance).toBe(2_500_000n);
    const tx = await client.getTransactionReceipt({ hash: out.txHash });
    expect(tx.status).toBe('success');
  });

  it('refuses outside dev-chain mode with a clear message and a non-zero exit', () => {
    const r = cli(['faucet', ADDRESS, '1'], { ...env, SVC_X402_MODE: 'remote', SVC_X402_FACILITATOR_URL: 'http://127.0.0.1:9', SVC_X402_RECIPIENT: ADDRESS });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('only works with the local dev chain');
  });

  it('refuses a bad address or amount', () => {
    expect(cli(['faucet', '0x1234', '1'], env).stderr).toContain('not a 0x address');
    const tiny = cli(['faucet', ADDRESS, '0.0000001'], env);
    expect(tiny.code).toBe(1);
    expect(tiny.stderr).toContain('at most 6 decimals');
  });
});
