import http, { type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import { buildApp } from '../../service/app.js';
import { listen } from '../../shared/http-server.js';
import type { Harness } from './harness.js';

export interface Answer {
  status: number;
  /** Without `date` (the clock's, not ours). */
  headers: Record<string, string>;
  body: Buffer;
  /** Whether the app (hono) answered, not the fast path. */
  byApp: boolean;
}

export interface FastPathServer {
  /** Sends one request (with `x-request-id: same-id`, so two answers can be compared whole). */
  send(path: string, init?: { method?: string; headers?: Record<string, string> }): Promise<Answer>;
  base: string;
  close(): Promise<void>;
}

/**
 * A loopback server of `fastPath` in front of the harness's app, counting the requests that reach
 * the app: a test sees which of the two answered.
 */
export async function fastPathServer(h: Harness, fastPath: (app: RequestListener) => RequestListener): Promise<FastPathServer> {
  let appCalls = 0;
  const app = getRequestListener(buildApp(h.deps).fetch);
  const server = http.createServer(
    fastPath((req, res) => {
      appCalls++;
      app(req, res);
    }),
  );
  await listen(server, 0, '127.0.0.1');
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    send(path, init = {}) {
      const before = appCalls;
      return new Promise((resolve, reject) => {
        const req = http.request(`${base}${path}`, { method: init.method ?? 'GET', headers: { 'x-request-id': 'same-id', ...init.headers } }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const headers = { ...res.headers } as Record<string, string>;
            delete headers.date;
            resolve({ status: res.statusCode ?? 0, headers, body: Buffer.concat(chunks), byApp: appCalls > before });
          });
        });
        req.on('error', reject).end();
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
