import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { startS3Server, type S3Server } from '../helpers/s3rver.js';

const MiB = 1024 * 1024;

/** The same behaviour from the local folder store (uploads served by the service) and real S3. */
describe.each(['local', 's3'] as const)('blob store: %s', (kind) => {
  let h: Harness;
  let s3: S3Server | undefined;
  beforeAll(async () => {
    if (kind === 's3') s3 = await startS3Server();
    h = await startHarness('pglite', s3?.env ?? {});
    expect(h.deps.blobs.kind).toBe(kind);
  });
  afterAll(async () => {
    await h?.close();
    await s3?.close();
  });

  it('put, get, head, list, delete and deletePrefix', async () => {
    const blobs = h.deps.blobs;
    await blobs.put('sites/s1/files/a', Buffer.from('alpha'), 'text/plain');
    await blobs.put('sites/s1/files/b', Buffer.from('beta!'), 'text/plain');
    await blobs.put('sites/s2/files/c', Buffer.from('gamma'), 'text/plain');
    expect((await blobs.get('sites/s1/files/a'))?.toString()).toBe('alpha');
    expect(await blobs.head('sites/s1/files/b')).toEqual({ key: 'sites/s1/files/b', size: 5 });
    expect(await blobs.get('sites/s1/files/missing')).toBeNull();
    expect((await blobs.list('sites/s1/')).map((b) => b.key)).toEqual(['sites/s1/files/a', 'sites/s1/files/b']);
    expect(await blobs.deletePrefix('sites/s1/')).toBe(2);
    expect(await blobs.list('sites/s1/')).toEqual([]);
    expect((await blobs.get('sites/s2/files/c'))?.toString()).toBe('gamma');
    await blobs.delete('sites/s2/files/c');
    expect(await blobs.head('sites/s2/files/c')).toBeNull();
  });

  it('rejects keys that could escape the namespace', async () => {
    for (const key of ['../x', '/abs', 'a//b', 'a/./b', 'a\\b']) {
      await expect(h.deps.blobs.put(key, Buffer.from('x'))).rejects.toThrow(/unsafe blob key/);
    }
  });

  it('a presigned PUT uploads with plain fetch', async () => {
    const put = await h.deps.blobs.presignPut('uploads/p1/photo.png', { contentType: 'image/png', contentLength: 4, expiresInSeconds: 60 });
    const res = await fetch(put.url, { method: 'PUT', headers: put.headers, body: new Uint8Array([1, 2, 3, 4]) });
    expect(res.status).toBe(200);
    expect([...(await h.deps.blobs.get('uploads/p1/photo.png'))!]).toEqual([1, 2, 3, 4]);
  });

  it('a multipart upload through presigned part URLs assembles the parts in order', async () => {
    const upload = await h.deps.blobs.createMultipart('uploads/m1/data.csv', 'text/csv');
    const parts = [Buffer.alloc(5 * MiB, 'a'), Buffer.alloc(5 * MiB, 'b'), Buffer.from('tail')];
    const done = [];
    for (const [i, body] of parts.entries()) {
      const url = await h.deps.blobs.presignPart(upload, i + 1, 60);
      const res = await fetch(url, { method: 'PUT', body });
      expect(res.status).toBe(200);
      const etag = res.headers.get('etag')!;
      expect(etag.replaceAll('"', '')).toBe(createHash('md5').update(body).digest('hex'));
      done.push({ ETag: etag, PartNumber: i + 1 });
    }
    const info = await h.deps.blobs.completeMultipart(upload, done.reverse());
    expect(info.size).toBe(10 * MiB + 4);
    const all = (await h.deps.blobs.get('uploads/m1/data.csv'))!;
    expect(all.subarray(0, 1).toString()).toBe('a');
    expect(all.subarray(5 * MiB, 5 * MiB + 1).toString()).toBe('b');
    expect(all.subarray(-4).toString()).toBe('tail');
  });
});

describe('local presigned uploads are enforced by the service', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('pglite');
  });
  afterAll(async () => h?.close());

  it('refuses a wrong size, a wrong type, a tampered or an expired URL, and writes nothing', async () => {
    const put = await h.deps.blobs.presignPut('uploads/x/a.txt', { contentType: 'text/plain', contentLength: 5, expiresInSeconds: 60 });
    const tooBig = await fetch(put.url, { method: 'PUT', headers: put.headers, body: 'hello world' });
    expect(tooBig.status).toBe(413);
    const wrongType = await fetch(put.url, { method: 'PUT', headers: { 'content-type': 'text/html' }, body: 'hello' });
    expect(wrongType.status).toBe(400);
    const url = new URL(put.url);
    const token = url.searchParams.get('token')!;
    url.searchParams.set('token', `${token.slice(0, -3)}abc`);
    expect((await fetch(url, { method: 'PUT', headers: put.headers, body: 'hello' })).status).toBe(403);
    const expired = await h.deps.blobs.presignPut('uploads/x/b.txt', { contentType: 'text/plain', expiresInSeconds: -1 });
    expect((await fetch(expired.url, { method: 'PUT', headers: expired.headers, body: 'hello' })).status).toBe(403);
    expect(await h.deps.blobs.head('uploads/x/a.txt')).toBeNull();
    expect(await h.deps.blobs.head('uploads/x/b.txt')).toBeNull();
    const ok = await fetch(put.url, { method: 'PUT', headers: put.headers, body: 'hello' });
    expect(ok.status).toBe(200);
    expect((await h.deps.blobs.get('uploads/x/a.txt'))?.toString()).toBe('hello');
  });
});
