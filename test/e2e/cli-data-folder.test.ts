import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';

// A newcomer runs the CLI in another terminal without the running service's SVC_DATA_DIR: it used to
// create ./.svc and an account there, and the key it printed got a bare "invalid credential".
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-cli-folder-'));
let h: Harness;
let port: string;
beforeAll(async () => {
  h = await startHarness('pglite');
  port = new URL(h.url).port;
});
afterAll(async () => {
  await h?.close();
  fs.rmSync(root, { recursive: true, force: true });
});

const cli = (dataDir: string, ...args: string[]) =>
  promisify(execFile)(process.execPath, [path.resolve('bin/svc.mjs'), ...args], {
    env: { ...process.env, SVC_DATA_DIR: dataDir, PORT: port, DATABASE_URL: '', SVC_LOG_LEVEL: 'silent' },
  }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => e,
  );

describe('the CLI on a data folder that is not the running service’s', () => {
  it('a folder that does not exist is refused, not created, and the service answering on the port is named', async () => {
    const missing = path.join(root, 'no-such-folder');
    const r = await cli(missing, 'account', 'create', '--email', 'new@example.com');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `svc: no data folder at ${missing} (SVC_DATA_DIR, default ./.svc of the current folder): no service has used it, and nothing was done.`,
    );
    expect(r.stderr).toContain(
      `A service answers at http://127.0.0.1:${port}, but it keeps its data in another folder: run this command with its SVC_DATA_DIR.`,
    );
    expect(fs.existsSync(missing)).toBe(false);
  }, 120_000);

  it('in another existing folder it says the service does not hold it; the key it makes there is refused naming the usual causes', async () => {
    const other = fs.mkdtempSync(path.join(root, 'other-'));
    const made = await cli(other, 'account', 'create', '--email', 'elsewhere@example.com');
    expect(made.code).toBe(0);
    expect(made.stderr).toContain(`svc: note: the service at http://127.0.0.1:${port} does not hold ${other}`);
    const key = await cli(other, 'key', 'create', '--email', 'elsewhere@example.com', '--all-scopes');
    const { secret } = JSON.parse(key.stdout) as { secret: string };
    expect(secret).toMatch(/^svc_pat_/);
    const res = await h.fetch('/api/v1/sites', { key: secret });
    expect(res.status).toBe(401);
    expect((await res.json()).error.message).toBe(
      `invalid credential: ${h.url} knows no such key or token. The usual causes: a key made by the CLI on another data folder (SVC_DATA_DIR) ` +
        'or database (DATABASE_URL) than this service uses: make it again where the service runs, with its settings; a key of another svc ' +
        '(another URL or port); a key cut short when copied. A revoked or expired key is named as such',
    );
  }, 120_000);
});
