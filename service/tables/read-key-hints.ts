import { hashCredential } from '../accounts/personal-keys.js';
import { LruMap } from '../../shared/lru-map.js';

/** How long a key this node let read a site's tables is taken to be likely let in again. */
const HINT_MS = 60_000;

/**
 * The keys (`x-svc-api-key`) this node let read a site's tables lately, by the key's hash and the
 * site. Nothing is let in on a hint: every request's key is still looked up and checked as before.
 * A hint only lets the read start beside that lookup instead of after it (table-api.ts), so a
 * signed-in read waits for one round trip to the database instead of two; its answer is sent only
 * once the lookup let it in. A key revoked meanwhile costs at most one minute of reads that are
 * run and never answered.
 */
export class ReadKeyHints {
  private readonly until = new LruMap<string, number>(10_000);

  likelyAllowed(apiKey: string | undefined, siteId: string, now: number): boolean {
    if (apiKey === undefined) return false;
    const until = this.until.get(entry(apiKey, siteId));
    return until !== undefined && until > now;
  }

  allowed(apiKey: string, siteId: string, now: number): void {
    this.until.set(entry(apiKey, siteId), now + HINT_MS);
  }

  refused(apiKey: string, siteId: string): void {
    this.until.delete(entry(apiKey, siteId));
  }
}

function entry(apiKey: string, siteId: string): string {
  return `${hashCredential(apiKey.trim())} ${siteId}`;
}
