import http from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { startNode, type ServiceNode } from '../helpers/nodes.js';

// SIGTERM on a real `svc-agent-host serve` process: it stops accepting connections and reports not
// ready, lets a request in flight finish (its answer closes the connection), then exits 0.
let node: ServiceNode | undefined;
afterAll(async () => node?.stop());

/** Sends a request whose body arrives in two parts; `between` runs after the first part is sent. */
function slowRequest(url: string, body: string, between: () => Promise<void>): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}/api/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    const half = Math.floor(body.length / 2);
    req.write(body.slice(0, half));
    between().then(
      () => req.end(body.slice(half)),
      (e: unknown) => reject(e),
    );
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
      await new Promise((r) => setTimeout(r, 200)); // the request is in flight
      child.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 500)); // the node is stopping
      await expect(fetch(`${url}/healthz`)).rejects.toThrow(); // no new connection is accepted
    });
    expect(answer.status).toBe(201);
    expect(JSON.parse(answer.body)).toMatchObject({ client_name: 'drain test' });
    expect(answer.headers.connection).toBe('close');
    expect(await exited).toBe(0);
    expect(node.log()).toContain('letting the requests in flight finish');
  });
});
