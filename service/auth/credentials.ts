import { and, eq, isNull, lt, or, sql, type SQL } from 'drizzle-orm';
import type { Scope } from '../../shared/scopes.js';
import type { Deps } from '../deps.js';
import { rowsOf } from '../db/client.js';
import { oauthGrants, personalKeys } from '../db/schema/index.js';
import { hashCredential, PERSONAL_KEY_PREFIX } from '../accounts/personal-keys.js';
import { countRequests, type RateLimitWindow } from '../http/rate-limit.js';
import type { CredentialLookup, PersonalKeyVersions } from './principal.js';
import { accountApiResource } from './resources.js';

/** OAuth access tokens (issued by service/oauth/tokens.ts). */
export const ACCESS_TOKEN_PREFIX = 'svc_oat_';

/**
 * What a sign-in found, and the count of its rate-limit window when it was asked to count the
 * request (null when it did not: no window asked, or no usable credential to count against).
 */
export interface SignIn {
  lookup: CredentialLookup;
  counted: number | null;
}

/**
 * Looks a credential up and, given a window, counts the request against it in the same statement
 * (rate-limit.ts `countRequests`): a sign-in is one round trip. A revoked or expired credential is
 * never counted.
 */
export type CredentialResolver = (deps: Deps, token: string, window: RateLimitWindow | null) => Promise<SignIn>;

/** `with found as (<lookup>)` and, given a window, the count of the request against `key` (an SQL expression over `found`). */
function lookUpAndCount(lookup: SQL, window: RateLimitWindow | null, key: SQL, usable: SQL): SQL {
  if (!window) return sql`with found as (${lookup}) select found.*, null::int as counted from found`;
  return sql`with found as (${lookup}), counted as (${countRequests(window, sql`select ${key} from found where ${usable}`)})
    select found.*, (select count from counted) as counted from found`;
}

interface PersonalKeyRow {
  id: string;
  account_id: string;
  scopes: string[];
  revoked: boolean;
  /** The operator's reason when the key's account is suspended, else null. */
  suspended: string | null;
  /** Its last use is older than a minute (or unrecorded). */
  use_stale: boolean;
  /** The row versions (xmin) of the key and of its account. */
  version: string;
  account_version: string;
  counted: number | null;
}

/** A key's or grant's last use is recorded at most once a minute: reads must not turn into a write per request. */
const USE_RECORDED_EVERY_MS = 60_000;

/** A personal key's sign-in, with its row versions when it let the key in (null when another node recorded its use meanwhile). */
type PersonalKeySignIn = SignIn & { versions: PersonalKeyVersions | null };

/** A personal key's lookup with the row versions a cache of it is checked against (tables/read-keys.ts). */
export function lookUpPersonalKey(deps: Deps, token: string): Promise<PersonalKeySignIn> {
  return resolvePersonalKey(deps, token, null);
}

async function resolvePersonalKey(deps: Deps, token: string, window: RateLimitWindow | null): Promise<PersonalKeySignIn> {
  const now = deps.clock.now();
  const staleBefore = new Date(now.getTime() - USE_RECORDED_EVERY_MS);
  const lookup = sql`select id, account_id, scopes, revoked_at is not null as revoked,
    (select suspension_reason from accounts a where a.id = personal_keys.account_id and a.suspended_at is not null) as suspended,
    (last_used_at is null or last_used_at < ${staleBefore.toISOString()}::timestamptz) as use_stale,
    xmin::text as version, (select a.xmin::text from accounts a where a.id = personal_keys.account_id) as account_version
    from personal_keys where hash = ${hashCredential(token)}`;
  const [row] = rowsOf<PersonalKeyRow>(await deps.db.execute(lookUpAndCount(lookup, window, sql`'cred:' || found.id`, sql`not found.revoked`)));
  if (!row) return { lookup: { status: 'unknown' }, counted: null, versions: null };
  if (row.revoked) return { lookup: { status: 'revoked' }, counted: null, versions: null };
  if (row.suspended !== null) return { lookup: { status: 'suspended', reason: row.suspended }, counted: null, versions: null };
  let keyVersion: string | undefined = row.version;
  if (row.use_stale) {
    // Recording the use makes a new version of the key's row: the one a cache of it must hold.
    const [updated] = await deps.db
      .update(personalKeys)
      .set({ lastUsedAt: now })
      .where(and(eq(personalKeys.id, row.id), or(isNull(personalKeys.lastUsedAt), lt(personalKeys.lastUsedAt, staleBefore))))
      .returning({ version: sql<string>`${personalKeys}.xmin::text` });
    keyVersion = updated?.version;
  }
  return {
    lookup: { status: 'ok', principal: { accountId: row.account_id, scopes: row.scopes as Scope[], credential: { kind: 'personal_key', id: row.id } } },
    counted: row.counted,
    versions: keyVersion === undefined ? null : { key: keyVersion, account: row.account_version },
  };
}

