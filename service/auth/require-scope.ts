import type { MiddlewareHandler } from 'hono';
import type { Scope } from '../../shared/scopes.js';
import type { Deps } from '../deps.js';
import { AppError } from '../kernel/app-error.js';
import type { AppEnv } from '../kernel/request-env.js';
import { enforceRateLimit, rateLimitWindow } from '../http/rate-limit.js';
import { signIn } from './credentials.js';
import { assertAudience, gatewayPrincipal, resourceOfRequest, viaMcpGateway } from './resources.js';
import type { Principal } from '../kernel/request-env.js';

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The credential of an `Authorization: Bearer <credential>` header, or undefined when it is not one. */
export function bearerToken(authorization: string | undefined): string | undefined {
  return authorization === undefined ? undefined : BEARER.exec(authorization)?.[1];
}

function unauthorized(
  deps: Deps,
  message: string,
  error: 'invalid_request' | 'invalid_token',
  meta = `${deps.config.baseUrl}/.well-known/oauth-protected-resource`,
): AppError {
  return new AppError('unauthorized', message, undefined, {
    'WWW-Authenticate': `Bearer realm="svc", error="${error}", resource_metadata="${meta}"`,
  });
}

/**
 * Resolves the Bearer credential for `resource` (RFC 8707: an OAuth token issued for another resource
 * is refused) or throws 401 pointing at `resourceMetadata`; counts the request against the
 * credential's rate limit.
 */
export async function authenticate(deps: Deps, authorization: string | undefined, resource: string, resourceMetadata?: string): Promise<Principal> {
  const refuse = (message: string, error: 'invalid_request' | 'invalid_token') => unauthorized(deps, message, error, resourceMetadata);
  if (!authorization) throw refuse('missing credential: send Authorization: Bearer svc_pat_… or sign in with OAuth', 'invalid_request');
  const credential = bearerToken(authorization);
  if (!credential) throw refuse('malformed Authorization header: expected "Bearer <credential>"', 'invalid_request');
  // The lookup and the count against the credential's rate limit are one statement.
  const window = rateLimitWindow(deps.config.limits.rateLimitPerMinute, 60_000, deps.clock.now());
  const { lookup: found, counted } = await signIn(deps, credential, window);
  if (found.status === 'revoked') throw refuse('credential has been revoked', 'invalid_token');
  if (found.status === 'expired') throw refuse('credential has expired', 'invalid_token');
  if (found.status === 'suspended') throw accountSuspended(found.reason);
  if (found.status !== 'ok')
    throw refuse(
      `invalid credential: ${deps.config.baseUrl} knows no such key or token. The usual causes: a key made by the CLI on another data folder ` +
        '(SVC_DATA_DIR) or database (DATABASE_URL) than this service uses: make it again where the service runs, with its settings; ' +
        'a key of another svc (another URL or port); a key cut short when copied. A revoked or expired key is named as such',
      'invalid_token',
    );
  assertAudience(found.principal, resource, (message) => refuse(message, 'invalid_token'));
  if (window && counted !== null) await enforceRateLimit(deps.db, window, counted);
  return found.principal;
}

/** 403 for a credential or session of an account the operator suspended, naming the operator's reason. */
export function accountSuspended(reason: string): AppError {
  return new AppError(
    'account_suspended',
    `this account is suspended by the operator of this service: ${reason}. Its keys, OAuth tokens and dashboard sessions are refused until it is restored; nothing of it was deleted`,
    { reason },
  );
}

/**
 * Throws 403 insufficient_scope unless the principal holds `scope`; with `resourceMetadata`, the
 * answer carries the RFC 6750 §3.1 step-up challenge naming the scope to ask for.
 */
export function assertScope(principal: Principal, scope: Scope, resourceMetadata?: string): void {
  if (!principal.scopes.includes(scope)) {
    const challenge = resourceMetadata
      ? { 'WWW-Authenticate': `Bearer realm="svc", error="insufficient_scope", scope="${scope}", resource_metadata="${resourceMetadata}"` }
      : undefined;
    throw new AppError('insufficient_scope', `this credential lacks the scope ${scope}`, { required: scope, granted: principal.scopes }, challenge);
  }
}

/** Route guard: authenticates, then demands `scope`. The principal is in `c.var.principal`. */
export function requireScope(deps: Deps, scope: Scope): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const authorization = c.req.header('authorization');
    const principal = gatewayPrincipal(c, bearerToken(authorization)) ?? (await authenticate(deps, authorization, resourceOfRequest(deps, c)));
    assertScope(principal, scope, `${deps.config.baseUrl}/.well-known/oauth-protected-resource${viaMcpGateway(c) ? '/mcp' : '/api/v1'}`);
    c.set('principal', principal);
    await next();
  };
}
