import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { and, desc, eq, isNotNull, isNull, lt, sql } from 'drizzle-orm';
import type { Scope } from '../../shared/scopes.js';
import { hashCredential } from '../accounts/personal-keys.js';
import { ACCESS_TOKEN_PREFIX } from '../auth/credentials.js';
import { accountApiResource } from '../auth/resources.js';
import type { DbOrTx } from '../db/client.js';
import { newId } from '../kernel/ids.js';
import { accounts, oauthClients, oauthGrants, oauthTokens } from '../db/schema/index.js';
import type { Deps } from '../deps.js';
import { OAuthError } from './oauth-error.js';

export const REFRESH_TOKEN_PREFIX = 'svc_ort_';
export const CODE_PREFIX = 'svc_oac_';

/** RFC 7636 §4.1: 43–128 characters of the unreserved set. */
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;
/** base64url(SHA-256) is always 43 characters. */
export const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

function secret(prefix: string): string {
  return `${prefix}${randomBytes(32).toString('base64url')}`;
}

function s256(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

/** Revokes a whole token family: every code, access token and refresh token of the grant stops working. */
export async function revokeGrant(db: DbOrTx, grantId: string, now: Date, reason: 'user' | 'client' | 'code_reuse' | 'refresh_reuse'): Promise<void> {
  await db
    .update(oauthGrants)
    .set({ revokedAt: now, revokedReason: reason })
    .where(and(eq(oauthGrants.id, grantId), isNull(oauthGrants.revokedAt)));
}

/** RFC 8707 at the token endpoint: a `resource` named there must be the one the authorization was for. */
function assertSameResource(deps: Deps, granted: string | null, asked: string | undefined): void {
  const bound = granted ?? accountApiResource(deps);
  if (asked !== undefined && asked !== bound) throw new OAuthError('invalid_target', `this authorization is for ${bound}, not ${asked}`);
}

/** The user approved `scopes` for `clientId`: a new grant (token family) and its single-use code. */
export async function issueAuthorizationCode(
  deps: Deps,
  input: { accountId: string; clientId: string; scopes: Scope[]; redirectUri: string; codeChallenge: string; resource: string },
): Promise<string> {
  const now = deps.clock.now();
  const code = secret(CODE_PREFIX);
  await deps.db.transaction(async (tx) => {
    const grantId = newId('grant');
    await tx
      .insert(oauthGrants)
      .values({ id: grantId, accountId: input.accountId, clientId: input.clientId, scopes: input.scopes, resource: input.resource, createdAt: now });
    await tx.insert(oauthTokens).values({
      hash: hashCredential(code),
      kind: 'code',
      grantId,
      scopes: input.scopes,
      expiresAt: new Date(now.getTime() + deps.config.oauth.codeTtlSeconds * 1000),
      redirectUri: input.redirectUri,
      codeChallenge: input.codeChallenge,
      createdAt: now,
    });
  });
  return code;
}

async function issueTokenPair(deps: Deps, db: DbOrTx, grantId: string, scopes: Scope[], refreshScopes: Scope[], now: Date): Promise<TokenResponse> {
  const access = secret(ACCESS_TOKEN_PREFIX);
  const refresh = secret(REFRESH_TOKEN_PREFIX);
  const { accessTokenTtlSeconds, refreshTokenTtlSeconds } = deps.config.oauth;
  await db.insert(oauthTokens).values([
    { hash: hashCredential(access), kind: 'access', grantId, scopes, expiresAt: new Date(now.getTime() + accessTokenTtlSeconds * 1000), createdAt: now },
    {
      hash: hashCredential(refresh),
      kind: 'refresh',
      grantId,
      scopes: refreshScopes,
      expiresAt: new Date(now.getTime() + refreshTokenTtlSeconds * 1000),
      createdAt: now,
    },
  ]);
  return { access_token: access, token_type: 'Bearer', expires_in: accessTokenTtlSeconds, refresh_token: refresh, scope: scopes.join(' ') };
}

/** Days a revoked grant (a connected app the user or a reuse killed) is kept before it is forgotten. */
export const REVOKED_GRANT_DAYS = 30;

/**
 * Housekeeping: forgets codes and tokens a day after they expired (spent refresh tokens stay until
 * they expire, so reuse is still detected), and grants revoked REVOKED_GRANT_DAYS ago with their family.
 */
export async function pruneOAuthRecords(db: DbOrTx, now: Date): Promise<{ oauthTokens: number; oauthGrants: number }> {
  const tokens = await db
    .delete(oauthTokens)
    .where(lt(oauthTokens.expiresAt, new Date(now.getTime() - 86_400_000)))
    .returning({ hash: oauthTokens.hash });
  const grants = await db
    .delete(oauthGrants)
    .where(lt(oauthGrants.revokedAt, new Date(now.getTime() - REVOKED_GRANT_DAYS * 86_400_000)))
    .returning({ id: oauthGrants.id });
  return { oauthTokens: tokens.length, oauthGrants: grants.length };
}

async function loadToken(db: DbOrTx, kind: 'code' | 'refresh', token: string) {
  const [row] = await db
    .select({
      token: oauthTokens,
      grant: oauthGrants,
      // The operator's reason when the grant's account is suspended ('' without one), else null.
      suspension: sql<string | null>`case when ${accounts.suspendedAt} is not null then coalesce(${accounts.suspensionReason}, '') end`,
    })
    .from(oauthTokens)
    .innerJoin(oauthGrants, eq(oauthGrants.id, oauthTokens.grantId))
    .innerJoin(accounts, eq(accounts.id, oauthGrants.accountId))
    .where(and(eq(oauthTokens.hash, hashCredential(token)), eq(oauthTokens.kind, kind)));
  return row ?? null;
}

/**
 * A suspended account is issued no tokens (its existing ones are refused by every API already): the
 * code or refresh token stays unspent, so the application carries on once the account is restored.
 */
function assertNotSuspended(suspension: string | null): void {
  if (suspension !== null)
    throw new OAuthError(
      'invalid_grant',
      `the account is suspended by the operator${suspension ? `: ${suspension}` : ''}; no tokens are issued until it is restored`,
    );
}

/** Marks a code or refresh token spent; false when someone else spent it first. */
async function spend(db: DbOrTx, hash: string, now: Date): Promise<boolean> {
  const rows = await db
    .update(oauthTokens)
    .set({ usedAt: now })
    .where(and(eq(oauthTokens.hash, hash), isNull(oauthTokens.usedAt)))
    .returning({ hash: oauthTokens.hash });
  return rows.length === 1;
}

/** `grant_type=authorization_code` (RFC 6749 §4.1.3 + RFC 7636 §4.6). */
export async function exchangeAuthorizationCode(
  deps: Deps,
  input: { clientId: string; code: string; redirectUri: string | undefined; codeVerifier: string | undefined; resource?: string },
): Promise<TokenResponse> {
  const now = deps.clock.now();
  if (!input.codeVerifier) throw new OAuthError('invalid_request', 'code_verifier is required (PKCE S256)');
  if (!VERIFIER.test(input.codeVerifier)) throw new OAuthError('invalid_request', 'code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~');
  if (!input.redirectUri) throw new OAuthError('invalid_request', 'redirect_uri is required and must equal the one of the authorization request');
  const found = await loadToken(deps.db, 'code', input.code);
  if (!found) throw new OAuthError('invalid_grant', 'unknown authorization code');
  const { token, grant } = found;
  if (grant.clientId !== input.clientId) throw new OAuthError('invalid_grant', 'the authorization code was issued to another client');
  assertSameResource(deps, grant.resource, input.resource);
  if (token.usedAt) {
    // RFC 6749 §4.1.2: a code used twice revokes what was issued from it.
    await revokeGrant(deps.db, grant.id, now, 'code_reuse');
    throw new OAuthError('invalid_grant', 'the authorization code was already used; the tokens issued from it are revoked');
  }
  if (grant.revokedAt) throw new OAuthError('invalid_grant', 'the authorization was revoked');
  if (token.expiresAt <= now) throw new OAuthError('invalid_grant', 'the authorization code has expired; start the authorization again');
  assertNotSuspended(found.suspension);
  if (token.redirectUri !== input.redirectUri) throw new OAuthError('invalid_grant', 'redirect_uri does not match the authorization request');
  if (!token.codeChallenge || !sameText(s256(input.codeVerifier), token.codeChallenge)) {
    throw new OAuthError('invalid_grant', 'code_verifier does not match the code_challenge (S256)');
  }
  const scopes = token.scopes as Scope[];
  const issued = await deps.db.transaction(async (tx) => {
    if (!(await spend(tx, token.hash, now))) return null;
    await tx.update(oauthGrants).set({ lastUsedAt: now }).where(eq(oauthGrants.id, grant.id));
    return issueTokenPair(deps, tx, grant.id, scopes, scopes, now);
  });
  if (!issued) {
    await revokeGrant(deps.db, grant.id, now, 'code_reuse');
    throw new OAuthError('invalid_grant', 'the authorization code was already used; the tokens issued from it are revoked');
  }
  return issued;
}

/** `grant_type=refresh_token` (RFC 6749 §6) with rotation: each refresh token works once. */
export async function refreshAccessToken(
  deps: Deps,
  input: { clientId: string; refreshToken: string; scope: string | undefined; resource?: string },
): Promise<TokenResponse> {
  const now = deps.clock.now();
  const found = await loadToken(deps.db, 'refresh', input.refreshToken);
  if (!found) throw new OAuthError('invalid_grant', 'unknown refresh token');
  const { token, grant } = found;
  if (grant.clientId !== input.clientId) throw new OAuthError('invalid_grant', 'the refresh token was issued to another client');
  assertSameResource(deps, grant.resource, input.resource);
  if (grant.revokedAt) throw new OAuthError('invalid_grant', 'the authorization was revoked; the user must approve the application again');
  const reuse = async () => {
    // Someone holds a copy of a spent refresh token: the legitimate client or a thief. Either way the
    // family is no longer trustworthy (OAuth 2.0 Security BCP, RFC 9700 §4.14.2).
    await revokeGrant(deps.db, grant.id, now, 'refresh_reuse');
    return new OAuthError(
      'invalid_grant',
      'refresh token reuse detected: every token of this authorization is revoked; the user must approve the application again',
    );
  };
  if (token.usedAt) throw await reuse();
  if (token.expiresAt <= now) throw new OAuthError('invalid_grant', 'the refresh token has expired; the user must approve the application again');
  assertNotSuspended(found.suspension);
  const allowed = token.scopes as Scope[];
  let scopes = allowed;
  if (input.scope !== undefined) {
    const asked = [...new Set(input.scope.split(' ').filter(Boolean))];
    const extra = asked.filter((s) => !(allowed as string[]).includes(s));
    if (asked.length === 0 || extra.length)
      throw new OAuthError('invalid_scope', `scope may only narrow the approved scopes (${allowed.join(' ')}); not approved: ${extra.join(' ') || '(empty)'}`);
    scopes = asked as Scope[];
  }
  const issued = await deps.db.transaction(async (tx) => {
    if (!(await spend(tx, token.hash, now))) return null;
    await tx.update(oauthGrants).set({ lastUsedAt: now }).where(eq(oauthGrants.id, grant.id));
    return issueTokenPair(deps, tx, grant.id, scopes, allowed, now);
  });
  if (!issued) throw await reuse();
  return issued;
}

/**
 * RFC 7009 revocation by the client: an access or refresh token of its own ends the whole
 * authorization it belongs to. Unknown tokens and other clients' tokens are ignored, as §2.2 allows.
 */
export async function revokeTokenByClient(deps: Deps, clientId: string, token: string): Promise<void> {
  const [row] = await deps.db
    .select({ grantId: oauthTokens.grantId, clientId: oauthGrants.clientId, kind: oauthTokens.kind })
    .from(oauthTokens)
    .innerJoin(oauthGrants, eq(oauthGrants.id, oauthTokens.grantId))
    .where(eq(oauthTokens.hash, hashCredential(token)));
  if (!row || row.kind === 'code' || row.clientId !== clientId) return;
  await revokeGrant(deps.db, row.grantId, deps.clock.now(), 'client');
}

export interface ConnectedApp {
  clientId: string;
  name: string;
  clientUri: string | null;
  redirectHosts: string[];
  scopes: Scope[];
  authorizations: number;
  firstAuthorizedAt: string;
  lastUsedAt: string | null;
}

/** Applications holding live tokens of the account, one entry per client. */
export async function listConnectedApps(db: DbOrTx, accountId: string): Promise<ConnectedApp[]> {
  const rows = await db
    .select({ grant: oauthGrants, client: oauthClients })
    .from(oauthGrants)
    .innerJoin(oauthClients, eq(oauthClients.id, oauthGrants.clientId))
    // lastUsedAt is set when the code is redeemed: an approval whose code was never exchanged holds no token.
    .where(and(eq(oauthGrants.accountId, accountId), isNull(oauthGrants.revokedAt), isNotNull(oauthGrants.lastUsedAt)))
    .orderBy(desc(oauthGrants.createdAt));
  const byClient = new Map<string, ConnectedApp>();
  for (const { grant, client } of rows) {
    let app = byClient.get(client.id);
    if (!app) {
      app = {
        clientId: client.id,
        name: client.name,
        clientUri: client.clientUri,
        redirectHosts: [...new Set(client.redirectUris.map((u) => new URL(u).host))],
        scopes: [],
        authorizations: 0,
        firstAuthorizedAt: grant.createdAt.toISOString(),
        lastUsedAt: null,
      };
      byClient.set(client.id, app);
    }
    app.authorizations++;
    for (const s of grant.scopes as Scope[]) if (!app.scopes.includes(s)) app.scopes.push(s);
    if (grant.createdAt.toISOString() < app.firstAuthorizedAt) app.firstAuthorizedAt = grant.createdAt.toISOString();
    const used = (grant.lastUsedAt ?? grant.createdAt).toISOString();
    if (!app.lastUsedAt || used > app.lastUsedAt) app.lastUsedAt = used;
  }
  return [...byClient.values()];
}

/** Disconnects an application: every approval the account gave it, and every token, stops working. */
export async function revokeConnectedApp(db: DbOrTx, accountId: string, clientId: string, now: Date): Promise<number> {
  const rows = await db
    .update(oauthGrants)
    .set({ revokedAt: now, revokedReason: 'user' })
    .where(and(eq(oauthGrants.accountId, accountId), eq(oauthGrants.clientId, clientId), isNull(oauthGrants.revokedAt)))
    .returning({ id: oauthGrants.id });
  return rows.length;
}
