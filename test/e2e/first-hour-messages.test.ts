import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';

// What a newcomer reads when something is missing: the field that is required, the command that
// works here (in a clone: npm run svc --).
let h: Harness;
beforeAll(async () => {
  h = await startHarness('pglite');
}, 120_000);
afterAll(async () => h?.close());

describe('messages of the first hour', () => {
  it('a publish without requestId says it is required, not "expected string, received undefined"', async () => {
    const { key } = await h.account();
    const res = await h.fetch('/api/v1/sites', { method: 'POST', key, json: { html: '<h1>Hi</h1>', slug: 'no-request-id' } });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.error.details.issues).toContainEqual({ field: 'requestId', message: 'required (string), missing' });
    expect(body.error.message).not.toContain('received undefined');
  });

  it('a key for an unknown email names the command that creates the account, as it runs in this clone', () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-messages-'));
    try {
      const r = spawnSync(process.execPath, ['bin/svc.mjs', 'key', 'create', '--email', 'nobody@example.com', '--all-scopes'], {
        env: { ...process.env, SVC_DATA_DIR: dataDir, SVC_LOG_LEVEL: 'silent', PORT: '0', DATABASE_URL: '' },
        encoding: 'utf8',
        timeout: 90_000,
      });
      expect(r.status).toBe(1);
      expect(r.stderr).toContain('create it first: npm run svc -- account create --email nobody@example.com');
      expect(fs.existsSync(path.join(dataDir, 'serve.lock'))).toBe(false); // the CLI's hold on the folder ends with it
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
