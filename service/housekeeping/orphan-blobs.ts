import { inArray } from 'drizzle-orm';
import { SITE_UPLOAD_URL_TTL_SECONDS } from '../../shared/agent-api/actions/common.js';
import { datasets, datasetUploads, siteFiles, siteVersionFiles } from '../db/schema/index.js';
import type { Deps } from '../deps.js';
import type { BlobInfo } from '../storage/blob-store.js';

/** Every blob of a site lives under `sites/<siteId>/` (site files, uploads, data files). */
const SITES_PREFIX = 'sites/';
/** Sites whose references are read in one query. */
const SITES_PER_BATCH = 500;

/**
 * How old an unreferenced blob must be before it is deleted: longer than any upload URL lives (a
 * file PUT through one is referenced only when the upload is finalized or converted, which must
 * happen before it expires), plus an hour for the transaction that references it.
 */
export function orphanGraceMs(deps: Deps): number {
  return Math.max(SITE_UPLOAD_URL_TTL_SECONDS, deps.config.datasets.uploadTtlSeconds) * 1000 + 3_600_000;
}

/**
 * Deletes blobs under `sites/` that nothing references (a site file row, a kept version's file, a
 * dataset's source file, an open upload slot) and that were last written more than `graceMs` ago: files replaced or deleted,
 * the blobs of a deleted site, writes whose transaction rolled back or crashed. Safe beside writers:
 * a write stores its bytes under a key never used before (sites.ts newFileBlobKey, random upload keys),
 * so a key found unreferenced and old can never be referenced again. The listing comes first and
 * the references are read after it, so a reference committed meanwhile is seen.
 */
export async function deleteOrphanBlobs(deps: Deps, now: Date, graceMs = orphanGraceMs(deps)): Promise<number> {
  const cutoff = now.getTime() - graceMs;
  const old = (await deps.blobs.list(SITES_PREFIX)).filter((b) => b.modifiedAt && b.modifiedAt.getTime() < cutoff);
  const bySite = groupBySite(old);
  const siteIds = [...bySite.keys()];
  let deleted = 0;
  for (let i = 0; i < siteIds.length; i += SITES_PER_BATCH) {
    const batch = siteIds.slice(i, i + SITES_PER_BATCH);
    const referenced = await referencedKeys(deps, batch);
    for (const id of batch) {
      for (const blob of bySite.get(id) ?? []) {
        if (referenced.has(blob.key)) continue;
        await deps.blobs.delete(blob.key);
        deleted++;
      }
    }
  }
  return deleted;
}

function groupBySite(blobs: BlobInfo[]): Map<string, BlobInfo[]> {
  const out = new Map<string, BlobInfo[]>();
  for (const b of blobs) {
    const siteId = b.key.slice(SITES_PREFIX.length).split('/')[0];
    if (!siteId) continue;
    const list = out.get(siteId) ?? [];
    list.push(b);
    out.set(siteId, list);
  }
  return out;
}

async function referencedKeys(deps: Deps, siteIds: string[]): Promise<Set<string>> {
  const [files, kept, sources, uploads] = await Promise.all([
    deps.db.select({ key: siteFiles.blobKey }).from(siteFiles).where(inArray(siteFiles.siteId, siteIds)),
    deps.db.selectDistinct({ key: siteVersionFiles.blobKey }).from(siteVersionFiles).where(inArray(siteVersionFiles.siteId, siteIds)),
    deps.db.select({ key: datasets.sourceKey }).from(datasets).where(inArray(datasets.siteId, siteIds)),
    deps.db.select({ key: datasetUploads.key }).from(datasetUploads).where(inArray(datasetUploads.siteId, siteIds)),
  ]);
  return new Set([...files, ...kept, ...sources, ...uploads].map((r) => r.key));
}
