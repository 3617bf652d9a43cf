import http from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { startNode, type ServiceNode } from '../helpers/nodes.js';

// SIGTERM on a real `svc-agent-host serve` process: it stops accepting connections and reports not
// ready, lets a request in flight finish (its answer closes the connection), then exits 0.
let node: ServiceNode | undefined;
afterAll(async () => node?.stop());

/**
 * Sends a request whose body arrives in two parts; `between` runs after the first part is sent. The
 * request asks `Expect: 100-continue` and the first part is sent only on the server's 100: from then
 * on the server has the request in hand, whatever the machine's load (no sleep to guess it).
 */
function slowRequest(url: string, body: string, between: () => Promise<void>): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}/api/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), expect: '100-continue' },
    });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.on('continue', () => {
      const half = Math.floor(body.length / 2);
      req.write(body.slice(0, half));
      between().then(
        () => req.end(body.slice(half)),
        (e: unknown) => reject(e),
      );
    });
    req.flushHeaders();
  });
}

describe('stopping on SIGTERM', { timeout: 120_000 }, () => {
  it('drains: a request in flight is answered, new connections are refused, the process exits 0', async () => {
    node = await startNode('', {
      SVC_LOG_LEVEL: 'info',
      SVC_X402_MODE: 'remote',
      SVC_X402_FACILITATOR_URL: 'http://127.0.0.1:9',
      SVC_X402_RECIPIENT: '0x000000000000000000000000000000000000dEaD',
    });
    const { url, child } = node;
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const registration = JSON.stringify({ client_name: 'drain test', redirect_uris: ['http://127.0.0.1:1234/callback'] });
    const answer = await slowRequest(url, registration, async () => {
      child.kill('SIGTERM');
      // While the request is still in flight (its body is not complete), the stopping node stops
      // accepting connections: asked until it does, however long the signal takes on a busy machine.
      const deadline = Date.now() + 30_000;
      while (
        await fetch(`${url}/healthz`).then(
          () => Date.now() < deadline,
          () => false,
        )
      )
        await new Promise((r) => setTimeout(r, 50));
      await expect(fetch(`${url}/healthz`)).rejects.toThrow();
    });
    expect(answer.status).toBe(201);
    expect(JSON.parse(answer.body)).toMatchObject({ client_name: 'drain test' });
    expect(answer.headers.connection).toBe('close');
    expect(await exited).toBe(0);
    expect(node.log()).toContain('letting the requests in flight finish');
  });
});
