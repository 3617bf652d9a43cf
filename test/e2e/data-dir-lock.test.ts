import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNode, type ServiceNode } from '../helpers/nodes.js';
import { freePort } from '../helpers/ports.js';
import { html, jsonInit, payV1 } from '../payments/helpers.js';

// A newcomer runs `npm start` a second time while the first runs. The second exits at once, naming
// the running one, and the first is untouched: its dev chain still settles payments.
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-lock-'));
const otherDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-lock-other-'));
let first: ServiceNode;

function serve(env: Record<string, string>) {
  const r = spawnSync(process.execPath, ['bin/svc.mjs', 'serve'], {
    env: { ...process.env, DATABASE_URL: '', SVC_MCP_PORT: 'off', SVC_LOG_LEVEL: 'info', ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: r.status, stderr: r.stderr };
}

function cli(args: string[]) {
  const r = spawnSync(process.execPath, ['bin/svc.mjs', ...args], {
    env: { ...process.env, DATABASE_URL: '', SVC_DATA_DIR: dataDir, SVC_LOG_LEVEL: 'warn' },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

beforeAll(async () => {
  first = await startNode('', { SVC_DATA_DIR: dataDir });
}, 120_000);
afterAll(async () => {
  await first?.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
  fs.rmSync(otherDir, { recursive: true, force: true });
});

describe('one service per data folder; a second start harms nothing', () => {
  it('a second serve on the same folder exits at once naming the running one (pid, URL) and how to start another', async () => {
    const port = await freePort();
    const second = serve({ SVC_DATA_DIR: dataDir, PORT: String(port), SVC_DEV_CHAIN_PORT: '0' });
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`svc is already running on this data folder (${dataDir}): pid ${first.child.pid}, ${first.url}`);
    expect(second.stderr).toContain('the running service is untouched');
    expect(second.stderr).toMatch(/another service beside it, give it its own folder and port: PORT=\d+ SVC_DATA_DIR=/);
    expect(second.stderr).toContain('npm run svc -- account create'); // the command that works in this clone
    expect(second.stderr).not.toContain('dev chain'); // nothing was started
  }, 90_000);

  it('a second serve on the same port (another folder) exits at once naming the process that holds it', () => {
    const port = new URL(first.url).port;
    const second = serve({ SVC_DATA_DIR: otherDir, PORT: port, SVC_DEV_CHAIN_PORT: '0' });
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`port ${port} is taken by pid ${first.child.pid}`);
    expect(second.stderr).toContain('that process is untouched');
    expect(second.stderr).not.toContain('dev chain');
    expect(fs.readdirSync(otherDir)).not.toContain('db'); // no database was opened there
  }, 90_000);

  it('after both, the first service still settles a paid call and its /readyz says the chain is up', async () => {
    const payer = privateKeyToAccount(generatePrivateKey());
    const minted = cli(['faucet', payer.address, '1']);
    expect(minted.stderr).toBe('');
    expect(JSON.parse(minted.stdout)).toMatchObject({ minted: '1', balance: '1' });
    const res = await payV1(payer)(`${first.url}/api/x402/apps`, jsonInit('POST', { name: 'still-here', html: html('Still here') }));
    const body = await res.json();
    expect(res.ok, JSON.stringify(body)).toBe(true);
    expect(body.receipt).toMatchObject({ action: 'x402.create_app_from_html', price: '0.007', status: 'settled' });
    const ready = await (await fetch(`${first.url}/readyz`)).json();
    expect(ready).toMatchObject({ ok: true, database: 'up', chain: 'up' });
  }, 90_000);

  it('a CLI command while the service runs goes through it; with the folder free again, serve starts', async () => {
    const made = cli(['account', 'create', '--email', 'lock@example.com']);
    expect(made.code).toBe(0);
    await first.stop();
    expect(fs.existsSync(path.join(dataDir, 'serve.lock'))).toBe(false);
    first = await startNode('', { SVC_DATA_DIR: dataDir });
    expect((await fetch(`${first.url}/readyz`)).status).toBe(200);
  }, 120_000);
});
