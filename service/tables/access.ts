import type { Context } from 'hono';
import { assertAudience, gatewayPrincipal, resourceOfRequest, viaMcpGateway } from '../auth/resources.js';
import { TABLE_METHODS, type TableMethod } from '../../shared/tables/schema.js';
import { PERSONAL_KEY_PREFIX } from '../accounts/personal-keys.js';
import { ACCESS_TOKEN_PREFIX, lookUpPersonalKey, resolveCredential } from '../auth/credentials.js';
import type { CredentialLookup } from '../auth/principal.js';
import { accountSuspended } from '../auth/require-scope.js';
import type { Deps } from '../deps.js';
import { AppError } from '../kernel/app-error.js';
import type { SiteRow } from '../sites/sites.js';
import type { ReadKey } from './read-keys.js';
import { writeKeyMatches, type TableRow } from './tables.js';

/** What a Table API request wants to do; decides which credential it needs. */
export type TableOperation = 'read' | 'insert' | 'write';

/** Who the request was let in as. */
export type TableAccess = { kind: 'public' } | { kind: 'public_insert' } | { kind: 'write_key' } | { kind: 'api_key'; accountId: string };

export const WRITE_KEY_HEADER = 'x-svc-write-key';
export const API_KEY_HEADER = 'x-svc-api-key';

export function enabledMethods(table: TableRow): TableMethod[] {
  return TABLE_METHODS.filter((m) => table.methods.includes(m));
}

/**
 * The Table API permission check, in this order:
 * 1. the method must be enabled for the table (405 with Allow; datasets enable GET only);
 * 2. a presented key must be valid, even where none is needed (401 for a wrong key: a client
 *    sending a bad key has a bug worth surfacing);
 * 3. reads are public unless requireReadKey; POST is public when publicInsert; PATCH, PUT and
 *    DELETE always need a key.
 * `x-svc-write-key` is the table's write key. `x-svc-api-key` is a personal key (`svc_pat_…`) of
 * the account that owns the site: svc.data.read lets it read, svc.data.write read and write.
 */
export async function authorizeTableRequest(
  deps: Deps,
  c: Context,
  site: SiteRow,
  table: TableRow,
  method: TableMethod,
  op: TableOperation,
): Promise<TableAccess> {
  const writeKey = c.req.header(WRITE_KEY_HEADER);
  const apiKey = c.req.header(API_KEY_HEADER);
  if (writeKey !== undefined || apiKey === undefined) return authorizeWithoutApiKey(table, method, op, writeKey);
  assertMethodEnabled(table, method);
  return apiKeyAccess(deps, c, site, apiKey.trim(), op);
}

/**
 * `authorizeTableRequest` for a request that sends no `x-svc-api-key` (or sends a write key, which
 * is checked first): synchronous, as neither the write key nor the table's own settings need the
 * database.
 */
export function authorizeWithoutApiKey(table: TableRow, method: TableMethod, op: TableOperation, writeKey: string | undefined): TableAccess {
  assertMethodEnabled(table, method);
  if (writeKey !== undefined) {
    if (!writeKeyMatches(table, writeKey.trim())) throw new AppError('unauthorized', `invalid ${WRITE_KEY_HEADER} for this table`);
    return { kind: 'write_key' };
  }
  if (op === 'read' && !table.requireReadKey) return { kind: 'public' };
  if (op === 'insert' && table.publicInsert) return { kind: 'public_insert' };
  const why = op === 'read' ? 'this table requires a key for reads' : op === 'insert' ? 'this table does not allow public inserts' : `${method} needs a key`;
  throw new AppError('unauthorized', `${why}: send ${WRITE_KEY_HEADER} (the table's write key) or ${API_KEY_HEADER} (a personal key of the site owner)`);
}

