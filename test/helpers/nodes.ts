import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './ports.js';
import { ADDRESS_SURFACES } from '../../service/kernel/config.js';

/** A real service process (`svc-agent-host serve`) on a loopback port. */
export interface ServiceNode {
  url: string;
  child: ChildProcess;
  /** Its data folder (SVC_DATA_DIR). */
  dataDir: string;
  /** Everything the node wrote to stderr so far (its log). */
  log(): string;
  /** SIGKILL, and removes its data folder (unless `env` named it). */
  stop(): Promise<void>;
}

/**
 * Spawns `bin/svc.mjs serve` on `databaseUrl` with its own data folder (or `env.SVC_DATA_DIR`, kept
 * for a restart) and port, no MCP endpoint, no rate limit per credential or per address (unless `env`
 * sets one), and resolves when it has printed its banner. A port that another process took between freePort() and the node's
 * listen (a race of parallel test files) is retried on a new port; any other failed start, or no
 * banner within `startTimeoutMs` (90 s by default), rejects with the node's log.
 */
export async function startNode(databaseUrl: string, env: Record<string, string> = {}, options: { startTimeoutMs?: number } = {}): Promise<ServiceNode> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startNodeOnce(databaseUrl, env, await freePort(), options.startTimeoutMs ?? 90_000);
    } catch (e) {
      if (attempt === 3 || !/EADDRINUSE/.test((e as Error).message)) throw e;
    }
  }
}

async function startNodeOnce(databaseUrl: string, env: Record<string, string>, port: number, startTimeoutMs: number): Promise<ServiceNode> {
  const ownDataDir = !env.SVC_DATA_DIR;
  const dataDir = env.SVC_DATA_DIR ?? fs.mkdtempSync(path.join(os.tmpdir(), 'svc-node-'));
  const child = spawn(process.execPath, ['bin/svc.mjs', 'serve'], {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      SVC_BASE_URL: `http://127.0.0.1:${port}`,
      SVC_MCP_PORT: 'off',
      SVC_DEV_CHAIN_PORT: '0',
      SVC_LOG_LEVEL: 'warn',
      SVC_RATE_LIMIT_PER_MINUTE: '0',
      // The tests' load comes from one loopback address: no per-address limit either, unless env sets one.
      SVC_ADDRESS_LIMITS: ADDRESS_SURFACES.map((s) => `${s}=0`).join(','),
      ...env,
      SVC_DATA_DIR: dataDir,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      // SIGTERM: the node stops its dev chain too (a SIGKILL left each node's anvil running for good,
      // its data folder removed below). SIGKILL only if it does not exit.
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    }
    if (ownDataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`node did not start within ${startTimeoutMs} ms:\n${log}`)), startTimeoutMs);
      child.stderr!.on('data', () => {
        if (log.includes('Next steps')) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.on('exit', (code) => reject(new Error(`node exited (${code}):\n${log}`)));
    });
  } catch (e) {
    await stop();
    throw e;
  }
  return { url: `http://127.0.0.1:${port}`, child, dataDir, log: () => log, stop };
}
