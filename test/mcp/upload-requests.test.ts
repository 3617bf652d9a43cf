import { describe, expect, it } from 'vitest';
import type { McpContext } from '../../mcp/context.js';
import { ToolFailure } from '../../mcp/results.js';
import { postToAccountApi } from '../../mcp/tools/account-tools.js';
import { putBytes, putInTurns } from '../../mcp/tools/upload-put.js';

// The requests the composite tools make beside their tools (the Account API's upload routes, the PUTs
// to upload URLs): a service or bucket that fails is a sentence saying so, never the fetch's bare error.
const contextWith = (fetch: typeof globalThis.fetch) => ({ config: { serviceUrl: 'http://svc.test', apiKey: 'svc_pat_test' }, fetch }) as unknown as McpContext;
const refused: typeof fetch = async () => {
  throw new TypeError('connect ECONNREFUSED 127.0.0.1:9');
};
const failure = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error('did not fail');
    },
    (e: unknown) => {
      expect(e).toBeInstanceOf(ToolFailure);
      return (e as Error).message;
    },
  );

describe('requests of the composite tools', () => {
  it('an Account API route that does not answer is a ToolFailure naming why; one that refuses says its words', async () => {
    expect(await failure(postToAccountApi(contextWith(refused), '/sites/a/upload-urls', { files: [] }))).toBe(
      'the service did not answer (connect ECONNREFUSED 127.0.0.1:9).',
    );
    const seen: { url: string; auth: string | null }[] = [];
    const answering: typeof fetch = async (url, init) => {
      seen.push({ url: String(url), auth: new Headers(init?.headers).get('authorization') });
      return Response.json({ error: { code: 'not_found', message: 'app a not found' } }, { status: 404 });
    };
    expect(await failure(postToAccountApi(contextWith(answering), '/sites/a/upload-urls', { files: [] }))).toBe('app a not found [HTTP 404 not_found].');
    expect(seen).toEqual([{ url: 'http://svc.test/api/v1/sites/a/upload-urls', auth: 'Bearer svc_pat_test' }]);
  });

  it('a PUT that cannot connect or is refused is a ToolFailure in the caller words, with the reason', async () => {
    const said = (reason: string) => `uploading a.png failed ${reason}.`;
    const body = new Uint8Array([1, 2, 3]);
    expect(await failure(putBytes(contextWith(refused), 'http://bucket.test/a', { headers: {}, body }, said))).toBe(
      'uploading a.png failed (connect ECONNREFUSED 127.0.0.1:9).',
    );
    const denied: typeof fetch = async () => new Response('SignatureDoesNotMatch', { status: 403 });
    expect(await failure(putBytes(contextWith(denied), 'http://bucket.test/a', { headers: {}, body }, said))).toBe(
      'uploading a.png failed with HTTP 403 (SignatureDoesNotMatch).',
    );
  });

  it('puts at most four at once, starts none after a failure, and throws that failure', async () => {
    let inFlight = 0;
    let most = 0;
    const started: number[] = [];
    const put = async (i: number) => {
      started.push(i);
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((r) => setTimeout(r, 5));
      inFlight--;
      if (i === 5) throw new ToolFailure('part 5 failed');
    };
    await expect(putInTurns([...Array(20).keys()], put)).rejects.toThrow('part 5 failed');
    expect(most).toBe(4);
    expect(started.length).toBeLessThan(10);
    started.length = 0;
    await putInTurns([0, 1, 2], put);
    expect(started.sort()).toEqual([0, 1, 2]);
  });
});
