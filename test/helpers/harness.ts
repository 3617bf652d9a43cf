import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { createServer, type RequestListener } from 'node:http';
import { createAccount } from '../../service/accounts/accounts.js';
import { createPersonalKey } from '../../service/accounts/personal-keys.js';
import { buildApp } from '../../service/app.js';
import { listen, outliveClientKeepAlive } from '../../shared/http-server.js';
import { loadConfig } from '../../service/config.js';
import type { Config } from '../../service/kernel/config.js';
import type { Deps } from '../../service/deps.js';
import type { Clock } from '../../service/kernel/clock.js';
import { createRuntime, type Runtime } from '../../cli/runtime.js';
import { serviceListener } from '../../cli/server.js';
import { SCOPES, type Scope } from '../../shared/scopes.js';
import { openTestDatabase, type DbKind } from './db.js';
import type { Database } from '../../service/db/client.js';

export interface Harness {
  deps: Deps;
  runtime: Runtime;
  /** Base URL of the real HTTP server on a loopback port. */
  url: string;
  config: Config;
  /** Creates an account and a personal key with the given scopes (default: all). */
  account(scopes?: readonly Scope[], email?: string): Promise<{ accountId: string; key: string; email: string }>;
  /** fetch against the service, path relative to its base URL. */
  fetch(pathname: string, init?: RequestInit & { key?: string; json?: unknown }): Promise<Response>;
  close(): Promise<void>;
}

let counter = 0;

/**
 * Starts the real service on a free loopback port, on a fresh database of `kind`, with blobs in a
 * temp folder (or the given overrides). Base URL = the bound address, so sites use the path fallback.
 */
export async function startHarness(
  kind: DbKind = 'pglite',
  env: Record<string, string> = {},
  options: { clock?: Clock; adminToken?: string; mount?: (app: ReturnType<typeof buildApp>, deps: Deps) => Promise<void>; database?: Database } = {},
): Promise<Harness> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-test-'));
  // `options.database`: a database of the test's own (closed with the harness), instead of a fresh one of `kind`.
  const database = options.database ?? (await openTestDatabase(kind));
  // Bind first so the base URL (used in presigned URLs and site links) is the real address. The
  // listener is the real server's: the site fast path, then the app with the Node bindings (client
  // addresses work).
  let listener: RequestListener = (_req, res) => res.writeHead(503).end('starting');
  const server = createServer((req, res) => listener(req, res));
  // As the real server (cli/server.ts): idle sockets are the client's to close. With Node's 5 s, a
  // loaded moment (the test's fetch and this server share one event loop) let the server's close of
  // an idle socket and the client's reuse of it come in the same turn: ECONNRESET.
  outliveClientKeepAlive(server);
  await listen(server, 0, '127.0.0.1');
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  const config = loadConfig({
    SVC_DATA_DIR: dataDir,
    SVC_BASE_URL: url,
    SVC_SITES_DOMAIN: 'localhost',
    SVC_LOG_LEVEL: 'silent',
    // Many harnesses run at once: each dev chain on a free port.
    SVC_DEV_CHAIN_PORT: '0',
    // The lowest scrypt cost: a sign-in costs ~5 ms instead of ~0.2 s (test/auth covers the default).
    SVC_PASSWORD_HASH_COST: '10',
    PORT: String(port),
    ...env,
  });
  const runtime = await createRuntime(config, { database, clock: options.clock });
  const app = buildApp(runtime.deps, { adminToken: options.adminToken });
  await options.mount?.(app, runtime.deps);
  listener = serviceListener(runtime.deps, app);

  const harness: Harness = {
    deps: runtime.deps,
    runtime,
    url,
    config,
    async account(scopes = SCOPES, email = `user${++counter}-${Date.now()}@example.com`) {
      const account = await createAccount(runtime.deps.db, { email });
      const { secret } = await createPersonalKey(runtime.deps.db, { accountId: account.id, name: 'test', scopes: [...scopes] });
      return { accountId: account.id, key: secret, email };
    },
    fetch(pathname, init = {}) {
      const { key, json, ...rest } = init;
      const headers = new Headers(rest.headers);
      if (key) headers.set('authorization', `Bearer ${key}`);
      if (json !== undefined) headers.set('content-type', 'application/json');
      return fetch(`${url}${pathname}`, { ...rest, headers, body: json !== undefined ? JSON.stringify(json) : rest.body });
    },
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
      });
      await runtime.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return harness;
}
