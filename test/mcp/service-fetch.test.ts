import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceFetch } from '../../mcp/service-fetch.js';
import { listen } from '../../shared/http-server.js';

// svc-mcp reaches its service over node:http with kept-alive connections (mcp/service-fetch.ts):
// what a tool reads of the answer must be what the global fetch gives for the same request.
describe('the fetch svc-mcp reaches its service with', () => {
  let server: http.Server;
  let base: string;
  const seen: { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }[] = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        seen.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString() });
        if (req.url === '/slow') return void setTimeout(() => res.end('late'), 2_000);
        if (req.url === '/empty') return void res.writeHead(204).end();
        if (req.url === '/moved') return void res.writeHead(302, { location: '/json' }).end();
        res.writeHead(201, [
          ['content-type', 'application/json'],
          ['set-cookie', 'a=1'],
          ['set-cookie', 'b=2'],
          ['x-payment-response', 'eyJ4IjoxfQ=='],
        ]);
        res.end(JSON.stringify({ ok: true, method: req.method, got: Buffer.concat(chunks).toString() }));
      });
    });
    await listen(server, 0, '127.0.0.1');
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  async function both(path: string, init?: RequestInit) {
    const ours = await serviceFetch(base)(`${base}${path}`, init);
    const theirs = await fetch(`${base}${path}`, init);
    const read = async (r: Response) => ({
      status: r.status,
      ok: r.ok,
      type: r.headers.get('content-type'),
      payment: r.headers.get('x-payment-response'),
      cookies: r.headers.getSetCookie(),
      body: await r.text(),
    });
    return { ours: await read(ours), theirs: await read(theirs) };
  }

  it('answers a GET and a POST with a JSON body as fetch does: status, headers (repeated ones too), body', async () => {
    for (const init of [undefined, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer k' }, body: '{"a":1}' }]) {
      const { ours, theirs } = await both('/json', init);
      expect(ours).toEqual(theirs);
      expect(ours).toMatchObject({ status: 201, cookies: ['a=1', 'b=2'], payment: 'eyJ4IjoxfQ==' });
    }
    const posted = seen.filter((s) => s.method === 'POST').at(-1)!;
    expect([posted.headers.authorization, posted.headers['content-length'], posted.body]).toEqual(['Bearer k', '7', '{"a":1}']);
  });

  it('a bodiless status, bytes as the body, and a GET redirect followed as fetch follows it', async () => {
    expect((await both('/empty')).ours).toMatchObject({ status: 204, body: '' });
    const bytes = await both('/json', { method: 'PUT', body: new TextEncoder().encode('bytes') });
    expect(JSON.parse(bytes.ours.body)).toEqual({ ok: true, method: 'PUT', got: 'bytes' });
    const moved = await both('/moved');
    expect(moved.ours).toEqual(moved.theirs);
    expect(moved.ours.status).toBe(201);
  });

  it('a timeout signal ends the request with the signal’s reason', async () => {
    const err = await serviceFetch(base)(`${base}/slow`, { signal: AbortSignal.timeout(100) }).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'TimeoutError' });
  });

  it('a service that does not answer fails as fetch fails (TypeError "fetch failed")', async () => {
    const closed = 'http://127.0.0.1:9';
    const err = await serviceFetch(closed)(`${closed}/x`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TypeError);
    expect((err as Error).message).toBe('fetch failed');
  });

  it('a kept-alive connection the server drops as the next request arrives: the request is sent again on a new one', async () => {
    // The race a keep-alive timeout makes: the server ends the idle socket just as the client reuses it.
    const served = new WeakMap<object, number>();
    const flaky = http.createServer((req, res) => {
      const n = (served.get(req.socket) ?? 0) + 1;
      served.set(req.socket, n);
      if (n > 1) return void req.socket.destroy(); // the second request on a socket: never answered
      res.end('ok');
    });
    await listen(flaky, 0, '127.0.0.1');
    const at = `http://127.0.0.1:${(flaky.address() as AddressInfo).port}`;
    try {
      const f = serviceFetch(at);
      expect(await (await f(`${at}/a`)).text()).toBe('ok');
      expect(await (await f(`${at}/b`, { method: 'POST', body: 'x' })).text()).toBe('ok');
      expect(await (await f(`${at}/c`)).text()).toBe('ok');
    } finally {
      flaky.closeAllConnections();
      await new Promise((r) => flaky.close(r));
    }
  });
});
