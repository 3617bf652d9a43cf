import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { packagePath } from '../../service/kernel/package-root.js';
import { freePort } from '../helpers/ports.js';

// `npm start` is npm → node (svc) → anvil. A signal sent to npm's own process (what a process manager,
// a closed terminal or `kill <pid>` does) stops all of them: no orphan keeps the ports.
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-signals-'));
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return !fs.readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');
  } catch {
    return false;
  }
};

const portFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });

/** Asks until `check` holds; false after `limit` tries. */
async function eventually(check: () => boolean | Promise<boolean>, limit = 400): Promise<boolean> {
  for (let i = 0; i < limit; i++) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

const stateOf = (pid: number) => {
  try {
    return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').trim();
  } catch {
    return 'gone';
  }
};

/** `npm start` on fresh ports, its output gathered in `log()`. */
async function npmStart() {
  const [port, chainPort] = [await freePort(), await freePort()];
  const npm = spawn('npm', ['start'], {
    cwd: packagePath(),
    env: { ...process.env, PORT: String(port), SVC_DATA_DIR: dataDir, SVC_MCP_PORT: 'off', SVC_DEV_CHAIN_PORT: String(chainPort), DATABASE_URL: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  npm.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  npm.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const exited = new Promise<never>((_, reject) => npm.once('exit', (code) => reject(new Error(`npm start exited (${code}):\n${log}`))));
  exited.catch(() => {});
  /** Resolves once `check` holds, rejects if npm exits first. */
  const until = (check: () => boolean) => Promise.race([exited, eventually(check, 1200).then((ok) => expect(ok, log).toBe(true))]);
  return { npm, port, chainPort, log: () => log, until };
}

/** Everything `npm start` started is gone: svc, the dev chain, both ports, the data folder's lock. */
async function expectAllStopped(svcPid: number, ports: number[], why: string, log: () => string): Promise<void> {
  const stopped = await eventually(() => !alive(svcPid));
  const state = stateOf(svcPid);
  if (!stopped) process.kill(svcPid, 'SIGTERM'); // no orphan left behind by a failure
  expect(stopped, `svc (pid ${svcPid}) still runs after ${why}: ${state}\n${log()}`).toBe(true);
  for (const port of ports) expect(await eventually(() => portFree(port)), `port ${port} still taken:\n${log()}`).toBe(true);
  expect(fs.existsSync(path.join(dataDir, 'serve.lock'))).toBe(false);
}

describe.skipIf(!fs.existsSync('/proc/self/stat'))("signals to npm start's own process", () => {
  it.each(['SIGTERM', 'SIGINT', 'SIGHUP'] as const)(
    '%s stops the service and its dev chain; the ports are free again',
    async (signal) => {
      const { npm, port, chainPort, log, until } = await npmStart();
      await until(() => log().includes('Next steps'));
      const svcPid = JSON.parse(fs.readFileSync(path.join(dataDir, 'serve.lock'), 'utf8')).pid as number;
      const anvilPid = Number(fs.readFileSync(path.join(dataDir, 'dev-chain', 'anvil.pid'), 'utf8'));
      expect(svcPid).not.toBe(npm.pid);
      expect(alive(svcPid) && alive(anvilPid)).toBe(true);

      process.kill(npm.pid!, signal); // npm's process only, not its group

      await expectAllStopped(svcPid, [port, chainPort], `${signal} to npm (npm: ${stateOf(npm.pid!)})`, log);
      expect(await eventually(() => !alive(anvilPid)), `anvil (pid ${anvilPid}) still runs:\n${log()}`).toBe(true);
      if (npm.exitCode === null && npm.signalCode === null) await new Promise((r) => npm.once('exit', r));
    },
    120_000,
  );

  // npm gone before the service is up (a signal sent while it starts, or on seeing the first lines):
  // the service noticed only a parent that changed after it was up, and read that parent once up,
  // by then init. It ran on, orphaned, holding both ports (seen in CI).
  it('npm gone while the service starts: the service stops once it is up', async () => {
    const { npm, port, chainPort, log, until } = await npmStart();
    const lockFile = path.join(dataDir, 'serve.lock');
    await until(() => fs.existsSync(lockFile));
    const svcPid = JSON.parse(fs.readFileSync(lockFile, 'utf8')).pid as number;
    process.kill(npm.pid!, 'SIGHUP'); // not passed on by npm: npm dies, the service carries on starting
    expect(await eventually(() => log().includes('npm start is gone: stopping svc')), log()).toBe(true);
    await expectAllStopped(svcPid, [port, chainPort], 'npm died while it started', log);
  }, 120_000);
});
