import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const BIN = path.resolve('bin/svc.mjs');

// The service is stopped: each command opens the database itself (PGlite on disk), as an operator
// does on a stopped server. With the service running the same commands go through the admin
// endpoint (test/operator/takedowns.test.ts drives that endpoint).
describe('takedown and limits commands of the CLI (service stopped)', { timeout: 240_000 }, () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-operator-cli-'));
  const env = { ...process.env, SVC_DATA_DIR: dataDir, SVC_LOG_LEVEL: 'silent', PORT: '0', DATABASE_URL: '' };
  const cli = async (...args: string[]) => {
    const r = await run(process.execPath, [BIN, ...args], { env, timeout: 180_000 }).catch((e: { code: number; stdout: string; stderr: string }) => e);
    return { code: 'code' in r && typeof r.code === 'number' ? r.code : 0, stdout: r.stdout, stderr: r.stderr };
  };
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('sets an account’s limits, suspends it with a reason, lists the record; bad input exits 1 and changes nothing', async () => {
    expect((await cli('account', 'create', '--email', 'op@example.com')).code).toBe(0);

    const limits = await cli('account', 'limits', '--email', 'op@example.com', '--sites', '500', '--storage-mb', '2000', '--reason', 'paying customer');
    expect(limits.stderr).toBe('');
    expect(JSON.parse(limits.stdout)).toMatchObject({ changed: true, limits: { sites: 500, storageBytes: 2000 * 1024 * 1024 }, overrides: { sites: 500 } });

    const noReason = await cli('account', 'suspend', '--email', 'op@example.com');
    expect(noReason.code).toBe(1);
    expect(noReason.stderr).toMatch(/--reason is required/);
    const notANumber = await cli('account', 'limits', '--email', 'op@example.com', '--sites', 'lots');
    expect(notANumber.code).toBe(1);
    expect(notANumber.stderr).toMatch(/--sites must be a whole number/);
    const badWallet = await cli('wallet', 'block', '0x12', '--reason', 'spam campaign');
    expect(badWallet.code).toBe(1);
    expect(badWallet.stderr).toMatch(/not a wallet address/);

    const suspended = await cli('account', 'suspend', '--email', 'op@example.com', '--reason', 'spam campaign', '--by', 'frank');
    expect(suspended.code).toBe(0);
    expect(JSON.parse(suspended.stdout).account.suspensionReason).toBe('spam campaign');

    const audit = await cli('audit', 'list');
    expect(audit.code).toBe(0);
    const { entries } = JSON.parse(audit.stdout);
    expect(entries).toMatchObject([
      { action: 'account.suspend', actor: 'frank', reason: 'spam campaign', target: 'op@example.com' },
      { action: 'account.limits', actor: expect.stringMatching(/@.+ \(cli\)$/), reason: 'paying customer' },
    ]);
  });
});
