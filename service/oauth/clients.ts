import { eq } from 'drizzle-orm';
import { z } from 'zod';
import { isScope, type Scope } from '../../shared/scopes.js';
import { type DbOrTx, onlyRow } from '../db/client.js';
import { newId } from '../kernel/ids.js';
import { oauthClients } from '../db/schema/index.js';
import type { Deps } from '../deps.js';
import { OAuthError } from './oauth-error.js';

export type OAuthClientRow = typeof oauthClients.$inferSelect;

export const MAX_REDIRECT_URIS = 10;
export const MAX_CLIENT_NAME = 100;

/** RFC 7591 registration request. Unknown metadata is ignored, as §2 asks. */
export const ClientRegistrationSchema = z.object({
  redirect_uris: z.array(z.string().max(2000)).min(1).max(MAX_REDIRECT_URIS),
  client_name: z.string().trim().min(1).max(MAX_CLIENT_NAME).optional(),
  client_uri: z.string().max(2000).optional(),
  scope: z.string().max(1000).optional(),
  grant_types: z.array(z.string()).optional(),
  response_types: z.array(z.string()).optional(),
  token_endpoint_auth_method: z.string().optional(),
});
export type ClientRegistration = z.infer<typeof ClientRegistrationSchema>;

function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '127.0.0.1' || hostname === '[::1]';
}

/**
 * A redirect URI is an absolute https URL, or plain http on a loopback host for local development
 * (RFC 8252 §7.3). No fragment (RFC 6749 §3.1.2), no credentials. Returns why not, or null.
 */
export function redirectUriProblem(uri: string): string | null {
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    return `${JSON.stringify(uri)} is not an absolute URL`;
  }
  if (u.hash || uri.includes('#')) return `${uri} must not contain a fragment`;
  if (u.username || u.password) return `${uri} must not contain credentials`;
  if (u.protocol === 'https:') return null;
  if (u.protocol === 'http:' && isLoopbackHost(u.hostname)) return null;
  return `${uri} must use https (plain http only on localhost or 127.0.0.1)`;
}

export interface RegisteredClient {
  client_id: string;
  client_id_issued_at: number;
  client_name: string;
  redirect_uris: string[];
  grant_types: string[];
  response_types: string[];
  token_endpoint_auth_method: 'none';
  scope?: string;
  client_uri?: string;
}

export function toRegisteredClient(row: OAuthClientRow): RegisteredClient {
  return {
    client_id: row.id,
    client_id_issued_at: Math.floor(row.createdAt.getTime() / 1000),
    client_name: row.name,
    redirect_uris: row.redirectUris,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    ...(row.scopes ? { scope: row.scopes.join(' ') } : {}),
    ...(row.clientUri ? { client_uri: row.clientUri } : {}),
  };
}

/** Dynamic client registration (RFC 7591). Every client is public: it proves itself with PKCE. */
export async function registerClient(deps: Deps, input: unknown): Promise<RegisteredClient> {
  const m = validateClientMetadata(input);
  const row = onlyRow(
    await deps.db
      .insert(oauthClients)
      .values({ id: newId('client', 24), name: m.name, redirectUris: m.redirectUris, scopes: m.scopes, clientUri: m.clientUri, createdAt: deps.clock.now() })
      .returning(),
    'insert the client',
  );
  return toRegisteredClient(row);
}

export interface ValidClientMetadata {
  name: string;
  redirectUris: string[];
  scopes: Scope[] | null;
  clientUri: string | null;
}

/**
 * The checks every client's metadata passes, registered (RFC 7591) or fetched (a Client ID Metadata
 * Document): https (or loopback) redirect URIs, a public client, the grants and scopes we support.
 */
export function validateClientMetadata(input: unknown): ValidClientMetadata {
  const parsed = ClientRegistrationSchema.safeParse(input);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    const field = first?.path.map(String).join('.') || '(body)';
    const code = field.startsWith('redirect_uris') ? 'invalid_redirect_uri' : 'invalid_client_metadata';
    throw new OAuthError(code, `${field}: ${first?.message ?? 'invalid'}`);
  }
  const m = parsed.data;
  for (const uri of m.redirect_uris) {
    const problem = redirectUriProblem(uri);
    if (problem) throw new OAuthError('invalid_redirect_uri', problem);
  }
  const authMethod = m.token_endpoint_auth_method ?? 'none';
  if (authMethod !== 'none') {
    throw new OAuthError(
      'invalid_client_metadata',
      `token_endpoint_auth_method ${authMethod} is not supported; register a public client ("none") and use PKCE`,
    );
  }
  const badGrant = (m.grant_types ?? []).find((g) => g !== 'authorization_code' && g !== 'refresh_token');
  if (badGrant) throw new OAuthError('invalid_client_metadata', `grant_types: ${badGrant} is not supported (authorization_code, refresh_token)`);
  const badResponse = (m.response_types ?? []).find((r) => r !== 'code');
  if (badResponse) throw new OAuthError('invalid_client_metadata', `response_types: ${badResponse} is not supported (code)`);
  let scopes: Scope[] | null = null;
  if (m.scope !== undefined) {
    const parts = m.scope.split(' ').filter(Boolean);
    const unknown = parts.find((p) => !isScope(p));
    if (unknown) throw new OAuthError('invalid_client_metadata', `scope: unknown scope ${unknown}`);
    if (parts.length === 0) throw new OAuthError('invalid_client_metadata', 'scope: empty');
    scopes = [...new Set(parts as Scope[])];
  }
  let clientUri: string | null = null;
  if (m.client_uri !== undefined) {
    const u = URL.canParse(m.client_uri) ? new URL(m.client_uri) : null;
    if (!u || (u.protocol !== 'https:' && u.protocol !== 'http:')) throw new OAuthError('invalid_client_metadata', 'client_uri: not an http(s) URL');
    clientUri = u.toString();
  }
  return { name: m.client_name ?? new URL(m.redirect_uris[0]!).host, redirectUris: [...new Set(m.redirect_uris)], scopes, clientUri };
}

export async function findClient(db: DbOrTx, clientId: string): Promise<OAuthClientRow | null> {
  const [row] = await db.select().from(oauthClients).where(eq(oauthClients.id, clientId));
  return row ?? null;
}
