import { sql } from 'drizzle-orm';
import { hashCredential } from '../accounts/personal-keys.js';
import type { PersonalKeyVersions } from '../auth/principal.js';
import type { Principal } from '../kernel/request-env.js';
import { sqlStateOf } from '../db/client.js';
import { LruMap } from '../../shared/lru-map.js';

/**
 * How long a node reads with a key it looked up before looking it up again. The lookup records the
 * key's last use (at most once a minute, auth/credentials.ts), so "last used" stays right to the minute.
 */
const KEPT_MS = 60_000;
/** Keys kept per node, the least recently used dropped first. */
const CAPACITY = 10_000;

/** SQLSTATE raised by `svc_personal_key_current` (migration 0014) when a kept key is stale. */
export const CHANGED_KEY = 'SV002';

/** A personal key (`x-svc-api-key`) as this node looked it up: who it lets in, and the row versions each read checks. */
export interface ReadKey {
  principal: Principal;
  keyId: string;
  versions: PersonalKeyVersions;
  /** Until when (ms since the epoch) reads may use it without a lookup. */
  until: number;
}

/**
 * The personal keys this node looked up lately for Table API reads, by the key's hash. A read with a
 * kept key is one statement: the read itself, carrying `readKeyGuard` beside the table row check, so
 * PostgreSQL refuses it (SV002) once the key or its account has changed since the lookup (revoked,
 * suspended, scopes changed), on whichever node it was changed. A cache right across nodes with no
 * invalidation message, as the table rows are (table-rows.ts). The access check (owner, scope) is
 * made again on each request, from the kept lookup (access.ts, `personalKeyReadAccess`).
 */
export class ReadKeys {
  private readonly keys = new LruMap<string, ReadKey>(CAPACITY);

  get(token: string, now: number): ReadKey | undefined {
    const key = this.keys.get(hashCredential(token));
    return key !== undefined && key.until > now ? key : undefined;
  }

  keep(token: string, principal: Principal, versions: PersonalKeyVersions, now: number): ReadKey {
    const key: ReadKey = { principal, keyId: principal.credential.id, versions, until: now + KEPT_MS };
    this.keys.set(hashCredential(token), key);
    return key;
  }

  drop(token: string): void {
    this.keys.delete(hashCredential(token));
  }
}

/** The check a read with a kept key carries; its values are `readKeyValues`. */
export const readKeyGuard = sql`(select svc_personal_key_current(${sql.placeholder('keyId')}, ${sql.placeholder('keyVersion')}, ${sql.placeholder('accountVersion')}))`;

/**
 * `readKeyGuard` written into the statement, the function called only to raise SV002: for a read
 * whose plan PostgreSQL keeps, as `plannedRowsGuard` (table-rows.ts) is the table row check's.
 */
export const plannedReadKeyGuard = sql`(case when exists (select from personal_keys k join accounts a on a.id = k.account_id where k.id = ${sql.placeholder('keyId')} and k.xmin::text = ${sql.placeholder('keyVersion')} and a.xmin::text = ${sql.placeholder('accountVersion')}) then true else svc_personal_key_current(${sql.placeholder('keyId')}, ${sql.placeholder('keyVersion')}, ${sql.placeholder('accountVersion')}) end)`;

export function readKeyValues(key: ReadKey): Record<string, unknown> {
  return { keyId: key.keyId, keyVersion: key.versions.key, accountVersion: key.versions.account };
}

/** Whether a read failed because the key it was checked against changed since this node looked it up. */
export function keyChanged(e: unknown): boolean {
  return sqlStateOf(e) === CHANGED_KEY;
}
