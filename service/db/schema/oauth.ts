import { index, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { accounts } from './accounts.js';

/** OAuth clients registered through `POST /api/oauth/register` (RFC 7591). Public clients: PKCE, no secret. */
export const oauthClients = pgTable('oauth_clients', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  /** Compared with the authorization request's redirect_uri character for character. */
  redirectUris: text('redirect_uris').array().notNull(),
  /** Scopes the client may ask for; null when it did not restrict itself at registration. */
  scopes: text('scopes').array(),
  clientUri: text('client_uri'),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
});

/**
 * One approval by one account of one client for some scopes: the "connected app" the dashboard lists,
 * and the family of every code, access token and refresh token issued from that approval. Revoking it
 * (by the user, on a reused code or a reused refresh token) kills every token of the family at once.
 */
export const oauthGrants = pgTable(
  'oauth_grants',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    clientId: text('client_id')
      .notNull()
      .references(() => oauthClients.id, { onDelete: 'cascade' }),
    scopes: text('scopes').array().notNull(),
    /** RFC 8707: the protected resource every token of the family is bound to; null (older grants) = the Account API. */
    resource: text('resource'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true }),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
    /** Why the family died: `user` (dashboard), `client` (RFC 7009 revocation), `code_reuse`, `refresh_reuse`. */
    revokedReason: text('revoked_reason'),
  },
  (t) => [index('oauth_grants_account_idx').on(t.accountId)],
);

/**
 * Authorization codes, access tokens and refresh tokens. Only the SHA-256 of each secret is stored.
 * A code or refresh token is spent by setting `usedAt` (one conditional UPDATE, so two concurrent
 * redemptions cannot both win); presenting a spent one revokes the grant.
 */
export const oauthTokens = pgTable(
  'oauth_tokens',
  {
    hash: text('hash').primaryKey(),
    kind: text('kind', { enum: ['code', 'access', 'refresh'] }).notNull(),
    grantId: text('grant_id')
      .notNull()
      .references(() => oauthGrants.id, { onDelete: 'cascade' }),
    /** What this token allows: the grant's scopes, or fewer when a refresh asked to narrow them. */
    scopes: text('scopes').array().notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    usedAt: timestamp('used_at', { withTimezone: true }),
    /** Codes only: the exact redirect_uri and PKCE S256 challenge of the authorization request. */
    redirectUri: text('redirect_uri'),
    codeChallenge: text('code_challenge'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('oauth_tokens_grant_idx').on(t.grantId)],
);

/** Dashboard sign-in sessions. The cookie carries the random id (HMAC-signed); only its hash is stored. */
export const dashboardSessions = pgTable(
  'dashboard_sessions',
  {
    hash: text('hash').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (t) => [index('dashboard_sessions_account_idx').on(t.accountId)],
);
