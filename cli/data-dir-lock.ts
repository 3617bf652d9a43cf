import fs from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { svcCommand } from '../service/kernel/cli-command.js';

/** What `<data dir>/serve.lock` holds while a service runs on the folder. */
interface LockBody {
  pid: number;
  /** `serve`: a running service at `url`; `cli`: a command-line operation that opened the database itself. */
  holder: 'serve' | 'cli';
  url: string;
  startedAt: string;
}

/** A start that must not go on: another service holds the folder or the port. Nothing was started. */
export class StartRefused extends Error {}

export interface DataDirLock {
  /** Removes the lock if it is still ours (on stop, and on any exit). */
  release(): void;
}

function lockPath(dataDir: string): string {
  return path.join(dataDir, 'serve.lock');
}

function readLock(file: string): LockBody | null {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as LockBody;
  } catch {
    return null;
  }
}

/**
 * Whether `pid` is a live process that may be a service. Where /proc exists, a pid reused by an
 * unrelated program (after a reboot) does not count: only a Node process does.
 */
function isLiveService(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !stat.includes(') Z ') && /node|svc/.test(cmdline);
  } catch {
    return !fs.existsSync('/proc/self'); // no /proc here: trust the signal check
  }
}

/** How to run a second service beside a running one: its own folder and port. */
function besideHint(port: number): string {
  const other = port === 0 ? 0 : port + 10;
  return `To run another service beside it, give it its own folder and port: PORT=${other} SVC_DATA_DIR=./.svc-${other} npm start (Windows PowerShell: $env:PORT=${other}; $env:SVC_DATA_DIR='.svc-${other}'; npm start)`;
}

/**
 * Creates `file` holding `text`, failing with EEXIST when it exists, and never visible half-written:
 * the text goes to a file of this process first, then is hard-linked into place (link is atomic and
 * refuses an existing name, like O_EXCL). A lock created with O_EXCL and written after could be read
 * empty by a second starter, which took it for a crash's leftover and removed a live lock.
 */
function createWhole(file: string, text: string): void {
  const scratch = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(scratch, text, { mode: 0o600 });
  try {
    fs.linkSync(scratch, file);
  } finally {
    fs.rmSync(scratch, { force: true });
  }
}

/**
 * Locks the data folder for this process before anything else starts (database, dev chain, ports): a
 * second `svc serve` on the same folder would otherwise open the same PGlite files and stop the
 * running service's dev chain (it looks like one a crash left). The lock is a file created with
 * whole (createWhole); one whose process is gone (a crash, SIGKILL) is taken over.
 */
export function lockDataDir(dataDir: string, url: string, port: number, holder: LockBody['holder'] = 'serve'): DataDirLock {
  fs.mkdirSync(dataDir, { recursive: true });
  const file = lockPath(dataDir);
  const body: LockBody = { pid: process.pid, holder, url, startedAt: new Date().toISOString() };
  for (let attempt = 0; ; attempt++) {
    try {
      createWhole(file, JSON.stringify(body));
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 2) throw e;
    }
    const held = readLock(file);
    if (held && isLiveService(held.pid) && held.holder === 'cli')
      throw new StartRefused(
        `a ${svcCommand('…')} command (pid ${held.pid}) has this data folder's database open (${dataDir}); it ends within seconds: try again then. Nothing was started.`,
      );
    if (held && isLiveService(held.pid))
      throw new StartRefused(
        `svc is already running on this data folder (${dataDir}): pid ${held.pid}, ${held.url} (since ${held.startedAt}). ` +
          `Nothing was started and the running service is untouched. Use that one (e.g. ${svcCommand('account create --email you@example.com')} talks to it), ` +
          `stop it (Ctrl-C in its terminal, or kill ${held.pid}), or start another. ${besideHint(port)}`,
      );
    fs.rmSync(file, { force: true }); // its process is gone: a crash or SIGKILL left it
  }
  const release = () => {
    if (readLock(file)?.pid === process.pid) fs.rmSync(file, { force: true });
  };
  process.once('exit', release);
  return {
    release() {
      release();
      process.off('exit', release);
    },
  };
}

/** The process listening on a TCP port, where /proc tells (Linux, own user's processes); else undefined. */
export function listenerOf(port: number): { pid: number; command: string } | undefined {
  try {
    const inodes = new Set<string>();
    for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
      if (!fs.existsSync(table)) continue;
      for (const line of fs.readFileSync(table, 'utf8').split('\n').slice(1)) {
        const cols = line.trim().split(/\s+/);
        // local_address is HEXIP:HEXPORT; state 0A is LISTEN; column 9 is the socket's inode.
        if (cols[3] === '0A' && Number.parseInt(cols[1]?.split(':')[1] ?? '', 16) === port) inodes.add(cols[9]!);
      }
    }
    if (!inodes.size) return undefined;
    for (const entry of fs.readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      let fds: string[];
      try {
        fds = fs.readdirSync(`/proc/${entry}/fd`);
      } catch {
        continue;
      }
      for (const fd of fds) {
        let target: string;
        try {
          target = fs.readlinkSync(`/proc/${entry}/fd/${fd}`);
        } catch {
          continue;
        }
        const m = /^socket:\[(\d+)\]$/.exec(target);
        if (m && inodes.has(m[1]!)) {
          const command = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
          return { pid: Number(entry), command };
        }
      }
    }
  } catch {
    // no /proc (macOS, Windows): the message names the port only
  }
  return undefined;
}

/**
 * Refuses at once when the service's port is taken, before the database and the dev chain start (a
 * start that failed only at listen had already started, and on its way out stopped, a dev chain).
 */
export async function ensurePortFree(port: number, host: string, baseUrl: string): Promise<void> {
  if (port === 0) return;
  const taken = await new Promise<boolean>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (e: NodeJS.ErrnoException) => (e.code === 'EADDRINUSE' ? resolve(true) : reject(e)));
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve(false)));
  });
  if (!taken) return;
  const holder = listenerOf(port);
  const who = holder ? `pid ${holder.pid} (${holder.command.slice(0, 120)})` : 'another process';
  const isSvc = holder ? /svc/.test(holder.command) : false;
  throw new StartRefused(
    `port ${port} is taken by ${who}${isSvc ? `, probably svc already running at ${baseUrl} on another data folder` : ''}. ` +
      `Nothing was started and that process is untouched. Stop it${holder ? ` (kill ${holder.pid})` : ''}, or choose another port. ${besideHint(port)}`,
  );
}
