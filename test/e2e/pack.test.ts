import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/ports.js';

// What a user gets from the registry: `npm pack`, installed into an empty prefix, and its bins run.
// The install needs the npm registry for the dependencies (CI has it); without it the suite says so.
const root = path.resolve(import.meta.dirname, '../..');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-pack-'));
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { name: string; version: string; bin: Record<string, string> };
const registryAnswers = spawnSync('npm', ['ping'], { encoding: 'utf8', timeout: 20_000 }).status === 0;
let child: ReturnType<typeof spawn> | undefined;

afterAll(() => {
  child?.kill('SIGTERM');
  fs.rmSync(work, { recursive: true, force: true });
});

describe.skipIf(!registryAnswers)('the packed package installs by name and runs (needs the npm registry)', () => {
  it('npm pack → npm install -g into an empty prefix → svc-mcp --help, svc-agent-host --help, svc-agent-host serve', async () => {
    expect(pkg.name).toBe('svc-agent-host');
    expect(Object.keys(pkg.bin).sort()).toEqual(['svc-agent-host', 'svc-mcp']);
    const packed = spawnSync('npm', ['pack', '--silent', '--pack-destination', work], { cwd: root, encoding: 'utf8' });
    expect(packed.status, packed.stderr).toBe(0);
    const tarball = path.join(work, packed.stdout.trim().split('\n').pop()!);
    const prefix = path.join(work, 'prefix');
    const install = spawnSync('npm', ['install', '-g', '--prefix', prefix, '--no-audit', '--no-fund', '--prefer-offline', tarball], {
      encoding: 'utf8',
      timeout: 600_000,
    });
    expect(install.status, install.stderr.slice(-2000)).toBe(0);
    const bin = (name: string) => path.join(prefix, 'bin', name);
    // The packed files carry no tests or benches.
    const installed = path.join(prefix, 'lib', 'node_modules', pkg.name);
    expect(fs.existsSync(path.join(installed, 'test'))).toBe(false);
    // Nor an x402 v1 client with its browser-wallet stack (wagmi, WalletConnect, Solana: ~600 MB): the
    // wallet signs its payments itself (wallet/wallet.ts).
    for (const heavy of ['x402', 'x402-fetch', 'wagmi', '@reown', '@walletconnect', '@solana'])
      expect(fs.existsSync(path.join(installed, 'node_modules', heavy)), heavy).toBe(false);

    const mcpHelp = spawnSync(bin('svc-mcp'), ['--help'], { encoding: 'utf8', timeout: 60_000 });
    expect(mcpHelp.status).toBe(0);
    expect(mcpHelp.stderr).toContain('svc-mcp --http');
    const cliHelp = spawnSync(bin('svc-agent-host'), ['--help'], { encoding: 'utf8', timeout: 60_000 });
    expect(cliHelp.status, cliHelp.stderr).toBe(0);
    expect(cliHelp.stdout + cliHelp.stderr).toContain('svc-agent-host serve');

    const port = await freePort();
    const dataDir = path.join(work, 'data');
    child = spawn(bin('svc-agent-host'), ['serve'], {
      cwd: work,
      env: { PATH: process.env.PATH ?? '', HOME: work, PORT: String(port), SVC_DATA_DIR: dataDir, SVC_MCP_PORT: 'off', SVC_LOG_LEVEL: 'silent' },
      stdio: 'ignore',
    });
    const deadline = Date.now() + 120_000;
    let status = 0;
    while (Date.now() < deadline) {
      status = await fetch(`http://127.0.0.1:${port}/api/v1`).then(
        (r) => r.status,
        () => 0,
      );
      if (status === 200) break;
      await new Promise((r) => setTimeout(r, 300));
    }
    expect(status).toBe(200);
    // The installed service serves its own svc-mcp package (dist/ is in the packed files).
    const svcMcp = await fetch(`http://127.0.0.1:${port}/mcp/svc-mcp.tgz`);
    expect(svcMcp.status).toBe(200);
    expect(svcMcp.headers.get('content-type')).toBe('application/gzip');
  }, 900_000);
});
