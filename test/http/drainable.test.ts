import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { drainable, listen } from '../../shared/http-server.js';

// shared/http-server.ts: what a stop waits for. A response answered synchronously by the request
// listener (the service's fast paths) is never in flight; one still being answered is, and an answer
// sent once the drain began closes its connection.
describe('drainable', () => {
  let server: http.Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r) ?? r(undefined));
  });

  it('counts only the responses still being answered, and lets them finish with connection: close', async () => {
    let release!: () => void;
    const released = new Promise<void>((r) => {
      release = r;
    });
    server = http.createServer((req, res) => {
      if (req.url === '/now') res.end('now');
      else void released.then(() => res.end('later'));
    });
    const requests = drainable(server);
    await listen(server, 0, '127.0.0.1');
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    expect(await (await fetch(`${base}/now`)).text()).toBe('now');
    expect(requests.inFlight()).toBe(0);

    const later = fetch(`${base}/later`);
    await expect.poll(() => requests.inFlight()).toBe(1);
    const drained = requests.drain(5_000);
    release();
    const answer = await later;
    expect([answer.headers.get('connection'), await answer.text()]).toEqual(['close', 'later']);
    expect(await drained).toBe(0); // nothing cut off
  });
});
