import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPublicClient, http as viemHttp, type PublicClient } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonRpcTransport, type JsonRpcTransport } from '../../service/payments/json-rpc-transport.js';

// The settler's transport answers, and fails, the way viem's own `http` transport does: every case
// below is asked through both, against the same JSON-RPC server.
describe('the JSON-RPC transport (service/payments/json-rpc-transport.ts)', () => {
  let server: http.Server;
  let base: string;
  let connections = 0;
  const authorizations: (string | undefined)[] = [];
  const batches: string[][] = [];
  const singles: string[] = [];
  let ours: JsonRpcTransport;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let text = '';
      req.on('data', (c) => (text += c));
      req.on('end', () => {
        authorizations.push(req.headers.authorization);
        const json = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
        const parsed = JSON.parse(text) as { id: number; method: string } | { id: number; method: string }[];
        if (Array.isArray(parsed)) {
          batches.push(parsed.map((r) => r.method));
          if (parsed.some((r) => r.method === 'eth_chainId'))
            return json(400, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'batch requests are not supported' } });
          // Answered out of order: matched by id.
          const answers = parsed.map(({ id, method }) =>
            method === 'eth_blockNumber'
              ? { jsonrpc: '2.0', id, result: '0x2a' }
              : { jsonrpc: '2.0', id, error: { code: -32601, message: `${method} does not exist` } },
          );
          return json(200, answers.reverse());
        }
        singles.push(parsed.method);
        const { id, method } = parsed;
        if (method === 'eth_blockNumber') json(200, { jsonrpc: '2.0', id, result: '0x2a' });
        else if (method === 'eth_call')
          json(200, { jsonrpc: '2.0', id, error: { code: 3, message: 'execution reverted: FiatTokenV2: authorization is used or canceled', data: '0x' } });
        else if (method === 'eth_sendRawTransaction') json(200, { jsonrpc: '2.0', id, error: { code: -32003, message: 'nonce too low' } });
        else if (method === 'eth_chainId') res.writeHead(502, { 'content-type': 'text/plain' }).end('bad gateway');
        else if (method === 'eth_gasPrice') json(429, { jsonrpc: '2.0', id, error: { code: -32005, message: 'rate limited' } });
        // eth_getBalance: never answered (a stalled node)
      });
    });
    server.on('connection', () => connections++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    ours = jsonRpcTransport(base.replace('http://', 'http://rpc-user:s3cret%21@'), { timeoutMs: 300 });
  });
  afterAll(async () => {
    ours?.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const clients = () =>
    [
      ['ours', createPublicClient({ transport: ours.transport }) as PublicClient],
      ['viem http', createPublicClient({ transport: viemHttp(base, { retryCount: 0, timeout: 300 }) }) as PublicClient],
    ] as const;

  /** What a caller can see of an error: its class and messages. */
  const seen = (e: unknown) => {
    const err = e as Error & { shortMessage?: string; details?: string; code?: number; status?: number };
    const walk = (x: Error | undefined): string[] => (x ? [x.name, ...walk((x as { cause?: Error }).cause)] : []);
    return { classes: walk(err), shortMessage: err.shortMessage, details: err.details, code: err.code };
  };

  it('answers a result, over one kept-alive connection', async () => {
    const before = connections;
    for (const [, client] of clients()) expect(await client.getBlockNumber({ cacheTime: 0 })).toBe(42n);
    const [[, client]] = clients();
    for (let i = 0; i < 5; i++) await client.getBlockNumber({ cacheTime: 0 });
    expect(connections - before).toBe(2); // one each; viem's `fetch` keeps its connection alive too
  });

  it('a JSON-RPC error, a revert, an HTTP error and a timeout surface as the same viem errors', async () => {
    const cases: ((c: PublicClient) => Promise<unknown>)[] = [
      (c) => c.call({ to: '0x0000000000000000000000000000000000000001', data: '0x' }),
      (c) => c.sendRawTransaction({ serializedTransaction: '0x02' }),
      (c) => c.getChainId(),
      (c) => c.getGasPrice(),
      (c) => c.getBalance({ address: '0x0000000000000000000000000000000000000001' }),
    ];
    for (const run of cases) {
      const [[, mine], [, theirs]] = clients();
      const a = seen(await run(mine).catch((e: unknown) => e));
      const b = seen(await run(theirs).catch((e: unknown) => e));
      expect(a).toEqual(b);
      expect(a.classes.length).toBeGreaterThan(0);
    }
    const reverted = await clients()[0][1]
      .call({ to: '0x0000000000000000000000000000000000000001', data: '0x' })
      .catch((e: Error) => e);
    expect((reverted as Error).message).toMatch(/authorization is used or canceled/);
  });

  it('a node that does not answer at all is an HttpRequestError, as with viem', async () => {
    const closed = jsonRpcTransport('http://127.0.0.1:9/');
    const mine = seen(
      await createPublicClient({ transport: closed.transport })
        .getBlockNumber()
        .catch((e: unknown) => e),
    );
    const theirs = seen(
      await createPublicClient({ transport: viemHttp('http://127.0.0.1:9/', { retryCount: 0 }) })
        .getBlockNumber()
        .catch((e: unknown) => e),
    );
    closed.close();
    expect(mine.classes[0]).toBe('HttpRequestError');
    expect(mine.classes[0]).toBe(theirs.classes[0]);
  });

  it('sends the URL’s credentials as Basic authorization and never shows them in an error', async () => {
    authorizations.length = 0;
    const [[, client]] = clients();
    await client.getBlockNumber({ cacheTime: 0 });
    expect(authorizations).toEqual([`Basic ${Buffer.from('rpc-user:s3cret!').toString('base64')}`]);
    const err = (await client.getChainId().catch((e: unknown) => e)) as Error;
    expect(err.message).not.toMatch(/s3cret|rpc-user/);
  });

  it('batching: the requests of one turn go as one exchange, each answered by its id; a lone request goes alone', async () => {
    const batched = jsonRpcTransport(base, { batch: true });
    const client = createPublicClient({ transport: batched.transport }) as PublicClient;
    try {
      batches.length = 0;
      singles.length = 0;
      const [a, b, c] = await Promise.allSettled([
        client.getBlockNumber({ cacheTime: 0 }),
        client.request({ method: 'eth_accounts' } as never),
        client.request({ method: 'eth_coinbase' } as never),
      ]);
      expect(batches).toEqual([['eth_blockNumber', 'eth_accounts', 'eth_coinbase']]);
      expect(a).toEqual({ status: 'fulfilled', value: 42n });
      expect(seen((b as PromiseRejectedResult).reason)).toMatchObject({ code: -32601, details: 'eth_accounts does not exist' });
      expect(seen((c as PromiseRejectedResult).reason)).toMatchObject({ code: -32601, details: 'eth_coinbase does not exist' });

      expect(await client.getBlockNumber({ cacheTime: 0 })).toBe(42n);
      expect(batches).toHaveLength(1);
      expect(singles).toEqual(['eth_blockNumber']);

      // A node that refuses the batch: every request in it fails with the node's error.
      const refused = await Promise.allSettled([client.getChainId(), client.getBlockNumber({ cacheTime: 0 })]);
      expect(refused.map((r) => r.status)).toEqual(['rejected', 'rejected']);
      expect(seen((refused[1] as PromiseRejectedResult).reason)).toMatchObject({ code: -32600, details: 'batch requests are not supported' });
    } finally {
      batched.close();
    }
  });
});
