import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import { isProcessAlive } from '../shared/process-alive.js';
import { WalletError } from './errors.js';

/** A lock older than this is someone's crash, not a live holder (holders keep it for milliseconds). */
const STALE_AFTER_MS = 15_000;
const WAIT_LIMIT_MS = 10_000;

interface LockBody {
  pid: number;
  token: string;
  at: number;
}

function readLock(file: string): LockBody | null {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as LockBody;
  } catch {
    return null; // gone, or half-written by a holder that is creating it right now
  }
}

function isStale(file: string, body: LockBody | null): boolean {
  let mtime: number;
  try {
    mtime = fs.statSync(file).mtimeMs;
  } catch {
    return false; // gone: the next O_EXCL attempt decides
  }
  if (Date.now() - mtime > STALE_AFTER_MS) return true;
  return body !== null && !isProcessAlive(body.pid);
}

/**
 * Removes a stale lock without deleting a fresh one that replaced it meanwhile: rename it aside
 * (atomic), check the renamed file is the one judged stale, and put it back with link() (which
 * fails if a new lock exists) if it was not.
 */
function breakStale(file: string, judged: LockBody | null): void {
  const aside = `${file}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    fs.renameSync(file, aside);
  } catch {
    return;
  }
  const body = readLock(aside);
  if (judged && body && body.token !== judged.token) {
    try {
      fs.linkSync(aside, file);
    } catch {
      // a third process already holds a new lock; the one we moved was fresh only for milliseconds
    }
  }
  fs.rmSync(aside, { force: true });
}

/**
 * Cross-process mutual exclusion on one file (the spend ledger) with an O_EXCL lock file:
 * `<file>.lock` holds the holder's pid. A lock whose process is gone, or older than 15 s, is broken.
 * No dependency: proper-lockfile is not installed and this is all the ledger needs.
 */
export async function withFileLock<T>(file: string, work: () => Promise<T> | T): Promise<T> {
  const lockFile = `${file}.lock`;
  const token = randomBytes(8).toString('hex');
  const started = Date.now();
  let delay = 2;
  for (;;) {
    try {
      const fd = fs.openSync(lockFile, 'wx', 0o600);
      try {
        fs.writeSync(fd, JSON.stringify({ pid: process.pid, token, at: Date.now() } satisfies LockBody));
      } finally {
        fs.closeSync(fd);
      }
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const body = readLock(lockFile);
    if (isStale(lockFile, body)) {
      breakStale(lockFile, body);
      continue;
    }
    if (Date.now() - started > WAIT_LIMIT_MS) {
      throw new WalletError(
        'ledger_busy',
        `The spend ledger ${file} stayed locked for ${WAIT_LIMIT_MS / 1000} s by process ${body?.pid ?? '?'}; nothing was paid. Retry, or remove ${lockFile} if that process is gone.`,
      );
    }
    await new Promise((r) => setTimeout(r, delay + Math.random() * delay));
    delay = Math.min(delay * 2, 50);
  }
  try {
    return await work();
  } finally {
    const body = readLock(lockFile);
    if (body?.token === token) fs.rmSync(lockFile, { force: true });
  }
}
