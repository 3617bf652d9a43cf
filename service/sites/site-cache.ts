/**
 * Node-local read cache for serving hosted sites, the hot path. A change on any node drops the
 * site's entries on every node (site-changes.ts: PostgreSQL LISTEN/NOTIFY); site rows also expire
 * after `ttlMs`, the fallback bound for a notification lost while a node was not listening. File
 * entries are keyed by the site's contentVersion, so once a node sees the new version it never
 * serves an old file.
 */
export interface CachedSite {
  id: string;
  slug: string;
  visibility: 'public' | 'private';
  passwordHash: string | null;
  published: boolean;
  entryPoint: string;
  contentVersion: number;
}

export interface CachedFile {
  contentType: string;
  sha256: string;
  size: number;
  blobKey: string;
  /** Bytes of small files; large ones are streamed from the blob store each time. */
  body?: Buffer;
}

export class SiteCache {
  private readonly sites = new Map<string, { site: CachedSite | null; at: number }>();
  private readonly files = new Map<string, CachedFile | null>();
  private fileBytes = 0;

  constructor(
    readonly ttlMs: number,
    readonly maxBodyBytes = 256 * 1024,
    private readonly maxTotalBytes = 64 * 1024 * 1024,
    private readonly maxEntries = 20_000,
  ) {}

  getSite(slug: string, now: number): CachedSite | null | undefined {
    const hit = this.sites.get(slug);
    if (!hit || now - hit.at >= this.ttlMs) return undefined;
    return hit.site;
  }

  setSite(slug: string, site: CachedSite | null, now: number): void {
    if (this.ttlMs <= 0) return;
    if (this.sites.size >= this.maxEntries) this.sites.clear();
    this.sites.set(slug, { site, at: now });
  }

  private fileKey(site: CachedSite, path: string): string {
    return `${site.id}\u0000${site.contentVersion}\u0000${path}`;
  }

  getFile(site: CachedSite, path: string): CachedFile | null | undefined {
    return this.files.get(this.fileKey(site, path));
  }

  setFile(site: CachedSite, path: string, file: CachedFile | null): void {
    if (this.ttlMs <= 0) return;
    const size = file?.body?.length ?? 0;
    if (this.files.size >= this.maxEntries || this.fileBytes + size > this.maxTotalBytes) {
      this.files.clear();
      this.fileBytes = 0;
    }
    this.files.set(this.fileKey(site, path), file);
    this.fileBytes += size;
  }

  /** Drops everything: what changed while this node was not told is unknown. */
  clear(): void {
    this.sites.clear();
    this.files.clear();
    this.fileBytes = 0;
  }

  /** Drops everything cached for a site (by slug and id) after a change on this node. */
  invalidate(site: { id: string; slug: string }): void {
    this.sites.delete(site.slug);
    for (const [key, file] of this.files) {
      if (!key.startsWith(`${site.id}\u0000`)) continue;
      this.fileBytes -= file?.body?.length ?? 0;
      this.files.delete(key);
    }
  }
}
