import { and, eq, isNull, lt, or } from 'drizzle-orm';
import type { Scope } from '../../shared/scopes.js';
import type { Deps } from '../deps.js';
import { personalKeys } from '../db/schema/index.js';
import { findActiveKeyByHash, hashCredential, PERSONAL_KEY_PREFIX } from '../accounts/personal-keys.js';
import type { CredentialLookup } from './principal.js';
import { ACCESS_TOKEN_PREFIX, resolveAccessToken } from '../oauth/tokens.js';

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

/**
 * Credential kinds by prefix. Every credential the service issues is prefixed, so the kind is
 * known without a lookup; OAuth access tokens register their resolver here.
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
