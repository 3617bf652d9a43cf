import { and, eq, isNull, lt, or } from 'drizzle-orm';
import type { Scope } from '../../shared/scopes.js';
import type { Deps } from '../deps.js';
import { oauthGrants, oauthTokens, personalKeys } from '../db/schema/index.js';
import { findActiveKeyByHash, hashCredential, PERSONAL_KEY_PREFIX } from '../accounts/personal-keys.js';
import type { CredentialLookup } from './principal.js';
import { accountApiResource } from './resources.js';

/** OAuth access tokens (issued by service/oauth/tokens.ts). */
export const ACCESS_TOKEN_PREFIX = 'svc_oat_';

export type CredentialResolver = (deps: Deps, token: string) => Promise<CredentialLookup>;

async function resolvePersonalKey(deps: Deps, token: string): Promise<CredentialLookup> {
  const row = await findActiveKeyByHash(deps.db, hashCredential(token));
  if (!row) return { status: 'unknown' };
  if (row.revokedAt) return { status: 'revoked' };
  // Record use at most once a minute per key: reads must not turn into a write per request.
  const now = deps.clock.now();
  const staleBefore = new Date(now.getTime() - 60_000);
  if (!row.lastUsedAt || row.lastUsedAt < staleBefore) {
    await deps.db
      .update(personalKeys)
      .set({ lastUsedAt: now })
      .where(and(eq(personalKeys.id, row.id), or(isNull(personalKeys.lastUsedAt), lt(personalKeys.lastUsedAt, staleBefore))));
  }
  return {
    status: 'ok',
    principal: { accountId: row.accountId, scopes: row.scopes as Scope[], credential: { kind: 'personal_key', id: row.id } },
  };
}

/** Credential resolver for `svc_oat_…` Bearer tokens on the Account API. */
async function resolveAccessToken(deps: Deps, accessToken: string): Promise<CredentialLookup> {
  const [row] = await deps.db
    .select({ token: oauthTokens, grant: oauthGrants })
    .from(oauthTokens)
    .innerJoin(oauthGrants, eq(oauthGrants.id, oauthTokens.grantId))
    .where(and(eq(oauthTokens.hash, hashCredential(accessToken)), eq(oauthTokens.kind, 'access')));
  if (!row) return { status: 'unknown' };
  if (row.grant.revokedAt) return { status: 'revoked' };
  const now = deps.clock.now();
  if (row.token.expiresAt <= now) return { status: 'expired' };
  const staleBefore = new Date(now.getTime() - 60_000);
  if (!row.grant.lastUsedAt || row.grant.lastUsedAt < staleBefore) {
    await deps.db
      .update(oauthGrants)
      .set({ lastUsedAt: now })
      .where(and(eq(oauthGrants.id, row.grant.id), or(isNull(oauthGrants.lastUsedAt), lt(oauthGrants.lastUsedAt, staleBefore))));
  }
  return {
    status: 'ok',
    principal: {
      accountId: row.grant.accountId,
      scopes: row.token.scopes as Scope[],
      credential: { kind: 'oauth_token', id: row.grant.id },
      resource: row.grant.resource ?? accountApiResource(deps),
    },
  };
}

/**
 * Credential kinds by prefix. Every credential the service issues is prefixed, so the kind is
 * known without a lookup.
 */
export const credentialResolvers: Record<string, CredentialResolver> = {
  [PERSONAL_KEY_PREFIX]: resolvePersonalKey,
  [ACCESS_TOKEN_PREFIX]: resolveAccessToken,
};

export async function resolveCredential(deps: Deps, token: string): Promise<CredentialLookup> {
  for (const [prefix, resolve] of Object.entries(credentialResolvers)) {
    if (token.startsWith(prefix)) return resolve(deps, token);
  }
  return { status: 'unknown' };
}
