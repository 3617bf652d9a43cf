import type { Readable } from 'node:stream';

export interface BlobInfo {
  key: string;
  size: number;
  /** When the bytes were last written (listings only; housekeeping keeps young unreferenced blobs). */
  modifiedAt?: Date;
}

export interface PresignedPut {
  url: string;
  method: 'PUT';
  /** Headers the uploader must send with the PUT (e.g. the signed Content-Type). */
  headers: Record<string, string>;
  expiresAt: string;
}

export interface MultipartUpload {
  uploadId: string;
  key: string;
}

export interface CompletedPart {
  ETag: string;
  PartNumber: number;
}

/**
 * Where file bytes live: a local folder (embedded default) or any S3-compatible bucket. Keys are
 * `/`-separated relative paths chosen by the service, never by a caller.
 */
export interface BlobStore {
  readonly kind: 'local' | 's3';
  put(key: string, body: Uint8Array | Buffer, contentType?: string): Promise<void>;
  get(key: string): Promise<Buffer | null>;
  getStream(key: string): Promise<Readable | null>;
  head(key: string): Promise<BlobInfo | null>;
  delete(key: string): Promise<void>;
  /** Deletes every key under the prefix (e.g. all files of a deleted site). */
  deletePrefix(prefix: string): Promise<number>;
  list(prefix: string): Promise<BlobInfo[]>;
  /** Throws when the store cannot be reached (readiness): the folder is not writable, the bucket does not answer. */
  ping(): Promise<void>;
  presignPut(key: string, options: { contentType?: string; contentLength?: number; expiresInSeconds: number }): Promise<PresignedPut>;
  createMultipart(key: string, contentType?: string): Promise<MultipartUpload>;
  presignPart(upload: MultipartUpload, partNumber: number, expiresInSeconds: number): Promise<string>;
  completeMultipart(upload: MultipartUpload, parts: CompletedPart[]): Promise<BlobInfo>;
  abortMultipart(upload: MultipartUpload): Promise<void>;
}

/** Rejects keys that could escape the store's namespace. */
export function assertSafeKey(key: string): void {
  if (!key || key.startsWith('/') || key.includes('\\') || key.split('/').some((p) => p === '..' || p === '.' || p === '') || key.includes('\0')) {
    throw new Error(`unsafe blob key: ${JSON.stringify(key)}`);
  }
}
