import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { assertSafeKey, type BlobInfo, type BlobStore, type CompletedPart, type MultipartUpload, type PresignedPut } from './blob-store.js';

/** The path under the service where signed local uploads arrive (see upload-routes.ts). */
export const LOCAL_UPLOAD_PATH = '/_blobs/upload';

export interface LocalUploadClaims {
  op: 'put' | 'part';
  key: string;
  uploadId?: string;
  part?: number;
  contentType?: string;
  contentLength?: number;
  exp: number;
}

/**
 * Blobs in a local folder. Presigned URLs point back at the service itself: an HMAC over the claims
 * (operation, key, size, type, expiry) that the upload route checks before it writes a byte.
 */
export class LocalBlobStore implements BlobStore {
  readonly kind = 'local' as const;
  private readonly multipartDir: string;

  constructor(
    private readonly root: string,
    private readonly baseUrl: string,
    private readonly secret: string,
    private readonly now: () => number = Date.now,
  ) {
    this.multipartDir = path.join(root, '.multipart');
    fs.mkdirSync(this.multipartDir, { recursive: true });
  }

  private file(key: string): string {
    assertSafeKey(key);
    return path.join(this.root, ...key.split('/'));
  }

  async put(key: string, body: Uint8Array | Buffer): Promise<void> {
    const target = this.file(key);
    await fsp.mkdir(path.dirname(target), { recursive: true });
    const tmp = `${target}.${randomBytes(6).toString('hex')}.tmp`;
    await fsp.writeFile(tmp, body);
    await fsp.rename(tmp, target);
  }

  /** Moves a finished file into place (used by uploads that were streamed to disk). */
  async putFile(key: string, sourcePath: string): Promise<void> {
    const target = this.file(key);
    await fsp.mkdir(path.dirname(target), { recursive: true });
    await fsp.rename(sourcePath, target);
  }

