import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './ports.js';

/** A PostgreSQL server of the test's own (initdb'd in a temporary folder), which the test may stop and start. */
export interface PrivatePostgres {
  url: string;
  /** `immediate` is a crash as the server sees it (recovery at the next start); `fast` a clean stop. */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  start(): Promise<void>;
  /** Stops it and removes its folder. */
  close(): Promise<void>;
  /** A streaming replica of this server (pg_basebackup -R) on a port of its own, started and replaying. */
  replica(): Promise<PrivatePostgres>;
}

/** The folder of PostgreSQL's server binaries (initdb, pg_ctl), or why there is none. */
export function postgresBinaries(): { bin: string } | { missing: string } {
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root) ? fs.readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) {
    const bin = path.join(root, v, 'bin');
    if (fs.existsSync(path.join(bin, 'initdb')) && fs.existsSync(path.join(bin, 'pg_ctl'))) {
      // PostgreSQL refuses to run as root: as root, it runs as the `postgres` user.
      if (process.getuid?.() === 0 && spawnSync('id', ['-u', 'postgres']).status !== 0) return { missing: 'running as root and there is no postgres user' };
      return { bin };
    }
  }
  return { missing: `no initdb/pg_ctl under ${root}` };
}

export async function startPrivatePostgres(replicaOf?: { port: number }): Promise<PrivatePostgres> {
  const found = postgresBinaries();
  if ('missing' in found) throw new Error(found.missing);
  const asRoot = process.getuid?.() === 0;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-pg-'));
  const data = path.join(dir, 'data');
  if (asRoot) execFileSync('chown', ['postgres', dir]);
  // Asynchronous: the test's own traffic keeps running while the server stops and starts.
  const run = async (tool: string, args: string[]) => {
    const cmd = path.join(found.bin, tool);
    const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
    await promisify(execFile)(file, argv, { timeout: 60_000 });
  };
  const port = await freePort();
  // A replica starts from a copy of the primary, with its standby.signal and primary_conninfo (-R).
  if (replicaOf) await run('pg_basebackup', ['-h', '127.0.0.1', '-p', String(replicaOf.port), '-U', 'postgres', '-D', data, '-R', '-X', 'stream', '--no-sync']);
  else await run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=60`;
  const start = () => run('pg_ctl', ['-D', data, '-o', options, '-l', path.join(dir, 'log'), '-w', 'start']);
  const stop = (mode: 'fast' | 'immediate' = 'fast') => run('pg_ctl', ['-D', data, '-m', mode, '-w', 'stop']);
  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop,
    start,
    replica: () => startPrivatePostgres({ port }),
    close: async () => {
      try {
        await stop('immediate');
      } catch {
        // already stopped
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
