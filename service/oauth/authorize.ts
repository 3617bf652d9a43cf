import { isScope, type Scope } from '../../shared/scopes.js';
import { accountApiResource, knownResources } from '../auth/resources.js';
import type { Deps } from '../deps.js';
import { findClient, type OAuthClientRow } from './clients.js';
import { isMetadataDocumentUrl, resolveMetadataClient } from './client-metadata.js';
import { OAuthError, type OAuthErrorCode } from './oauth-error.js';
import { S256_CHALLENGE } from './tokens.js';

/** The validated parameters of an authorization request (RFC 6749 §4.1.1, RFC 7636, RFC 8707). */
export interface AuthorizationRequest {
  clientId: string;
  redirectUri: string;
  scopes: Scope[];
  state?: string;
  codeChallenge: string;
  resource: string;
}

export type AuthorizationCheck =
  /** The client or redirect URI cannot be trusted: show the error, never redirect (RFC 6749 §4.1.2.1). */
  | { kind: 'fatal'; message: string }
  /** Anything else wrong goes back to the client's redirect URI. */
  | { kind: 'redirect'; location: string }
  | { kind: 'ok'; request: AuthorizationRequest; client: OAuthClientRow };

export const AUTHORIZATION_PARAMS = [
  'response_type',
  'client_id',
  'redirect_uri',
  'scope',
  'resource',
  'code_challenge',
  'code_challenge_method',
  'state',
] as const;

/** The Account API as an OAuth protected resource (RFC 8707 / RFC 9728). */
export const resourceOf = accountApiResource;

/** The redirect back to the client, with `iss` (RFC 9207) so it can tell which server answered. */
export function clientRedirect(deps: Deps, redirectUri: string, params: Record<string, string | undefined>): string {
  const u = new URL(redirectUri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) u.searchParams.set(k, v);
  u.searchParams.set('iss', deps.config.baseUrl);
  return u.toString();
}

export async function checkAuthorizationRequest(deps: Deps, params: Record<string, string | undefined>): Promise<AuthorizationCheck> {
  for (const name of AUTHORIZATION_PARAMS) {
    if (params[name] !== undefined && params[name]!.length > 2000) return { kind: 'fatal', message: `${name} is too long` };
  }
  const clientId = params.client_id;
  if (!clientId) return { kind: 'fatal', message: 'client_id is missing: the application sent an incomplete authorization request.' };
  let client: OAuthClientRow | null;
  try {
    client = isMetadataDocumentUrl(clientId) ? await resolveMetadataClient(deps, clientId) : await findClient(deps.db, clientId);
  } catch (e) {
    if (e instanceof OAuthError) return { kind: 'fatal', message: `This application cannot be used: ${e.message}.` };
    throw e;
  }
  if (!client) return { kind: 'fatal', message: 'This application is not registered with svc (unknown client_id).' };
  const redirectUri = params.redirect_uri;
  if (!redirectUri) return { kind: 'fatal', message: 'redirect_uri is missing: the application must name one of its registered redirect URIs.' };
  if (!client.redirectUris.includes(redirectUri)) {
    return { kind: 'fatal', message: 'redirect_uri does not exactly match any redirect URI this application registered; svc will not send you there.' };
  }
  const state = params.state;
  const fail = (error: OAuthErrorCode, description: string): AuthorizationCheck => ({
    kind: 'redirect',
    location: clientRedirect(deps, redirectUri, { error, error_description: description, state }),
  });
  if (params.response_type !== 'code') return fail('unsupported_response_type', 'response_type must be code');
  if (params.code_challenge_method !== 'S256') {
    return fail(
      'invalid_request',
      params.code_challenge_method
        ? `code_challenge_method ${params.code_challenge_method} is refused; use S256`
        : 'code_challenge_method=S256 is required (PKCE)',
    );
  }
  if (!params.code_challenge || !S256_CHALLENGE.test(params.code_challenge))
    return fail('invalid_request', 'code_challenge must be the base64url SHA-256 of the code_verifier (43 characters)');
  const resource = params.resource ?? '';
  if (!knownResources(deps).includes(resource)) return fail('invalid_target', `resource must be one of ${knownResources(deps).join(', ')}`);
  const asked = (params.scope ?? '').split(' ').filter(Boolean);
  if (asked.length === 0) return fail('invalid_scope', 'scope is required: name the svc scopes the application needs, separated by spaces');
  const unknown = asked.filter((s) => !isScope(s));
  if (unknown.length) return fail('invalid_scope', `unknown scope: ${unknown.join(' ')}`);
  const scopes = [...new Set(asked)] as Scope[];
  if (client.scopes) {
    const beyond = scopes.filter((s) => !client.scopes!.includes(s));
    if (beyond.length) return fail('invalid_scope', `this client registered for ${client.scopes.join(' ')}; not allowed: ${beyond.join(' ')}`);
  }
  return { kind: 'ok', client, request: { clientId, redirectUri, scopes, state, codeChallenge: params.code_challenge, resource } };
}
