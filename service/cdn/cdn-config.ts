import type { CdnConfig, CdnPurgeKind } from '../kernel/config.js';

/**
 * A CDN (or any shared cache) in front of hosted sites (docs/operator.md, "With a CDN"). Off unless
 * SVC_CDN_PURGE names how to purge: without purges a shared cache would keep serving a changed site
 * for its whole lifetime, so the shared-cache headers are only sent when svc can purge them.
 */
export interface CdnEnv {
  SVC_CDN_PURGE?: string;
  SVC_CDN_MAX_AGE?: number;
  SVC_CDN_PURGE_URL?: string;
  SVC_CDN_PURGE_TOKEN?: string;
  SVC_CDN_ZONE?: string;
}

const DEFAULT_API: Partial<Record<CdnPurgeKind, string>> = {
  fastly: 'https://api.fastly.com',
  cloudflare: 'https://api.cloudflare.com/client/v4',
};

function invalid(name: string, message: string): Error {
  return new Error(`invalid configuration:\n  ${name}: ${message}`);
}

/** The CDN settings, or null (no CDN: hosted files keep the headers they had without one). */
export function parseCdnConfig(e: CdnEnv): CdnConfig | null {
  const kind = e.SVC_CDN_PURGE?.trim().toLowerCase();
  if (!kind || kind === 'off' || kind === 'none') {
    if (e.SVC_CDN_MAX_AGE !== undefined)
      throw invalid(
        'SVC_CDN_MAX_AGE',
        'needs SVC_CDN_PURGE (varnish, fastly, cloudflare or webhook): a cache svc cannot purge would serve changed sites for the whole lifetime',
      );
    return null;
  }
  if (!['varnish', 'fastly', 'cloudflare', 'webhook'].includes(kind))
    throw invalid('SVC_CDN_PURGE', `varnish, fastly, cloudflare, webhook or off, not "${kind}"`);
  const purge = kind as CdnPurgeKind;
  const given = (e.SVC_CDN_PURGE_URL ?? DEFAULT_API[purge] ?? '')
    .split(',')
    .map((u) => u.trim().replace(/\/+$/, ''))
    .filter(Boolean);
  if (given.length === 0)
    throw invalid(
      'SVC_CDN_PURGE_URL',
      `required with SVC_CDN_PURGE=${purge} (${purge === 'varnish' ? 'each Varnish server, comma-separated' : 'the URL purges are POSTed to'})`,
    );
  for (const u of given) {
    if (!/^https?:\/\/[^/\s]+/.test(u)) throw invalid('SVC_CDN_PURGE_URL', `not an http(s) URL: ${u}`);
  }
  if (purge !== 'varnish' && given.length > 1) throw invalid('SVC_CDN_PURGE_URL', `one URL with SVC_CDN_PURGE=${purge}`);
  if ((purge === 'fastly' || purge === 'cloudflare') && (!e.SVC_CDN_PURGE_TOKEN || !e.SVC_CDN_ZONE))
    throw invalid(
      e.SVC_CDN_PURGE_TOKEN ? 'SVC_CDN_ZONE' : 'SVC_CDN_PURGE_TOKEN',
      `required with SVC_CDN_PURGE=${purge} (${purge === 'fastly' ? 'the service ID and an API token' : 'the zone ID and an API token with Cache Purge'})`,
    );
  return { purge, maxAgeSeconds: e.SVC_CDN_MAX_AGE ?? 86_400, urls: given, token: e.SVC_CDN_PURGE_TOKEN, zone: e.SVC_CDN_ZONE };
}
