import type { Logger } from '../service/logger.js';

/**
 * postgres.js 3.4.9 (the newest) can write to a connection the server has just closed and throw
 * `TypeError: Cannot read properties of null (reading 'write')` from `nextWrite`, outside any
 * promise (porsager/postgres #1154, #1066, #1208). The connection is gone and its queries have
 * already failed; the pool opens a new one. That fault, and a refused connect to the database on a
 * connection the driver already dropped (below), are logged and survived; anything else uncaught
 * still ends the process (exit 1), as Node's default would.
 */
export function isPostgresClosedSocketWrite(err: unknown): boolean {
  if (!(err instanceof TypeError) || !/reading 'write'/.test(err.message)) return false;
  const stack = err.stack ?? '';
  return /nextWrite/.test(stack) && /[\\/]postgres[\\/](cjs[\\/])?src[\\/]connection\.js/.test(stack);
}

/**
 * A connect attempt to the database that failed after postgres.js stopped listening on its socket:
 * during an outage, a connection the driver closed (and stripped of its listeners) can still report
 * the refused connect, which Node throws as uncaught (`connect ECONNREFUSED host:port` from
 * `TCPConnectWrap.afterConnect`; seen once in CI under an outage). Only a failed `connect` to the
 * database's own port qualifies: it has no side effect, and the driver's connect timeout reconnects.
 */
export function isDatabaseConnectFailure(err: unknown, databaseUrl: string | undefined): boolean {
  if (!databaseUrl || !(err instanceof Error)) return false;
  const e = err as NodeJS.ErrnoException & { port?: number; address?: string };
  if (e.syscall !== 'connect' || typeof e.port !== 'number') return false;
  let url: URL;
  try {
    url = new URL(databaseUrl);
  } catch {
    return false;
  }
  return e.port === Number(url.port || 5432);
}

export function surviveKnownDriverFaults(log: Logger, databaseUrl?: string): void {
  process.on('uncaughtException', (err) => {
    if (isPostgresClosedSocketWrite(err)) {
      log.warn('database connection closed under a pending write (postgres.js #1154); dropped, service goes on');
      return;
    }
    if (isDatabaseConnectFailure(err, databaseUrl)) {
      log.warn('database connect failed on a connection the driver had already closed; dropped, service goes on', { error: err.message });
      return;
    }
    log.error('uncaught exception; stopping', { error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
    process.exit(1);
  });
}
