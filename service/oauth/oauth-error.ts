import type { Context } from 'hono';

/**
 * OAuth endpoints answer in the shapes their RFCs fix (RFC 6749 §5.2, RFC 7591 §3.2.2):
 * `{ error, error_description }`, not the Account API envelope. This is the one place those bodies
 * are made; domain code throws `OAuthError`.
 */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'invalid_target'
  | 'invalid_redirect_uri'
  | 'invalid_client_metadata'
  | 'access_denied'
  | 'unsupported_response_type'
  | 'server_error'
  | 'temporarily_unavailable';

const STATUS: Partial<Record<OAuthErrorCode, number>> = {
  invalid_client: 401,
  server_error: 500,
  temporarily_unavailable: 503,
};

export class OAuthError extends Error {
  readonly status: number;
  constructor(
    readonly error: OAuthErrorCode,
    readonly description: string,
    status?: number,
    readonly headers?: Record<string, string>,
  ) {
    super(description);
    this.name = 'OAuthError';
    this.status = status ?? STATUS[error] ?? 400;
  }
}

export function oauthErrorResponse(c: Context, err: OAuthError): Response {
  const res = c.json({ error: err.error, error_description: err.description }, err.status as 400);
  res.headers.set('cache-control', 'no-store');
  res.headers.set('pragma', 'no-cache');
  if (err.error === 'invalid_client') res.headers.set('www-authenticate', 'Basic realm="svc"');
  for (const [k, v] of Object.entries(err.headers ?? {})) res.headers.set(k, v);
  return res;
}