export function assertMethodEnabled(table: TableRow, method: TableMethod): void {
  if (table.methods.includes(method)) return;
  const allow = enabledMethods(table);
  throw new AppError(
    'method_not_allowed',
    `${method} is not enabled for the ${table.kind === 'dataset' ? 'dataset' : 'table'} "${table.slug}" (enabled: ${allow.join(', ')})`,
    { method, enabled: allow },
    { Allow: [...allow, 'OPTIONS'].join(', ') },
  );
}

/** A personal key of the site's owner (through the hosted MCP endpoint also its OAuth token) with a data scope for `op`. */
async function apiKeyAccess(deps: Deps, c: Context, site: SiteRow, key: string, op: TableOperation): Promise<TableAccess> {
  const accepted = key.startsWith(PERSONAL_KEY_PREFIX) || (viaMcpGateway(c) && key.startsWith(ACCESS_TOKEN_PREFIX));
  const signedIn = gatewayPrincipal(c, key);
  const found = signedIn ? { status: 'ok' as const, principal: signedIn } : accepted ? await resolveCredential(deps, key) : { status: 'unknown' as const };
  return accessOf(found, site, op, resourceOfRequest(deps, c));
}

/**
 * A personal key (`svc_pat_…`, trimmed) sent on a request the Node-level fast path answers
 * (read-fast-path.ts): looked up and checked as apiKeyAccess does. A personal key names no
 * audience, and OAuth tokens come only through the MCP gateway, which goes to the app.
 */
export async function personalKeyAccess(deps: Deps, site: SiteRow, key: string, op: TableOperation): Promise<TableAccess> {
  const found = key.startsWith(PERSONAL_KEY_PREFIX) ? await resolveCredential(deps, key) : { status: 'unknown' as const };
  return accessOf(found, site, op, null);
}

/**
 * A read by personal key `token` on `site`'s tables: with the key this node keeps (read-keys.ts) or,
 * when it keeps none, after its lookup (kept when it lets the key in). Refuses as `personalKeyAccess`
 * does. Returns the key whose check the read must carry, or null after a lookup that could not tell
 * the key's row version (another node recorded its use meanwhile: the read runs as after any lookup).
 */
export async function personalKeyReadAccess(deps: Deps, site: SiteRow, token: string): Promise<ReadKey | null> {
  const now = deps.clock.now().getTime();
  const kept = deps.tableLists.readKeys.get(token, now);
  if (kept) {
    accessOf({ status: 'ok', principal: kept.principal }, site, 'read', null);
    return kept;
  }
  const { lookup, versions } = await lookUpPersonalKey(deps, token);
  accessOf(lookup, site, 'read', null);
  return lookup.status === 'ok' && versions ? deps.tableLists.readKeys.keep(token, lookup.principal, versions, now) : null;
}

/** What a credential's lookup lets in: the site owner's, unrevoked, with a data scope for `op`; `resource`: the audience it must name. */
function accessOf(found: CredentialLookup, site: SiteRow, op: TableOperation, resource: string | null): TableAccess {
  if (found.status === 'suspended') throw accountSuspended(found.reason);
  if (found.status !== 'ok')
    throw new AppError(
      'unauthorized',
      `invalid ${API_KEY_HEADER}: ${found.status === 'unknown' ? 'not a valid personal key (svc_pat_…)' : `the key is ${found.status}`}`,
    );
  const { principal } = found;
  if (resource !== null) assertAudience(principal, resource, (message) => new AppError('unauthorized', message));
  if (site.ownerAccountId !== principal.accountId)
    throw new AppError('forbidden', `this ${API_KEY_HEADER} belongs to an account that does not own the site "${site.slug}"`);
  const needed = op === 'read' ? ['svc.data.read', 'svc.data.write'] : ['svc.data.write'];
  if (!principal.scopes.some((s) => needed.includes(s))) {
    const required = op === 'read' ? 'svc.data.read' : 'svc.data.write';
    throw new AppError('insufficient_scope', `this ${API_KEY_HEADER} lacks the scope ${required}`, { required, granted: principal.scopes });
  }
  return { kind: 'api_key', accountId: principal.accountId };
}
