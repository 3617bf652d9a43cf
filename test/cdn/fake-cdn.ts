import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedCall {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * A local stand-in for a CDN's purge API: records every call and answers `answer(call)` (200 with
 * `{"success": true}` unless told otherwise). `fail(n)` makes the next n calls answer 503.
 */
export interface FakeCdn {
  url: string;
  calls: RecordedCall[];
  fail(n: number): void;
  answer: (call: RecordedCall) => { status: number; body: string };
  close(): Promise<void>;
}

export async function startFakeCdn(): Promise<FakeCdn> {
  let failing = 0;
  const fake: FakeCdn = {
    url: '',
    calls: [],
    fail: (n) => {
      failing = n;
    },
    answer: () => ({ status: 200, body: '{"success":true,"errors":[],"result":{"id":"x"}}' }),
    close: () => new Promise((r) => server.close(() => r())),
  };
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const call = { method: req.method!, url: req.url!, headers: req.headers, body };
      fake.calls.push(call);
      if (failing > 0) {
        failing--;
        res.writeHead(503).end('down');
        return;
      }
      const a = fake.answer(call);
      res.writeHead(a.status, { 'content-type': 'application/json' }).end(a.body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}
