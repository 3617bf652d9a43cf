import type { Logger } from '../service/kernel/logger.js';

/**
 * postgres.js 3.4.9 (the newest) can write to a connection the server has just closed and throw
 * `TypeError: Cannot read properties of null (reading 'write')` from `nextWrite`, outside any
 * promise (porsager/postgres #1154, #1066, #1208). The connection is gone and its queries have
 * already failed; the pool opens a new one. That fault, and a network fault nobody listened for
 * (below), are logged and survived; anything else uncaught (an unhandled rejection included: Node
 * raises it as uncaught) still ends the process (exit 1), as Node's default would.
 */
export function isPostgresClosedSocketWrite(err: unknown): boolean {
  if (!(err instanceof TypeError) || !/reading 'write'/.test(err.message)) return false;
  const stack = err.stack ?? '';
  return /nextWrite/.test(stack) && /[\\/]postgres[\\/](cjs[\\/])?src[\\/]connection\.js/.test(stack);
}

/** Socket-level failures: each ends one connection and says nothing about the program's state. */
const NETWORK_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'ECONNABORTED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
const SOCKET_SYSCALLS = new Set(['connect', 'read', 'write', 'writev', 'getaddrinfo']);

/**
 * A network fault nobody was listening for: a socket's error (`read ECONNRESET`, `connect
 * ECONNREFUSED`…) that reached no handler, raised as uncaught or as an unhandled rejection. Seen
 * during database outages: postgres.js strips the listeners off a socket it closed and a late connect
 * refusal is then thrown (`TCPConnectWrap.afterConnect`), and a `read ECONNRESET` surfaced as an
 * unhandled rejection of a plain promise inside the driver while a LISTEN connection and the pool
 * were cut together (origin not pinned down: 3 in ~40 runs, never under instrumentation). The
 * connection is gone and whoever used it has had its answer or times out; the process goes on, as
 * the operator needs ("a node never dies of a database or network error").
 */
export function isNetworkFault(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const e = err as NodeJS.ErrnoException;
  return typeof e.code === 'string' && NETWORK_CODES.has(e.code) && typeof e.syscall === 'string' && SOCKET_SYSCALLS.has(e.syscall);
}

export function surviveKnownDriverFaults(log: Logger): void {
  process.on('uncaughtException', (err) => {
    if (isPostgresClosedSocketWrite(err)) {
      log.warn('database connection closed under a pending write (postgres.js #1154); dropped, service goes on');
      return;
    }
    if (isNetworkFault(err)) {
      log.warn('a connection failed with nobody listening for its error; dropped, service goes on', { error: err.stack ?? err.message });
      return;
    }
    log.error('uncaught exception; stopping', { error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
    process.exit(1);
  });
}

/**
 * The log's stream gone (a closed terminal, the SIGHUP case; a pipe whose reader exited: EPIPE) makes
 * every write fail. With nobody listening, each failure was an uncaught exception whose own log line
 * failed again, from the next tick: a loop at full CPU that starved the event loop, so the service never
 * stopped (found by test/e2e/npm-start-signals.test.ts under load, and an orphan left spinning). The
 * log is lost from then on; the process goes on, and stops when asked.
 */
export function outliveLostLogStream(): void {
  process.stderr.on('error', () => {});
}