  async get(key: string): Promise<Buffer | null> {
    try {
      return await fsp.readFile(this.file(key));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
  }

  async getStream(key: string): Promise<Readable | null> {
    const f = this.file(key);
    try {
      await fsp.access(f);
    } catch {
      return null;
    }
    return fs.createReadStream(f);
  }

  async head(key: string): Promise<BlobInfo | null> {
    try {
      const st = await fsp.stat(this.file(key));
      return st.isFile() ? { key, size: st.size } : null;
    } catch {
      return null;
    }
  }

  async delete(key: string): Promise<void> {
    await fsp.rm(this.file(key), { force: true });
  }

  async deletePrefix(prefix: string): Promise<number> {
    const items = await this.list(prefix);
    await Promise.all(items.map((i) => this.delete(i.key)));
    const dir = prefix.endsWith('/') ? prefix.slice(0, -1) : undefined;
    if (dir) await fsp.rm(this.file(dir), { recursive: true, force: true });
    return items.length;
  }

  async list(prefix: string): Promise<BlobInfo[]> {
    const out: BlobInfo[] = [];
    const walk = async (dir: string, rel: string): Promise<void> => {
      let entries: fs.Dirent[];
      try {
        entries = await fsp.readdir(dir, { withFileTypes: true });
      } catch {
        return;
      }
      for (const ent of entries) {
        if (ent.name === '.multipart' || ent.name.endsWith('.tmp')) continue;
        const relKey = rel ? `${rel}/${ent.name}` : ent.name;
        if (ent.isDirectory()) await walk(path.join(dir, ent.name), relKey);
        else if (relKey.startsWith(prefix)) {
          const st = await fsp.stat(path.join(dir, ent.name)).catch(() => null); // deleted meanwhile
          if (st) out.push({ key: relKey, size: st.size, modifiedAt: st.mtime });
        }
      }
    };
    // Walk only the deepest folder the prefix names, not the whole store.
    const folder = prefix.includes('/') ? prefix.slice(0, prefix.lastIndexOf('/')) : '';
    await walk(folder ? this.file(folder) : this.root, folder);
    return out.sort((a, b) => a.key.localeCompare(b.key));
  }

  async ping(): Promise<void> {
    await fsp.access(this.root, fs.constants.W_OK);
  }

  sign(claims: LocalUploadClaims): string {
    const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
    const mac = createHmac('sha256', this.secret).update(`blob-upload:${payload}`).digest('base64url');
    return `${payload}.${mac}`;
  }

  /** Returns the claims of a valid, unexpired upload token, or null. */
  verify(token: string): LocalUploadClaims | null {
    const [payload, mac] = token.split('.');
    if (!payload || !mac) return null;
    const expected = createHmac('sha256', this.secret).update(`blob-upload:${payload}`).digest();
    const given = Buffer.from(mac, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as LocalUploadClaims;
    return claims.exp * 1000 > this.now() ? claims : null;
  }

  private url(claims: LocalUploadClaims): string {
    return `${this.baseUrl}${LOCAL_UPLOAD_PATH}?token=${encodeURIComponent(this.sign(claims))}`;
  }

  async presignPut(key: string, o: { contentType?: string; contentLength?: number; expiresInSeconds: number }): Promise<PresignedPut> {
    assertSafeKey(key);
    const exp = Math.floor(this.now() / 1000) + o.expiresInSeconds;
    const headers: Record<string, string> = o.contentType ? { 'content-type': o.contentType } : {};
    return {
      url: this.url({ op: 'put', key, contentType: o.contentType, contentLength: o.contentLength, exp }),
      method: 'PUT',
      headers,
      expiresAt: new Date(exp * 1000).toISOString(),
    };
  }

  async createMultipart(key: string): Promise<MultipartUpload> {
    assertSafeKey(key);
    const uploadId = randomBytes(16).toString('hex');
    await fsp.mkdir(path.join(this.multipartDir, uploadId), { recursive: true });
    await fsp.writeFile(path.join(this.multipartDir, uploadId, 'key'), key);
    return { uploadId, key };
  }

  async presignPart(upload: MultipartUpload, partNumber: number, expiresInSeconds: number): Promise<string> {
    const exp = Math.floor(this.now() / 1000) + expiresInSeconds;
    return this.url({ op: 'part', key: upload.key, uploadId: upload.uploadId, part: partNumber, exp });
  }

  private partDir(uploadId: string): string {
    if (!/^[0-9a-f]{32}$/.test(uploadId)) throw new Error('unknown upload id');
    return path.join(this.multipartDir, uploadId);
  }

  /** Stores one part of a multipart upload; returns its ETag (MD5 in quotes, as S3 does). */
  async putPart(uploadId: string, key: string, partNumber: number, body: Buffer): Promise<string> {
    const dir = this.partDir(uploadId);
    const storedKey = await fsp.readFile(path.join(dir, 'key'), 'utf8').catch(() => null);
    if (storedKey !== key) throw new Error('unknown upload id');
    await fsp.writeFile(path.join(dir, `part-${partNumber}`), body);
    return `"${createHash('md5').update(body).digest('hex')}"`;
  }

  async completeMultipart(upload: MultipartUpload, parts: CompletedPart[]): Promise<BlobInfo> {
    const dir = this.partDir(upload.uploadId);
    const storedKey = await fsp.readFile(path.join(dir, 'key'), 'utf8').catch(() => null);
    if (storedKey !== upload.key) throw new Error('unknown upload id or key');
    const sorted = [...parts].sort((a, b) => a.PartNumber - b.PartNumber);
    const target = this.file(upload.key);
    await fsp.mkdir(path.dirname(target), { recursive: true });
    const tmp = `${target}.${randomBytes(6).toString('hex')}.tmp`;
    const out = fs.createWriteStream(tmp);
    let size = 0;
    try {
      for (const p of sorted) {
        const body = await fsp.readFile(path.join(dir, `part-${p.PartNumber}`)).catch(() => null);
        if (!body) throw new Error(`part ${p.PartNumber} was never uploaded`);
        const etag = `"${createHash('md5').update(body).digest('hex')}"`;
        if (etag !== (p.ETag.startsWith('"') ? p.ETag : `"${p.ETag}"`)) throw new Error(`part ${p.PartNumber}: ETag does not match the uploaded bytes`);
        size += body.length;
        if (!out.write(body)) await new Promise<void>((r) => out.once('drain', () => r()));
      }
      await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
    } catch (e) {
      out.destroy();
      await fsp.rm(tmp, { force: true });
      throw e;
    }
    await fsp.rename(tmp, target);
    await fsp.rm(dir, { recursive: true, force: true });
    return { key: upload.key, size };
  }

  async abortMultipart(upload: MultipartUpload): Promise<void> {
    await fsp.rm(this.partDir(upload.uploadId), { recursive: true, force: true });
  }
}
