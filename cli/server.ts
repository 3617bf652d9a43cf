import { randomBytes } from 'node:crypto';
import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener, type ServerType } from '@hono/node-server';
import type { Hono } from 'hono';
import { drainable, listen, outliveClientKeepAlive } from '../shared/http-server.js';
import { removeAdminFile, writeAdminFile } from '../service/admin/admin-file.js';
import { DEFAULT_PASSWORD_HASH_COST } from '../service/auth/passwords.js';
import { buildApp } from '../service/app.js';
import { withSiteFastPath } from '../service/sites/fast-path.js';
import { withTableReadFastPath } from '../service/tables/read-fast-path.js';
import type { Config } from '../service/kernel/config.js';
import type { Deps } from '../service/deps.js';
import type { AppEnv } from '../service/kernel/request-env.js';
import { startHousekeeping } from '../service/housekeeping/housekeeping.js';
import { startTrafficFlush } from '../service/sites/traffic.js';
import { startPayments } from '../service/payments/startup.js';
import { sitesDomainWarning } from '../service/sites/sites-domain-check.js';
import { createRuntime, type Runtime } from './runtime.js';

export interface RunningService {
  runtime: Runtime;
  server: ServerType;
  /** The address actually bound (port 0 picks a free one). */
  url: string;
  /** One line on how Agent API payments settle (or why they cannot). */
  payments: string;
  /**
   * Stops: /readyz answers 503 at once, no new connection is accepted, requests in flight (and the
   * settlements they run) finish within the configured shutdown timeout, then everything closes.
   */
  stop(): Promise<void>;
}

/**
 * What the service's HTTP server runs per request: cached files of public sites first
 * (service/sites/fast-path.ts), then reads of tables read before, lists and single records (service/tables/read-fast-path.ts),
 * then the app.
 */
export function serviceListener(deps: Deps, app: Hono<AppEnv>, hostname?: string, isStopping: () => boolean = () => false): RequestListener {
  return withSiteFastPath(deps, withTableReadFastPath(deps, getRequestListener(app.fetch, { hostname })), isStopping);
}

export interface StartServiceOptions {
  writeAdminFile?: boolean;
  runtime?: Runtime;
  /** Mounts more routes on the service's app before it listens (the hosted MCP endpoint). */
  mount?: (app: Hono<AppEnv>, runtime: Runtime) => void | Promise<void>;
}

/**
 * Starts the service: real parts from the config, migrations applied, HTTP listening, and the
 * admin file written so the CLI can reach this process.
 */
export async function startService(config: Config, options: StartServiceOptions = {}): Promise<RunningService> {
  // startPayments below waits for the dev chain: it starts beside the database's opening.
  const runtime = options.runtime ?? (await createRuntime(config, { startDevChain: true }));
  if (config.passwordHashCost < DEFAULT_PASSWORD_HASH_COST)
    runtime.deps.log.warn("SVC_PASSWORD_HASH_COST is below OWASP's minimum (15): passwords are cheap to guess. Use it for test runs only.", {
      passwordHashCost: config.passwordHashCost,
    });
  const sitesDomain = sitesDomainWarning(config);
  if (sitesDomain) runtime.deps.log.warn(sitesDomain, { baseUrl: config.baseUrl, sitesDomain: config.sitesDomain });
  const { line: payments, stop: stopPayments } = await startPayments(runtime.deps);
  const housekeeping = startHousekeeping(runtime.deps);
  const traffic = startTrafficFlush(runtime.deps);
  const adminToken = randomBytes(32).toString('base64url');
  let stopping = false;
  const app = buildApp(runtime.deps, { adminToken, isStopping: () => stopping });
  await options.mount?.(app, runtime);
  const server = createServer(serviceListener(runtime.deps, app, config.host, () => stopping));
  await listen(server, config.port, config.host);
  outliveClientKeepAlive(server);
  const requests = drainable(server);
  const { port } = server.address() as AddressInfo;
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  if (options.writeAdminFile !== false) writeAdminFile(config.dataDir, { url, token: adminToken, pid: process.pid });
  return {
    runtime,
    server,
    url,
    payments,
    async stop() {
      if (stopping) return;
      stopping = true;
      if (options.writeAdminFile !== false) removeAdminFile(config.dataDir, adminToken);
      const inFlight = requests.inFlight();
      if (inFlight) runtime.deps.log.info('stopping: letting the requests in flight finish', { inFlight, timeoutMs: config.shutdownTimeoutMs });
      const cut = await requests.drain(config.shutdownTimeoutMs);
      if (cut) runtime.deps.log.warn('stopping: requests still running at the shutdown timeout were cut off', { cut });
      stopPayments();
      housekeeping.stop();
      // After the drain: what the last requests served is counted too.
      await traffic.stop();
      await runtime.close();
    },
  };
}
