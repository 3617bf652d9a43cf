import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startAnvil } from '../../service/payments/dev-chain/anvil.js';
import { packagePath } from '../../service/kernel/package-root.js';

// A service killed with SIGKILL runs no exit hook, so its dev chain (anvil) keeps running, holding
// the port and the state file. The next start on the same data directory stops it first.
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-anvil-orphan-'));
const statePath = path.join(dir, 'dev-chain', 'state.json');
const running = (pid: number) => {
  try {
    process.kill(pid, 0);
    return !fs.readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');
  } catch {
    return false;
  }
};
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe.skipIf(!fs.existsSync('/proc/self/cmdline'))('dev chain left behind by a killed service', () => {
  it('is stopped by the next start on the same state file, which then starts its own', async () => {
    const script = `import { startAnvil } from ${JSON.stringify(packagePath('service', 'payments', 'dev-chain', 'anvil.ts'))}; const a = await startAnvil({ statePath: ${JSON.stringify(statePath)} }); console.log('pid ' + a.pid); setInterval(() => {}, 1000);`;
    const owner = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const orphan = await new Promise<number>((resolve, reject) => {
      let out = '';
      owner.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /pid (\d+)/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      owner.once('exit', (code) => reject(new Error(`owner exited ${code}`)));
    });
    owner.kill('SIGKILL');
    await new Promise((r) => owner.once('exit', r));
    expect(running(orphan), 'anvil outlives a SIGKILLed owner').toBe(true);

    const anvil = await startAnvil({ statePath });
    try {
      expect(running(orphan)).toBe(false);
      expect(anvil.pid).not.toBe(orphan);
      const res = await fetch(anvil.rpcUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
      });
      expect(((await res.json()) as { result: string }).result).toBe('0x2105');
      expect(fs.readFileSync(path.join(dir, 'dev-chain', 'anvil.pid'), 'utf8')).toBe(String(anvil.pid));
    } finally {
      await anvil.stop();
    }
    expect(fs.existsSync(path.join(dir, 'dev-chain', 'anvil.pid'))).toBe(false);
  });
});
