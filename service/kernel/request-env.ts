import type { Scope } from '../../shared/scopes.js';

/** Who is calling the Account API, resolved from the Bearer credential. */
export interface Principal {
  accountId: string;
  scopes: Scope[];
  credential: { kind: 'personal_key' | 'oauth_token'; id: string };
  /** OAuth tokens: the resource they were issued for (RFC 8707). Personal keys are not bound to one. */
  resource?: string;
}

/** Hono context variables set by middleware. */
export interface AppEnv {
  Variables: {
    requestId: string;
    principal: Principal;
  };
}
