import type { Logger } from '../service/logger.js';

/**
 * postgres.js 3.4.9 (the newest) can write to a connection the server has just closed and throw
 * `TypeError: Cannot read properties of null (reading 'write')` from `nextWrite`, outside any
 * promise (porsager/postgres #1154, #1066, #1208). The connection is gone and its queries have
 * already failed; the pool opens a new one. That one fault is logged and survived; anything else
 * uncaught still ends the process (exit 1), as Node's default would.
 */
export function isPostgresClosedSocketWrite(err: unknown): boolean {
  if (!(err instanceof TypeError) || !/reading 'write'/.test(err.message)) return false;
  const stack = err.stack ?? '';
  return /nextWrite/.test(stack) && /[\\/]postgres[\\/](cjs[\\/])?src[\\/]connection\.js/.test(stack);
}

export function surviveKnownDriverFaults(log: Logger): void {
  process.on('uncaughtException', (err) => {
    if (isPostgresClosedSocketWrite(err)) {
      log.warn('database connection closed under a pending write (postgres.js #1154); dropped, service goes on');
      return;
    }
    log.error('uncaught exception; stopping', { error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
    process.exit(1);
  });
}
