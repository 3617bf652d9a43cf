import { Hono } from 'hono';
import { AppError } from '../kernel/app-error.js';
import type { Config } from '../kernel/config.js';
import { LOCAL_UPLOAD_PATH, type LocalBlobStore } from './local-store.js';

/** Largest single part accepted by the local store's multipart upload (S3 allows 5 GiB). */
const MAX_PART_BYTES = 128 * 1024 * 1024;

async function readBody(req: Request, max: number): Promise<Buffer> {
  const declared = Number(req.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > max) throw new AppError('payload_too_large', `upload is ${declared} bytes; at most ${max} allowed here`);
  const chunks: Buffer[] = [];
  let size = 0;
  if (req.body) {
    for await (const chunk of req.body as unknown as AsyncIterable<Uint8Array>) {
      size += chunk.length;
      if (size > max) throw new AppError('payload_too_large', `upload exceeds ${max} bytes`);
      chunks.push(Buffer.from(chunk));
    }
  }
  return Buffer.concat(chunks);
}

/**
 * The local blob store's stand-in for S3 presigned URLs: `PUT /_blobs/upload?token=…`. The token
 * (HMAC, expiring) fixes the key, the size and the content type; nothing else can be written.
 * Only mounted when blobs are local.
 */
export function localUploadRoutes(deps: { config: Config }, store: LocalBlobStore): Hono {
  const r = new Hono();
  r.options(LOCAL_UPLOAD_PATH, (c) =>
    c.body(null, 204, {
      'access-control-allow-origin': '*',
      'access-control-allow-methods': 'PUT',
      'access-control-allow-headers': 'content-type',
      'access-control-expose-headers': 'etag',
      'access-control-max-age': '600',
    }),
  );
  r.put(LOCAL_UPLOAD_PATH, async (c) => {
    const claims = store.verify(c.req.query('token') ?? '');
    if (!claims) throw new AppError('forbidden', 'upload URL is invalid or expired; request a new one');
    const cors = { 'access-control-allow-origin': '*', 'access-control-expose-headers': 'etag' };
    if (claims.op === 'put') {
      const type = c.req.header('content-type');
      // As S3 checks a signed Content-Type: the value before its parameters, exactly.
      const bare = (t: string) => t.replace(/;.*$/s, '').trim();
      if (claims.contentType && (type === undefined || bare(type) !== bare(claims.contentType))) {
        throw new AppError('validation_failed', `Content-Type must be ${claims.contentType} (as signed)`);
      }
      const body = await readBody(c.req.raw, claims.contentLength ?? deps.config.limits.maxFileBytes);
      if (claims.contentLength !== undefined && body.length !== claims.contentLength) {
        throw new AppError('validation_failed', `upload is ${body.length} bytes; the URL was signed for ${claims.contentLength}`);
      }
      await store.put(claims.key, body);
      return c.body(null, 200, cors);
    }
    const body = await readBody(c.req.raw, MAX_PART_BYTES);
    try {
      const etag = await store.putPart(claims.uploadId!, claims.key, claims.part!, body);
      return c.body(null, 200, { ...cors, etag });
    } catch {
      throw new AppError('not_found', 'unknown multipart upload');
    }
  });
  return r;
}
