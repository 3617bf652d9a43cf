import { createHmac, timingSafeEqual } from 'node:crypto';
import { and, eq, lt, notExists, sql } from 'drizzle-orm';
import type { DbOrTx } from '../db/client.js';
import { newId } from '../kernel/ids.js';
import { datasets, datasetUploads } from '../db/schema/index.js';
import type { Deps } from '../deps.js';
import { AppError } from '../kernel/app-error.js';
import type { CompletedPart } from '../storage/blob-store.js';
import { ACCEPTED_KINDS, detectKind, kindInfo } from './formats.js';
import type { DataFileKind } from './records.js';

export type UploadRow = typeof datasetUploads.$inferSelect;

/** S3's hard limit on parts per multipart upload. */
const MAX_PARTS = 10_000;

export function datasetsPrefix(siteId: string): string {
  return `sites/${siteId}/datasets/`;
}

/** A file name as a safe last key segment: `My Data (1).csv` → `My_Data_1_.csv`. */
export function safeFileName(name: string): string {
  const base = name.split(/[\\/]/).pop() ?? 'file';
  const cleaned = base
    .replace(/[^A-Za-z0-9._-]+/g, '_')
    .replace(/^\.+/, '')
    .slice(-120);
  return cleaned || 'file';
}

export interface UploadPlan {
  kind: DataFileKind;
  strategy: 'single' | 'multipart';
  partSize: number;
  partCount: number;
}

/**
 * Validates a requested upload (free, before payment): the kind must be one we convert, the size
 * positive and within the limit. Files above the threshold are uploaded in parts.
 */
export function planUpload(deps: Deps, input: { fileName: string; fileSize: number; fileType?: string }): UploadPlan {
  const kind = detectKind(input.fileName, input.fileType);
  if (!kind) {
    throw new AppError(
      'validation_failed',
      `"${input.fileName}"${input.fileType ? ` (${input.fileType})` : ''} is not a data file kind we convert; accepted: ${ACCEPTED_KINDS}`,
      {
        issues: [{ field: 'fileName', message: `unsupported kind; accepted: ${ACCEPTED_KINDS}` }],
      },
    );
  }
  const c = deps.config.datasets;
  if (!Number.isSafeInteger(input.fileSize) || input.fileSize < 1) {
    throw new AppError('validation_failed', 'fileSize must be a positive whole number of bytes', {
      issues: [{ field: 'fileSize', message: 'positive integer' }],
    });
  }
  if (input.fileSize > c.maxFileBytes) {
    throw new AppError('payload_too_large', `the file is ${input.fileSize} bytes; data files may be at most ${c.maxFileBytes} bytes`, {
      max: c.maxFileBytes,
      size: input.fileSize,
    });
  }
  return { kind, ...partsFor(deps, input.fileSize) };
}

/** `single` up to the threshold; above it parts of `partBytes` (raised to stay within 10,000 parts). */
export function partsFor(deps: Deps, fileSize: number): Omit<UploadPlan, 'kind'> {
  const c = deps.config.datasets;
  if (fileSize <= c.multipartThresholdBytes) return { strategy: 'single', partSize: fileSize, partCount: 1 };
  const partSize = Math.max(c.partBytes, Math.ceil(fileSize / MAX_PARTS));
  return { strategy: 'multipart', partSize, partCount: Math.ceil(fileSize / partSize) };
}

/** A new upload slot: its id, its blob key under the site's datasets, and when it expires. */
function newSlot(deps: Deps, siteId: string, fileName: string): { id: string; key: string; createdAt: Date; expiresAt: Date } {
  const id = newId('dsu');
  const createdAt = deps.clock.now();
  return {
    id,
    key: `${datasetsPrefix(siteId)}uploads/${id}/${safeFileName(fileName)}`,
    createdAt,
    expiresAt: new Date(createdAt.getTime() + deps.config.datasets.uploadTtlSeconds * 1000),
  };
}

/** The slot's row, which conversion and completion look the key up by. */
async function recordSlot(
  db: DbOrTx,
  slot: ReturnType<typeof newSlot>,
  row: Pick<UploadRow, 'siteId' | 'fileName' | 'format' | 'declaredBytes' | 'strategy'> & { multipartUploadId?: string },
): Promise<void> {
  await db.insert(datasetUploads).values({ ...slot, ...row });
}

export interface UploadTokenClaims {
  /** Upload slot id. */
  u: string;
  /** Site id. */
  s: string;
  /** Blob key. */
  k: string;
  /** Expiry, epoch seconds. */
  e: number;
}

/** `uploadToken`: an HMAC-signed, expiring reference to one upload slot (key + site). */
export function signUploadToken(secret: string, claims: UploadTokenClaims): string {
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  const mac = createHmac('sha256', secret).update(`dataset-upload:${payload}`).digest('base64url');
  return `dsu_${payload}.${mac}`;
}

