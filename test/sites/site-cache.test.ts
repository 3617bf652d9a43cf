import { describe, expect, it } from 'vitest';
import { type CachedFile, type CachedSite, type HeldFile, SiteCache } from '../../service/sites/site-cache.js';

const site = (contentVersion: number, id = 'site-1', slug = 'blog'): CachedSite => ({
  id,
  slug,
  visibility: 'public',
  passwordHash: null,
  published: true,
  entryPoint: 'index.html',
  contentVersion,
  version: contentVersion,
  suspended: false,
});
const file = (bytes: number, sha = 'a'): CachedFile => ({ contentType: 'text/html', sha256: sha, size: bytes, blobKey: `k-${sha}`, body: Buffer.alloc(bytes) });

describe('site cache', () => {
  it("serves a file only for the content version it was read at, and forgets the old version's files", () => {
    const cache = new SiteCache(60_000);
    cache.setFile(site(1), 'index.html', file(10, 'v1'));
    cache.setFile(site(1), 'missing.html', null);
    expect(cache.getFile(site(1), 'index.html')?.sha256).toBe('v1');
    expect(cache.getFile(site(1), 'missing.html')).toBeNull(); // known not to exist
    expect(cache.getFile(site(1), 'other.html')).toBeUndefined(); // not known
    expect(cache.getFile(site(2), 'index.html')).toBeUndefined();

    cache.setFile(site(2), 'index.html', file(10, 'v2'));
    expect(cache.getFile(site(2), 'index.html')?.sha256).toBe('v2');
    expect(cache.getFile(site(1), 'index.html')).toBeUndefined();
    expect(cache.getFile(site(2), 'missing.html')).toBeUndefined(); // v1's "does not exist" is not v2's

    // A request that read the older row late does not push the newer version out.
    cache.setFile(site(1), 'index.html', file(10, 'late'));
    expect(cache.getFile(site(2), 'index.html')?.sha256).toBe('v2');
    expect(cache.getFile(site(1), 'index.html')).toBeUndefined();
  });

  it("drops one site's files on invalidate and keeps the other sites'", () => {
    const cache = new SiteCache(60_000);
    cache.setSite('blog', site(1), 0, cache.generation);
    cache.setFile(site(1), 'index.html', file(10));
    cache.setFile(site(1, 'site-2', 'shop'), 'index.html', file(10, 'shop'));
    cache.invalidate({ id: 'site-1', slug: 'blog' });
    expect(cache.getSite('blog', 0)).toBeUndefined();
    expect(cache.getFile(site(1), 'index.html')).toBeUndefined();
    expect(cache.getFile(site(1, 'site-2', 'shop'), 'index.html')?.sha256).toBe('shop');
  });

  it('keeps to its byte and entry limits, counting a file read again once', () => {
    const cache = new SiteCache(60_000, 256, 100, 3);
    cache.setFile(site(1), 'a', file(40, 'a'));
    for (let i = 0; i < 10; i++) cache.setFile(site(1), 'b', file(40, 'b')); // the same path again: still 80 bytes held
    expect(cache.getFile(site(1), 'a')?.sha256).toBe('a');
    cache.setFile(site(1), 'c', file(40, 'c')); // 120 > 100 bytes: everything goes, then c is kept
    expect(cache.getFile(site(1), 'a')).toBeUndefined();
    expect(cache.getFile(site(1), 'c')?.sha256).toBe('c');

    cache.setFile(site(1), 'x', null);
    cache.setFile(site(1, 'site-2', 'shop'), 'y', null); // 3 entries: at the limit
    expect(cache.getFile(site(1), 'c')?.sha256).toBe('c');
    cache.setFile(site(1, 'site-2', 'shop'), 'z', null); // a 4th: everything goes first
    expect(cache.getFile(site(1), 'c')).toBeUndefined();
    expect(cache.getFile(site(1, 'site-2', 'shop'), 'z')).toBeNull();

    // An invalidated site's entries and bytes are no longer counted against the limits.
    cache.setFile(site(1), 'p', file(90, 'p'));
    cache.invalidate({ id: 'site-1', slug: 'blog' });
    cache.setFile(site(1, 'site-2', 'shop'), 'q', file(90, 'q'));
    expect(cache.getFile(site(1, 'site-2', 'shop'), 'z')).toBeNull();
  });

  it('does not cache a site row read before a change that was announced while it was read', () => {
    const cache = new SiteCache(60_000);
    const before = cache.generation; // a request starts reading the row…
    cache.invalidate({ id: 'site-1', slug: 'blog' }); // …the change commits and is announced…
    cache.setSite('blog', { ...site(1), visibility: 'public' }, 0, before); // …the row it read arrives
    expect(cache.getSite('blog', 0)).toBeUndefined(); // the next request reads it again
    cache.setSite('blog', { ...site(2), visibility: 'private' }, 0, cache.generation);
    expect(cache.getSite('blog', 0)?.visibility).toBe('private');
    const beforeClear = cache.generation;
    cache.clear(); // a LISTEN connection (re)established: what it missed is unknown
    cache.setSite('blog', site(2), 0, beforeClear);
    expect(cache.getSite('blog', 0)).toBeUndefined();
  });

  it("remembers what a request path resolved to for the site's content version only, and counts it against the entry limit", () => {
    const cache = new SiteCache(60_000, 256, 1_000, 4);
    const index = file(10, 'v1') as HeldFile;
    cache.setFile(site(1), 'about', null);
    cache.setFile(site(1), 'about.html', index);
    cache.setRoute(site(1), 'about', index);
    expect(cache.getRoute(site(1), 'about')?.sha256).toBe('v1');
    expect(cache.getRoute(site(2), 'about')).toBeUndefined(); // a newer version resolves again

    // A replaced file may be what a path resolved to: the resolutions go with it.
    cache.setFile(site(1), 'about.html', file(10, 'again'));
    expect(cache.getRoute(site(1), 'about')).toBeUndefined();

    // Paths spelled many ways (`//about`, `///about`…) cannot grow the cache past its entry limit.
    for (let i = 1; i <= 10; i++) cache.setRoute(site(1), `${'/'.repeat(i)}about`, index);
    cache.setFile(site(1), 'about.html', index);
    cache.setRoute(site(1), 'about', index);
    expect(cache.getRoute(site(1), 'about')?.sha256).toBe('v1');
    cache.invalidate({ id: 'site-1', slug: 'blog' });
    expect(cache.getRoute(site(1), 'about')).toBeUndefined();
  });

  it('caches nothing when its TTL is 0 (the cache switched off)', () => {
    const cache = new SiteCache(0);
    cache.setSite('blog', site(1), 0, cache.generation);
    cache.setFile(site(1), 'index.html', file(10));
    expect(cache.getSite('blog', 0)).toBeUndefined();
    expect(cache.getFile(site(1), 'index.html')).toBeUndefined();
  });
});
