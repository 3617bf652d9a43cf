import type { Principal } from '../kernel/request-env.js';

export type CredentialLookup =
  | { status: 'ok'; principal: Principal }
  | { status: 'revoked' | 'expired' | 'unknown' }
  /** A valid credential of an account the operator suspended (`reason` is the operator's). */
  | { status: 'suspended'; reason: string };

/**
 * The row versions (`xmin`) of a personal key and of its account as a lookup found them (after
 * recording its use): what a node's cache of the key is checked against inside each read
 * (svc_personal_key_current, migration 0014; tables/read-keys.ts).
 */
export interface PersonalKeyVersions {
  key: string;
  account: string;
}