export function verifyUploadToken(secret: string, token: string, now: Date): UploadTokenClaims | null {
  const m = /^dsu_([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/.exec(token);
  if (!m) return null;
  const payload = m[1]!;
  const mac = m[2]!;
  const expected = createHmac('sha256', secret).update(`dataset-upload:${payload}`).digest();
  const given = Buffer.from(mac, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as UploadTokenClaims;
    return claims.e * 1000 > now.getTime() ? claims : null;
  } catch {
    return null;
  }
}

/** A given uploadToken must be valid, unexpired, and name this site and key (none given: nothing to check). */
export function assertUploadToken(deps: Deps, token: string | undefined, siteId: string, key: string): void {
  if (token === undefined) return;
  const claims = verifyUploadToken(deps.secret, token, deps.clock.now());
  if (!claims || claims.s !== siteId || claims.k !== key) {
    throw new AppError('validation_failed', 'uploadToken is invalid, expired, or for another key', {
      issues: [{ field: 'uploadToken', message: 'invalid for this key' }],
    });
  }
}

export interface SingleUpload {
  strategy: 'single';
  key: string;
  uploadToken: string;
  kind: DataFileKind;
  upload: { url: string; method: 'PUT'; headers: Record<string, string> };
  expiresAt: string;
}

export interface MultipartUploadAnswer {
  strategy: 'multipart';
  key: string;
  uploadToken: string;
  kind: DataFileKind;
  uploadId: string;
  partSize: number;
  parts: { partNumber: number; url: string; size: number }[];
  expiresAt: string;
}

/**
 * Opens an upload slot on the site and signs its URL(s): one presigned PUT (bound to the size and
 * content type), or a multipart upload on the store with one presigned URL per part. The slot row
 * is written in `db` (the paid call's transaction).
 */
export async function createUpload(
  deps: Deps,
  site: { id: string },
  input: { fileName: string; fileSize: number; fileType?: string },
  db: DbOrTx = deps.db,
): Promise<SingleUpload | MultipartUploadAnswer> {
  const plan = planUpload(deps, input);
  const slot = newSlot(deps, site.id, input.fileName);
  const { id, key, expiresAt } = slot;
  const ttl = deps.config.datasets.uploadTtlSeconds;
  const row = { siteId: site.id, fileName: input.fileName, format: plan.kind, declaredBytes: input.fileSize };
  const uploadToken = signUploadToken(deps.secret, { u: id, s: site.id, k: key, e: Math.floor(expiresAt.getTime() / 1000) });
  const contentType = kindInfo(plan.kind).contentType;
  if (plan.strategy === 'single') {
    const put = await deps.blobs.presignPut(key, { contentType, contentLength: input.fileSize, expiresInSeconds: ttl });
    await recordSlot(db, slot, { ...row, strategy: 'single' });
    return { strategy: 'single', key, uploadToken, kind: plan.kind, upload: { url: put.url, method: 'PUT', headers: put.headers }, expiresAt: put.expiresAt };
  }
  const mp = await deps.blobs.createMultipart(key, contentType);
  const parts: MultipartUploadAnswer['parts'] = [];
  for (let n = 1; n <= plan.partCount; n++) {
    const size = n < plan.partCount ? plan.partSize : input.fileSize - plan.partSize * (plan.partCount - 1);
    parts.push({ partNumber: n, url: await deps.blobs.presignPart(mp, n, ttl), size });
  }
  await recordSlot(db, slot, { ...row, strategy: 'multipart', multipartUploadId: mp.uploadId });
  return {
    strategy: 'multipart',
    key,
    uploadToken,
    kind: plan.kind,
    uploadId: mp.uploadId,
    partSize: plan.partSize,
    parts,
    expiresAt: expiresAt.toISOString(),
  };
}

/**
 * A data file given whole (the Account API's inline file): an upload slot as `createUpload` opens
 * one, with the bytes stored at once instead of a URL to PUT them to. The kind and size are checked
 * first (`planUpload`). Returns the slot's key, which `planConversion` takes.
 */
export async function storeInlineUpload(deps: Deps, site: { id: string }, input: { fileName: string; bytes: Buffer }, db: DbOrTx = deps.db): Promise<string> {
  const plan = planUpload(deps, { fileName: input.fileName, fileSize: input.bytes.length });
  const slot = newSlot(deps, site.id, input.fileName);
  await deps.blobs.put(slot.key, input.bytes, kindInfo(plan.kind).contentType);
  await recordSlot(db, slot, { siteId: site.id, fileName: input.fileName, format: plan.kind, declaredBytes: input.bytes.length, strategy: 'single' });
  return slot.key;
}

/** Removes an upload slot and its bytes (an inline file whose conversion was refused): best effort, housekeeping collects what is left. */
export async function dropUpload(deps: Deps, siteId: string, key: string): Promise<void> {
  await deps.blobs.delete(key).catch(() => undefined);
  await deps.db
    .delete(datasetUploads)
    .where(and(eq(datasetUploads.siteId, siteId), eq(datasetUploads.key, key)))
    .catch(() => undefined);
}

/** The upload slot holding `key` on this site; 404 otherwise (another site's key is not found). */
export async function getSiteUpload(db: DbOrTx, siteId: string, key: string): Promise<UploadRow> {
  const [row] = await db
    .select()
    .from(datasetUploads)
    .where(and(eq(datasetUploads.siteId, siteId), eq(datasetUploads.key, key)));
  if (!row) throw new AppError('not_found', `no data-file upload with key "${key}" on this app; request one with create_data_file_upload_url`);
  return row;
}

/** Free checks of complete_data_file_multipart_upload: the slot exists, is multipart, the id matches, the parts are sane. */
export async function checkCompletion(deps: Deps, siteId: string, input: { uploadId: string; key: string; parts: CompletedPart[] }): Promise<UploadRow> {
  const row = await getSiteUpload(deps.db, siteId, input.key);
  if (row.strategy !== 'multipart' || row.multipartUploadId !== input.uploadId) {
    throw new AppError('not_found', `no multipart upload ${input.uploadId} for key "${input.key}"`);
  }
  const numbers = input.parts.map((p) => p.PartNumber);
  if (new Set(numbers).size !== numbers.length) {
    throw new AppError('validation_failed', 'each PartNumber may appear once', { issues: [{ field: 'parts', message: 'duplicate PartNumber' }] });
  }
  const expected = partsFor(deps, row.declaredBytes).partCount;
  if (numbers.length !== expected || numbers.some((n) => n < 1 || n > expected)) {
    throw new AppError('validation_failed', `give all ${expected} parts, numbered 1–${expected}, with the ETag each PUT answered`, {
      issues: [{ field: 'parts', message: `expected parts 1–${expected}` }],
    });
  }
  return row;
}

/**
 * Completes the store's multipart upload (S3 CompleteMultipartUpload, or the local store's
 * concatenation, which checks each part's ETag). The result must have the declared size; a file
 * of another size is deleted and refused. Completing again is a no-op that answers success.
 */
export async function completeUpload(deps: Deps, row: UploadRow, parts: CompletedPart[], db: DbOrTx = deps.db): Promise<{ size: number }> {
  if (row.completedAt) {
    const info = await deps.blobs.head(row.key);
    if (info) return { size: info.size };
  }
  let size: number;
  try {
    size = (await deps.blobs.completeMultipart({ uploadId: row.multipartUploadId!, key: row.key }, parts)).size;
  } catch (e) {
    // Blob writes are not transactional: a completion whose paid call was rolled back left the
    // file in place, and the store forgot the upload id. The file of the declared size is the answer.
    const info = await deps.blobs.head(row.key);
    if (info && info.size === row.declaredBytes) {
      await db.update(datasetUploads).set({ completedAt: deps.clock.now() }).where(eq(datasetUploads.id, row.id));
      return { size: info.size };
    }
    throw new AppError('validation_failed', `the multipart upload could not be completed: ${(e as Error).message}`, {
      issues: [{ field: 'parts', message: 'check that every part was uploaded and its ETag is the one the PUT answered' }],
    });
  }
  if (size !== row.declaredBytes) {
    await deps.blobs.delete(row.key);
    throw new AppError('validation_failed', `the uploaded file is ${size} bytes; ${row.declaredBytes} were declared. Request a new upload.`, {
      issues: [{ field: 'parts', message: 'size mismatch' }],
    });
  }
  await db.update(datasetUploads).set({ completedAt: deps.clock.now() }).where(eq(datasetUploads.id, row.id));
  return { size };
}

/** An upload slot is kept this long past its expiry (a convert that started in time can finish). */
export const ABANDONED_UPLOAD_GRACE_MS = 3_600_000;

/**
 * Housekeeping: forgets upload slots that expired ABANDONED_UPLOAD_GRACE_MS ago and were never
 * converted into a dataset (a dataset keeps its source file), with their files and unfinished
 * multipart uploads. The rows go first, so no convert can find a slot whose file is being deleted.
 */
export async function pruneAbandonedUploads(deps: Deps, now: Date): Promise<number> {
  const rows = await deps.db
    .delete(datasetUploads)
    .where(
      and(
        lt(datasetUploads.expiresAt, new Date(now.getTime() - ABANDONED_UPLOAD_GRACE_MS)),
        notExists(deps.db.select({ one: sql`1` }).from(datasets).where(eq(datasets.sourceKey, datasetUploads.key))),
      ),
    )
    .returning();
  for (const row of rows) {
    if (row.strategy === 'multipart' && !row.completedAt && row.multipartUploadId) {
      await deps.blobs.abortMultipart({ uploadId: row.multipartUploadId, key: row.key }).catch(() => {});
    }
    await deps.blobs.delete(row.key).catch(() => {});
  }
  return rows.length;
}
