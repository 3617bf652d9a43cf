import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { publicCors } from '../http/cors.js';
import { SCOPES } from '../../shared/scopes.js';
import type { Deps } from '../deps.js';
import { clientIp } from '../http/client-ip.js';
import { consumeRateLimit } from '../http/rate-limit.js';
import { knownResources, mcpResource } from '../auth/resources.js';
import { resourceOf } from './authorize.js';
import { findClient, registerClient } from './clients.js';
import { OAuthError, oauthErrorResponse } from './oauth-error.js';
import { exchangeAuthorizationCode, refreshAccessToken, revokeTokenByClient } from './tokens.js';

/** Client registrations per client address per hour: registration is open, so it is throttled. */
export const REGISTRATIONS_PER_IP_PER_HOUR = 60;
const OAUTH_BODY_LIMIT = 64 * 1024;

export function authorizationServerMetadata(deps: Deps) {
  const base = deps.config.baseUrl;
  return {
    issuer: base,
    authorization_endpoint: `${base}/oauth/authorize`,
    token_endpoint: `${base}/oauth/token`,
    revocation_endpoint: `${base}/oauth/revoke`,
    revocation_endpoint_auth_methods_supported: ['none'],
    registration_endpoint: `${base}/api/oauth/register`,
    scopes_supported: [...SCOPES],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    token_endpoint_auth_methods_supported: ['none'],
    code_challenge_methods_supported: ['S256'],
    authorization_response_iss_parameter_supported: true,
    client_id_metadata_document_supported: true,
    service_documentation: `${base}/api/v1`,
  };
}

export function protectedResourceMetadata(deps: Deps) {
  const base = deps.config.baseUrl;
  return {
    resource: resourceOf(deps),
    authorization_servers: [base],
    scopes_supported: [...SCOPES],
    bearer_methods_supported: ['header'],
    resource_name: 'svc Account API',
    resource_documentation: `${base}/api/v1/openapi.json`,
  };
}

/** The hosted MCP endpoint `{base}/mcp` (mounted by the composition root) as an RFC 9728 protected resource. */
export function mcpProtectedResourceMetadata(deps: Deps) {
  const base = deps.config.baseUrl;
  return {
    resource: mcpResource(deps),
    authorization_servers: [base],
    scopes_supported: [...SCOPES],
    bearer_methods_supported: ['header'],
    resource_name: 'svc MCP server',
    resource_documentation: `${base}/api/v1`,
  };
}

async function readTokenForm(c: Context): Promise<Record<string, string>> {
  const type = c.req.header('content-type') ?? '';
  let raw: Record<string, unknown>;
  if (type.startsWith('application/x-www-form-urlencoded')) raw = await c.req.parseBody({ all: true });
  else if (type.startsWith('application/json')) {
    const body = await c.req.json().catch(() => null);
    if (!body || typeof body !== 'object' || Array.isArray(body)) throw new OAuthError('invalid_request', 'the body must be a JSON object or a form');
    raw = body as Record<string, unknown>;
  } else throw new OAuthError('invalid_request', 'send the token request as application/x-www-form-urlencoded');
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw)) {
    if (Array.isArray(v)) throw new OAuthError('invalid_request', `${k} is repeated`);
    if (typeof v === 'string') out[k] = v;
  }
  // A public client may also name itself with HTTP Basic and an empty secret.
  const basic = /^Basic\s+(\S+)$/i.exec(c.req.header('authorization') ?? '');
  if (basic) {
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const id = decodeURIComponent(decoded.split(':')[0] ?? '');
    if (out.client_id && out.client_id !== id) throw new OAuthError('invalid_request', 'client_id in the body and in Authorization differ');
    out.client_id = id;
  }
  return out;
}

