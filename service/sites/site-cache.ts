/**
 * Node-local read cache for serving hosted sites, the hot path. A change on any node drops the
 * site's entries on every node (site-changes.ts: PostgreSQL LISTEN/NOTIFY); site rows also expire
 * after `ttlMs`, the fallback bound for a notification lost while a node was not listening. A site's
 * files are kept for one contentVersion, so once a node sees the new version it never serves an old
 * file (and drops the old version's files when it caches the first new one).
 */
import type { SharedCacheHeaders } from '../cdn/surrogate-keys.js';

export interface CachedSite {
  id: string;
  slug: string;
  visibility: 'public' | 'private';
  passwordHash: string | null;
  published: boolean;
  entryPoint: string;
  contentVersion: number;
  /** Its current version (docs/versions.md; 0 before the first): the version key of its answers. */
  version: number;
  /** Suspended by the operator, on its own or through its owner (it answers 451). */
  suspended: boolean;
}

export interface CachedFile {
  contentType: string;
  sha256: string;
  size: number;
  blobKey: string;
  /** Bytes of small files; large ones are streamed from the blob store each time. */
  body?: Buffer;
  /** With a CDN in front, the shared-cache headers of a public site's file (made once, when cached). */
  shared?: SharedCacheHeaders;
}

/** A cached file whose bytes are held (small enough): what the fast path answers. */
export type HeldFile = CachedFile & { body: Buffer };

/** One site's cached files, at one content version; `null`: known not to exist. */
interface SiteFiles {
  version: number;
  byPath: Map<string, CachedFile | null>;
  /**
   * A request path (as the fast path sees it) → the cached file its candidates resolved to, so a
   * repeated request skips resolving them. Files of one content version never change, so neither
   * does a resolution; counted as entries like files.
   */
  routes: Map<string, HeldFile>;
  bytes: number;
}

export class SiteCache {
  private readonly sites = new Map<string, { site: CachedSite | null; at: number }>();
  /** By site id: a lookup builds no key (this runs for every request of a site's file). */
  private readonly files = new Map<string, SiteFiles>();
  private fileEntries = 0;
  private fileBytes = 0;
  /** Bumped by every invalidation: a site row read before one is not cached after it (`setSite`). */
  #generation = 0;

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

  /** Taken before reading a site row from the database, and handed to `setSite` with the row. */
  get generation(): number {
    return this.#generation;
  }

  /**
   * Caches a site row read at `generation`, unless a change was announced since: the row may predate
   * it (read before the change committed, cached after its notification), and would be served for
   * the TTL (a site just made private, still public on this node).
   */
  setSite(slug: string, site: CachedSite | null, now: number, generation: number): void {
    if (this.ttlMs <= 0 || generation !== this.#generation) return;
    if (this.sites.size >= this.maxEntries) this.sites.clear();
    this.sites.set(slug, { site, at: now });
  }

  getFile(site: CachedSite, path: string): CachedFile | null | undefined {
    const files = this.files.get(site.id);
    return files?.version === site.contentVersion ? files.byPath.get(path) : undefined;
  }

  /** The file a request path resolved to before, at the site's current content version. */
  getRoute(site: CachedSite, requestPath: string): HeldFile | undefined {
    const files = this.files.get(site.id);
    return files?.version === site.contentVersion ? files.routes.get(requestPath) : undefined;
  }

  /** Remembers what a request path resolved to; only for a file already cached at the site's version. */
  setRoute(site: CachedSite, requestPath: string, file: HeldFile): void {
    const files = this.files.get(site.id);
    if (files?.version !== site.contentVersion || files.routes.has(requestPath)) return;
    if (this.fileEntries >= this.maxEntries) {
      this.dropFiles();
      return;
    }
    files.routes.set(requestPath, file);
    this.account(files, 0, 1);
  }

  setFile(site: CachedSite, path: string, file: CachedFile | null): void {
    if (this.ttlMs <= 0) return;
    let files = this.files.get(site.id);
    if (files && files.version > site.contentVersion) return; // read from a site row older than what this node holds
    if (files && files.version < site.contentVersion) {
      this.dropSiteFiles(site.id, files);
      files = undefined;
    }
    const previous = files?.byPath.get(path);
    if (files && previous !== undefined) {
      files.byPath.delete(path);
      this.account(files, -(previous?.body?.length ?? 0), -1 - files.routes.size);
      files.routes.clear(); // a resolution may name the replaced entry
    }
    const size = file?.body?.length ?? 0;
    if (this.fileEntries >= this.maxEntries || this.fileBytes + size > this.maxTotalBytes) {
      this.dropFiles();
      files = undefined;
    }
    if (!files) {
      files = { version: site.contentVersion, byPath: new Map(), routes: new Map(), bytes: 0 };
      this.files.set(site.id, files);
    }
    files.byPath.set(path, file);
    this.account(files, size, 1);
  }

  /** Drops everything: what changed while this node was not told is unknown. */
  clear(): void {
    this.#generation++;
    this.sites.clear();
    this.dropFiles();
  }

  /** Drops everything cached for a site (by slug and id) after a change on this node. */
  invalidate(site: { id: string; slug: string }): void {
    this.#generation++;
    this.sites.delete(site.slug);
    const files = this.files.get(site.id);
    if (files) this.dropSiteFiles(site.id, files);
  }

  private dropFiles(): void {
    this.files.clear();
    this.fileEntries = 0;
    this.fileBytes = 0;
  }

  private dropSiteFiles(siteId: string, files: SiteFiles): void {
    this.files.delete(siteId);
    this.fileEntries -= files.byPath.size + files.routes.size;
    this.fileBytes -= files.bytes;
  }

  private account(files: SiteFiles, bytes: number, entries: number): void {
    files.bytes += bytes;
    this.fileBytes += bytes;
    this.fileEntries += entries;
  }
}
