import type { CdnConfig } from '../kernel/config.js';

/**
 * How keys are purged at one kind of CDN. `purge` resolves once the CDN accepted every key (each
 * batch of at most `maxKeys`), and throws otherwise: the outbox keeps the keys and retries.
 */
export interface PurgeAdapter {
  readonly name: string;
  readonly maxKeys: number;
  purge(keys: readonly string[]): Promise<void>;
}

/** A purge call that takes longer than this failed (and is retried). */
const PURGE_TIMEOUT_MS = 5000;

type Fetch = typeof fetch;

async function send(doFetch: Fetch, url: string, init: RequestInit, what: string): Promise<Response> {
  let res: Response;
  try {
    res = await doFetch(url, { ...init, signal: AbortSignal.timeout(PURGE_TIMEOUT_MS) });
  } catch (e) {
    throw new Error(`${what}: ${(e as Error).message}`);
  }
  if (!res.ok) throw new Error(`${what}: HTTP ${res.status} ${(await res.text().catch(() => '')).slice(0, 200)}`);
  return res;
}

/**
 * Varnish with the xkey vmod (deploy/varnish/svc.vcl): `PURGE` with the keys in `xkey-purge`, to
 * every Varnish server (each holds its own copies). Allowed by the VCL's ACL, not by a token.
 */
export function varnishAdapter(urls: readonly string[], doFetch: Fetch = fetch): PurgeAdapter {
  return {
    name: 'varnish',
    // Keys travel in one header: ~50 bytes each, well inside Varnish's 8 KB header limit.
    maxKeys: 100,
    async purge(keys) {
      await Promise.all(urls.map((u) => send(doFetch, `${u}/`, { method: 'PURGE', headers: { 'xkey-purge': keys.join(' ') } }, `varnish ${u}`)));
    },
  };
}

/** Fastly's purge by surrogate key: `POST /service/{id}/purge`, up to 256 keys a call. */
export function fastlyAdapter(base: string, serviceId: string, token: string, doFetch: Fetch = fetch): PurgeAdapter {
  return {
    name: 'fastly',
    maxKeys: 256,
    async purge(keys) {
      await send(
        doFetch,
        `${base}/service/${encodeURIComponent(serviceId)}/purge`,
        {
          method: 'POST',
          headers: { 'fastly-key': token, 'content-type': 'application/json', accept: 'application/json' },
          body: JSON.stringify({ surrogate_keys: keys }),
        },
        'fastly',
      );
    },
  };
}

/** Cloudflare's purge by cache tag: `POST /zones/{id}/purge_cache {"tags": […]}`, 30 tags a call. */
export function cloudflareAdapter(base: string, zoneId: string, token: string, doFetch: Fetch = fetch): PurgeAdapter {
  return {
    name: 'cloudflare',
    maxKeys: 30,
    async purge(keys) {
      const res = await send(
        doFetch,
        `${base}/zones/${encodeURIComponent(zoneId)}/purge_cache`,
        { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ tags: keys }) },
        'cloudflare',
      );
      // Cloudflare's envelope says whether it worked; a 200 without `success: true` did not.
      const body = (await res.json().catch(() => null)) as { success?: boolean; errors?: unknown } | null;
      if (body?.success !== true) throw new Error(`cloudflare: purge not accepted: ${JSON.stringify(body?.errors ?? body).slice(0, 200)}`);
    },
  };
}

/** Any other cache: `POST {url}` with `{"keys": […]}` (and the bearer token when set); any 2xx is done. */
export function webhookAdapter(url: string, token: string | undefined, doFetch: Fetch = fetch): PurgeAdapter {
  return {
    name: 'webhook',
    maxKeys: 100,
    async purge(keys) {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (token) headers.authorization = `Bearer ${token}`;
      await send(doFetch, url, { method: 'POST', headers, body: JSON.stringify({ keys }) }, 'webhook');
    },
  };
}

/** The adapter the configuration names. */
export function purgeAdapterFor(config: CdnConfig, doFetch: Fetch = fetch): PurgeAdapter {
  switch (config.purge) {
    case 'varnish':
      return varnishAdapter(config.urls, doFetch);
    case 'fastly':
      return fastlyAdapter(config.urls[0]!, config.zone!, config.token!, doFetch);
    case 'cloudflare':
      return cloudflareAdapter(config.urls[0]!, config.zone!, config.token!, doFetch);
    case 'webhook':
      return webhookAdapter(config.urls[0]!, config.token, doFetch);
  }
}