/** Authorization server endpoints and discovery metadata (spec §5, RFC 6749/7591/7636/8414/9728). */
export function oauthRoutes(deps: Deps): Hono {
  const app = new Hono();

  // Metadata and the token endpoint are read and called cross-origin by browser-based clients.
  app.use('/.well-known/*', publicCors({ allowMethods: ['GET', 'OPTIONS'] }));
  app.use('/oauth/revoke', publicCors({ allowMethods: ['POST', 'OPTIONS'], allowHeaders: ['Content-Type', 'Authorization'], maxAge: 600 }));
  app.use('/oauth/token', publicCors({ allowMethods: ['POST', 'OPTIONS'], allowHeaders: ['Content-Type', 'Authorization'], maxAge: 600 }));
  app.use(
    '/oauth/*',
    bodyLimit({
      maxSize: OAUTH_BODY_LIMIT,
      onError: (c) => oauthErrorResponse(c, new OAuthError('invalid_request', `request body exceeds ${OAUTH_BODY_LIMIT} bytes`, 413)),
    }),
  );

  app.get('/.well-known/oauth-authorization-server', (c) => c.json(authorizationServerMetadata(deps)));
  // RFC 9728 §3.1: the metadata of resource `{base}/api/v1` lives at the path-suffixed address; the bare one is its alias.
  app.get('/.well-known/oauth-protected-resource/api/v1', (c) => c.json(protectedResourceMetadata(deps)));
  app.get('/.well-known/oauth-protected-resource/mcp', (c) => c.json(mcpProtectedResourceMetadata(deps)));
  app.get('/.well-known/oauth-protected-resource', (c) => c.json(protectedResourceMetadata(deps)));

  app.post(
    '/api/oauth/register',
    oauthEndpoint(async (c) => {
      await consumeRateLimit(deps.db, `oauth-register:${clientIp(c, deps.config.trustProxy)}`, REGISTRATIONS_PER_IP_PER_HOUR, 3600_000, deps.clock.now());
      const body = await c.req.json().catch(() => {
        throw new OAuthError('invalid_client_metadata', 'the body must be a JSON object (Content-Type: application/json)');
      });
      const client = await registerClient(deps, body);
      c.header('cache-control', 'no-store');
      return c.json(client, 201);
    }),
  );

  app.post(
    '/oauth/token',
    oauthEndpoint(async (c) => {
      const tokens = await issueTokens(deps, await readTokenForm(c));
      c.header('cache-control', 'no-store');
      c.header('pragma', 'no-cache');
      return c.json(tokens);
    }),
  );

  app.post(
    '/oauth/revoke',
    oauthEndpoint(async (c) => {
      const form = await readTokenForm(c);
      if (!form.client_id || !(await findClient(deps.db, form.client_id))) throw new OAuthError('invalid_client', 'a registered client_id is required');
      if (!form.token) throw new OAuthError('invalid_request', 'token is required');
      await revokeTokenByClient(deps, form.client_id, form.token);
      c.header('cache-control', 'no-store');
      return c.body(null, 200);
    }),
  );

  return app;
}

/** An OAuth endpoint answers its refusals in RFC 6749's error format; anything else goes to the service's error handler. */
function oauthEndpoint(handler: (c: Context) => Promise<Response>): (c: Context) => Promise<Response> {
  return async (c) => {
    try {
      return await handler(c);
    } catch (e) {
      if (e instanceof OAuthError) return oauthErrorResponse(c, e);
      throw e;
    }
  };
}

/** The token endpoint's grants: an authorization code (with its PKCE verifier) or a refresh token. */
async function issueTokens(deps: Deps, form: Awaited<ReturnType<typeof readTokenForm>>) {
  if (!form.client_id) throw new OAuthError('invalid_client', 'client_id is required (public clients name themselves in the body)');
  if (!(await findClient(deps.db, form.client_id))) throw new OAuthError('invalid_client', 'unknown client_id');
  if (form.resource !== undefined && !knownResources(deps).includes(form.resource))
    throw new OAuthError('invalid_target', `resource must be one of ${knownResources(deps).join(', ')}`);
  if (form.grant_type === 'authorization_code') {
    if (!form.code) throw new OAuthError('invalid_request', 'code is required');
    return exchangeAuthorizationCode(deps, {
      clientId: form.client_id,
      code: form.code,
      redirectUri: form.redirect_uri,
      codeVerifier: form.code_verifier,
      resource: form.resource,
    });
  }
  if (form.grant_type === 'refresh_token') {
    if (!form.refresh_token) throw new OAuthError('invalid_request', 'refresh_token is required');
    return refreshAccessToken(deps, { clientId: form.client_id, refreshToken: form.refresh_token, scope: form.scope, resource: form.resource });
  }
  if (!form.grant_type) throw new OAuthError('invalid_request', 'grant_type is required');
  throw new OAuthError('unsupported_grant_type', `grant_type ${form.grant_type} is not supported (authorization_code, refresh_token)`);
}
