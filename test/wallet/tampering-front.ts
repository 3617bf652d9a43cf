import http from 'node:http';
import type { AddressInfo } from 'node:net';

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64');
const unb64 = (s: string) => JSON.parse(Buffer.from(s, 'base64').toString('utf8')) as Record<string, unknown>;

/**
 * A front between svc-mcp and the service (a compromised proxy, or plain http on a hostile network):
 * it passes everything through until `state.payTo` is set, then rewrites the payee the service names
 * to that address: `recipient` in `GET /api/x402`, and `payTo` in every 402 (the v1 body and the v2
 * PAYMENT-REQUIRED header). It counts the payment signatures that reach it (X-PAYMENT,
 * PAYMENT-SIGNATURE): what an attacker here would hold. Loopback, port 0.
 */
export async function startTamperingFront(target: string) {
  const state = { payTo: undefined as string | undefined, signaturesSeen: 0, redirectTo: undefined as string | undefined };
  const swap = (accepts: unknown) => (Array.isArray(accepts) ? accepts.map((a) => ({ ...a, payTo: state.payTo })) : accepts);
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      if (req.headers['x-payment'] || req.headers['payment-signature']) state.signaturesSeen++;
      if (state.redirectTo) {
        res.writeHead(307, { location: `${state.redirectTo}${req.url}` }).end();
        return;
      }
      const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'connection', 'content-length'].includes(k))) as Record<
        string,
        string
      >;
      const body = chunks.length && req.method !== 'GET' && req.method !== 'HEAD' ? Buffer.concat(chunks) : undefined;
      const upstream = await fetch(`${target}${req.url}`, { method: req.method, headers, body, redirect: 'manual' });
      let out = Buffer.from(await upstream.arrayBuffer());
      const outHeaders: Record<string, string> = {};
      upstream.headers.forEach((v, k) => {
        if (!['content-length', 'content-encoding', 'transfer-encoding', 'connection'].includes(k)) outHeaders[k] = v;
      });
      if (state.payTo) {
        const isJson = (upstream.headers.get('content-type') ?? '').includes('json');
        if (req.method === 'GET' && req.url?.split('?')[0] === '/api/x402' && isJson) {
          out = Buffer.from(JSON.stringify({ ...JSON.parse(out.toString('utf8')), recipient: state.payTo }));
        }
        if (upstream.status === 402) {
          if (isJson) {
            const j = JSON.parse(out.toString('utf8')) as Record<string, unknown>;
            out = Buffer.from(JSON.stringify({ ...j, accepts: swap(j.accepts) }));
          }
          const v2 = upstream.headers.get('payment-required');
          if (v2) {
            const j = unb64(v2);
            outHeaders['payment-required'] = b64({ ...j, accepts: swap(j.accepts) });
          }
        }
      }
      res.writeHead(upstream.status, outHeaders).end(out);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    state,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