interface AccessTokenRow {
  grant_id: string;
  account_id: string;
  scopes: string[];
  resource: string | null;
  revoked: boolean;
  expired: boolean;
  suspended: string | null;
  use_stale: boolean;
  counted: number | null;
}

/** Credential resolver for `svc_oat_…` Bearer tokens; the rate limit is the grant's (shared by the tokens it issues). */
async function resolveAccessToken(deps: Deps, accessToken: string, window: RateLimitWindow | null): Promise<SignIn> {
  const now = deps.clock.now();
  const staleBefore = new Date(now.getTime() - USE_RECORDED_EVERY_MS);
  const lookup = sql`select g.id as grant_id, g.account_id, t.scopes, g.resource, g.revoked_at is not null as revoked,
    t.expires_at <= ${now.toISOString()}::timestamptz as expired,
    (select suspension_reason from accounts a where a.id = g.account_id and a.suspended_at is not null) as suspended,
    (g.last_used_at is null or g.last_used_at < ${staleBefore.toISOString()}::timestamptz) as use_stale
    from oauth_tokens t join oauth_grants g on g.id = t.grant_id where t.hash = ${hashCredential(accessToken)} and t.kind = 'access'`;
  const usable = sql`not found.revoked and not found.expired`;
  const [row] = rowsOf<AccessTokenRow>(await deps.db.execute(lookUpAndCount(lookup, window, sql`'cred:' || found.grant_id`, usable)));
  if (!row) return { lookup: { status: 'unknown' }, counted: null };
  if (row.revoked) return { lookup: { status: 'revoked' }, counted: null };
  if (row.expired) return { lookup: { status: 'expired' }, counted: null };
  if (row.suspended !== null) return { lookup: { status: 'suspended', reason: row.suspended }, counted: null };
  if (row.use_stale) {
    await deps.db
      .update(oauthGrants)
      .set({ lastUsedAt: now })
      .where(and(eq(oauthGrants.id, row.grant_id), or(isNull(oauthGrants.lastUsedAt), lt(oauthGrants.lastUsedAt, staleBefore))));
  }
  return {
    lookup: {
      status: 'ok',
      principal: {
        accountId: row.account_id,
        scopes: row.scopes as Scope[],
        credential: { kind: 'oauth_token', id: row.grant_id },
        resource: row.resource ?? accountApiResource(deps),
      },
    },
    counted: row.counted,
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

/** The credential `token` names, without counting the request anywhere. */
export async function resolveCredential(deps: Deps, token: string): Promise<CredentialLookup> {
  return (await signIn(deps, token, null)).lookup;
}

/** The credential `token` names and, given a window, the request counted against its rate limit (one statement). */
export async function signIn(deps: Deps, token: string, window: RateLimitWindow | null): Promise<SignIn> {
  for (const [prefix, resolve] of Object.entries(credentialResolvers)) {
    if (token.startsWith(prefix)) return resolve(deps, token, window);
  }
  return { lookup: { status: 'unknown' }, counted: null };
}
