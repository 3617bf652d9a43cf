import { lookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { BlockList, isIP } from 'node:net';
import { oauthClients } from '../db/schema/index.js';
import type { Deps } from '../deps.js';
import { findClient, type OAuthClientRow, validateClientMetadata } from './clients.js';
import { OAuthError } from './oauth-error.js';

/**
 * Client ID Metadata Documents (MCP authorization 2025-11-25; draft-ietf-oauth-client-id-metadata-document):
 * a client whose `client_id` is an HTTPS URL is described by the JSON document at that URL, which we
 * fetch instead of asking it to register. The fetch is the one place the service reaches out to an
 * address a stranger chose, so it is fenced:
 *   - https only (plain http to a loopback host only with SVC_OAUTH_LOOPBACK_CLIENT_METADATA=1, for
 *     development and tests);
 *   - the host is resolved once, every address is checked against private, loopback, link-local,
 *     CGNAT, multicast, reserved and IPv6 unique-local/mapped ranges, and the connection goes to the
 *     address that was checked (DNS rebinding cannot switch it);
 *   - no redirects, 5 s, 64 KiB, JSON only;
 *   - the document must name itself (`client_id` equal to the URL) and pass the same checks as a
 *     registration. It is kept as an oauth_clients row (id = the URL), refreshed after its
 *     Cache-Control max-age, clamped to [60 s, 24 h] (default 5 min); the freshness is kept in memory.
 */
export const CLIENT_METADATA_MAX_BYTES = 64 * 1024;
export const CLIENT_METADATA_TIMEOUT_MS = 5_000;

// Two lists: Node's BlockList matches IPv4 addresses against IPv4-mapped IPv6 rules (::ffff:0:0/96).
const blocked4 = new BlockList();
const blocked6 = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  blocked4.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['::ffff:0:0', 96],
  ['64:ff9b::', 96],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  blocked6.addSubnet(net, prefix, 'ipv6');

/** Whether an address is one the service must never fetch from on a stranger's behalf. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  return family === 4 ? blocked4.check(address, 'ipv4') : blocked6.check(address, 'ipv6');
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Whether `clientId` is a Client ID Metadata Document URL (rather than a registered id). */
export function isMetadataDocumentUrl(clientId: string): boolean {
  return clientId.startsWith('https://') || clientId.startsWith('http://');
}

const freshUntil = new Map<string, number>();

function maxAgeOf(cacheControl: string | undefined): number {
  const m = /max-age=(\d+)/i.exec(cacheControl ?? '');
  const seconds = m ? Number(m[1]) : 300;
  return Math.min(24 * 3600, Math.max(60, seconds)) * 1000;
}

interface Fetched {
  body: string;
  cacheControl: string | undefined;
}

/** GET `url` from the already checked `address`: no redirects, bounded time and size, JSON only. */
function fetchPinned(url: URL, address: string): Promise<Fetched> {
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.request(
      url,
      {
        method: 'GET',
        headers: { accept: 'application/json' },
        timeout: CLIENT_METADATA_TIMEOUT_MS,
        // The connection goes to the address that was checked, whatever DNS says now; TLS still
        // verifies the certificate for the URL's host name.
        lookup: (_host, options, cb) => {
          const family = isIP(address);
          if ((options as { all?: boolean }).all) (cb as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address, family }]);
          else (cb as (e: null, a: string, f: number) => void)(null, address, family);
        },
      },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          return reject(
            new Error(
              `it answered HTTP ${res.statusCode}${res.statusCode && res.statusCode < 400 && res.statusCode >= 300 ? ' (redirects are not followed)' : ''}`,
            ),
          );
        }
        if (!/^application\/([\w.+-]*\+)?json\b/i.test(res.headers['content-type'] ?? '')) {
          res.resume();
          return reject(new Error(`its content type is ${res.headers['content-type'] ?? 'missing'}, not JSON`));
        }
        let size = 0;
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > CLIENT_METADATA_MAX_BYTES) {
            req.destroy(new Error(`it is larger than ${CLIENT_METADATA_MAX_BYTES} bytes`));
            return;
          }
          chunks.push(c);
        });
        res.on('end', () => resolve({ body: Buffer.concat(chunks).toString('utf8'), cacheControl: res.headers['cache-control'] }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`it did not answer within ${CLIENT_METADATA_TIMEOUT_MS} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/** Checks the URL and the addresses its host resolves to; returns the address to connect to. */
async function checkedAddress(deps: Deps, url: URL): Promise<string> {
  const loopbackAllowed = deps.config.oauth.loopbackClientMetadata && url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
  if (url.protocol !== 'https:' && !loopbackAllowed) throw new Error('a client_id URL must use https');
  if (url.username || url.password || url.hash) throw new Error('a client_id URL must not carry credentials or a fragment');
  // MCP 2026-07-28 (client registration) and the draft: the document URL names a document, never a site's root.
  if (url.pathname === '/') throw new Error('a client_id URL must have a path (https://host/client.json), not only a host');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host) ? [{ address: host }] : await lookup(host, { all: true, verbatim: true });
  const first = addresses[0];
  if (!first) throw new Error(`${host} does not resolve`);
  if (!loopbackAllowed) {
    const bad = addresses.find((a) => isPrivateAddress(a.address));
    if (bad) throw new Error(`${host} resolves to ${bad.address}, a private or reserved address the service does not fetch from`);
  }
  return first.address;
}

/**
 * The client a metadata-document `client_id` names: the stored row while it is fresh, else fetched,
 * checked and stored again. Throws OAuthError invalid_client with the reason the user can read.
 */
export async function resolveMetadataClient(deps: Deps, clientId: string): Promise<OAuthClientRow> {
  const stored = await findClient(deps.db, clientId);
  if (stored && (freshUntil.get(clientId) ?? 0) > Date.now()) return stored;
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    throw new OAuthError('invalid_client', 'client_id is not a valid URL');
  }
  let fetched: Fetched;
  try {
    fetched = await fetchPinned(url, await checkedAddress(deps, url));
  } catch (e) {
    throw new OAuthError('invalid_client', `the client metadata document at ${clientId} cannot be used: ${(e as Error).message}`);
  }
  let doc: Record<string, unknown>;
  try {
    doc = JSON.parse(fetched.body) as Record<string, unknown>;
  } catch {
    throw new OAuthError('invalid_client', `the client metadata document at ${clientId} is not JSON`);
  }
  if (doc?.client_id !== clientId)
    throw new OAuthError('invalid_client', `the client metadata document at ${clientId} names client_id ${JSON.stringify(doc?.client_id)}, not its own URL`);
  const m = validateClientMetadata(doc);
  const name = `${m.name} (${url.host})`;
  const values = { name, redirectUris: m.redirectUris, scopes: m.scopes, clientUri: m.clientUri };
  const [row] = await deps.db
    .insert(oauthClients)
    .values({ id: clientId, ...values, createdAt: deps.clock.now() })
    .onConflictDoUpdate({ target: oauthClients.id, set: values })
    .returning();
  freshUntil.set(clientId, Date.now() + maxAgeOf(fetched.cacheControl));
  return row ?? (await findClient(deps.db, clientId))!;
}

/** Drops the freshness of every fetched document (tests). */
export function forgetClientMetadata(clientId?: string): void {
  if (clientId) freshUntil.delete(clientId);
  else freshUntil.clear();
}
