import type { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { S3Config } from '../kernel/config.js';
import { assertSafeKey, type BlobInfo, type BlobStore, type CompletedPart, type MultipartUpload, type PresignedPut } from './blob-store.js';

function isNotFound(e: unknown): boolean {
  const err = e as { name?: string; $metadata?: { httpStatusCode?: number } };
  return err.name === 'NoSuchKey' || err.name === 'NotFound' || err.$metadata?.httpStatusCode === 404;
}

/** Blobs in any S3-compatible bucket; uploads go straight to the bucket through presigned URLs. */
export class S3BlobStore implements BlobStore {
  readonly kind = 's3' as const;
  readonly client: S3Client;
  private readonly bucket: string;

  constructor(config: S3Config) {
    this.bucket = config.bucket;
    this.client = new S3Client({
      endpoint: config.endpoint,
      region: config.region,
      forcePathStyle: config.forcePathStyle,
      credentials: config.accessKeyId && config.secretAccessKey ? { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey } : undefined,
    });
  }

  async put(key: string, body: Uint8Array | Buffer, contentType?: string): Promise<void> {
    assertSafeKey(key);
    await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentType: contentType }));
  }

  async get(key: string): Promise<Buffer | null> {
    const stream = await this.getStream(key);
    if (!stream) return null;
    const chunks: Buffer[] = [];
    for await (const c of stream) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  }

  async getStream(key: string): Promise<Readable | null> {
    assertSafeKey(key);
    try {
      const r = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      return r.Body as Readable;
    } catch (e) {
      if (isNotFound(e)) return null;
      throw e;
    }
  }

  async head(key: string): Promise<BlobInfo | null> {
    assertSafeKey(key);
    try {
      const r = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return { key, size: Number(r.ContentLength ?? 0) };
    } catch (e) {
      if (isNotFound(e)) return null;
      throw e;
    }
  }

  async delete(key: string): Promise<void> {
    assertSafeKey(key);
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
  }

  async deletePrefix(prefix: string): Promise<number> {
    const items = await this.list(prefix);
    for (let i = 0; i < items.length; i += 1000) {
      const batch = items.slice(i, i + 1000);
      await this.client.send(new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: batch.map((b) => ({ Key: b.key })), Quiet: true } }));
    }
    return items.length;
  }

  async ping(): Promise<void> {
    await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
  }

  async list(prefix: string): Promise<BlobInfo[]> {
    const out: BlobInfo[] = [];
    let token: string | undefined;
    do {
      const r = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }));
      for (const o of r.Contents ?? []) if (o.Key) out.push({ key: o.Key, size: Number(o.Size ?? 0), modifiedAt: o.LastModified });
      token = r.IsTruncated ? r.NextContinuationToken : undefined;
    } while (token);
    return out;
  }

  async presignPut(key: string, o: { contentType?: string; contentLength?: number; expiresInSeconds: number }): Promise<PresignedPut> {
    assertSafeKey(key);
    const command = new PutObjectCommand({ Bucket: this.bucket, Key: key, ContentType: o.contentType, ContentLength: o.contentLength });
    const url = await getSignedUrl(this.client, command, { expiresIn: o.expiresInSeconds });
    return {
      url,
      method: 'PUT',
      headers: o.contentType ? { 'content-type': o.contentType } : {},
      expiresAt: new Date(Date.now() + o.expiresInSeconds * 1000).toISOString(),
    };
  }

  async createMultipart(key: string, contentType?: string): Promise<MultipartUpload> {
    assertSafeKey(key);
    const r = await this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: key, ContentType: contentType }));
    if (!r.UploadId) throw new Error('S3 did not return an upload id');
    return { uploadId: r.UploadId, key };
  }

  async presignPart(upload: MultipartUpload, partNumber: number, expiresInSeconds: number): Promise<string> {
    const command = new UploadPartCommand({ Bucket: this.bucket, Key: upload.key, UploadId: upload.uploadId, PartNumber: partNumber });
    return getSignedUrl(this.client, command, { expiresIn: expiresInSeconds });
  }

  async completeMultipart(upload: MultipartUpload, parts: CompletedPart[]): Promise<BlobInfo> {
    const sorted = [...parts].sort((a, b) => a.PartNumber - b.PartNumber);
    await this.client.send(
      new CompleteMultipartUploadCommand({
        Bucket: this.bucket,
        Key: upload.key,
        UploadId: upload.uploadId,
        MultipartUpload: { Parts: sorted.map((p) => ({ ETag: p.ETag, PartNumber: p.PartNumber })) },
      }),
    );
    const info = await this.head(upload.key);
    if (!info) throw new Error('multipart upload completed but the object is missing');
    return info;
  }

  async abortMultipart(upload: MultipartUpload): Promise<void> {
    await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: upload.key, UploadId: upload.uploadId }));
  }
}
