import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { packagePath } from '../../service/kernel/package-root.js';
import { freePort } from '../helpers/ports.js';

// A service whose log stream is gone (its terminal closed, the pipe's reader exited) still stops when
// asked: before, each failed log write became an uncaught exception whose own log line failed again,
// a loop at full CPU that never let SIGTERM's shutdown run.
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-lost-log-'));
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

describe('svc serve with its stderr gone', () => {
  it('stops on SIGTERM, exit 0', async () => {
    const port = await freePort();
    const svc = spawn(process.execPath, ['bin/svc.mjs', 'serve'], {
      cwd: packagePath(),
      env: { ...process.env, PORT: String(port), SVC_DATA_DIR: dataDir, SVC_MCP_PORT: 'off', SVC_DEV_CHAIN_PORT: '0', DATABASE_URL: '' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let log = '';
    await new Promise<void>((resolve, reject) => {
      svc.stderr!.on('data', (d: Buffer) => {
        log += d.toString();
        if (log.includes('Next steps')) resolve();
      });
      svc.once('exit', (code) => reject(new Error(`svc serve exited (${code}):\n${log}`)));
    });
    svc.stderr!.destroy(); // the reader goes: the next log line fails with EPIPE
    const exited = new Promise<number | null>((resolve) => svc.once('exit', (code) => resolve(code)));
    svc.kill('SIGTERM'); // its shutdown logs ("stopping…") into the broken pipe
    const code = await Promise.race([exited, new Promise<'still running'>((r) => setTimeout(() => r('still running'), 20_000))]);
    if (code === 'still running') svc.kill('SIGKILL');
    expect(code).toBe(0);
  }, 60_000);
});
