import { createHash, randomBytes } from 'node:crypto';
import { and, desc, eq, isNull } from 'drizzle-orm';
import type { Scope } from '../../shared/scopes.js';
import { type DbOrTx, onlyRow } from '../db/client.js';
import { newId } from '../kernel/ids.js';
import { personalKeys } from '../db/schema/index.js';
import { AppError } from '../kernel/app-error.js';

export const PERSONAL_KEY_PREFIX = 'svc_pat_';

/** Keys carry 256 random bits, so a fast hash is enough: no key can be guessed from its hash. */
export function hashCredential(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export interface PersonalKeyInfo {
  id: string;
  name: string;
  prefix: string;
  scopes: Scope[];
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

function toInfo(row: typeof personalKeys.$inferSelect): PersonalKeyInfo {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    scopes: row.scopes as Scope[],
    createdAt: row.createdAt.toISOString(),
    lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
    revokedAt: row.revokedAt?.toISOString() ?? null,
  };
}

/** Creates a key and returns its secret: the only time anyone sees it. */
export async function createPersonalKey(
  db: DbOrTx,
  input: { accountId: string; name: string; scopes: Scope[] },
): Promise<{ key: PersonalKeyInfo; secret: string }> {
  if (input.scopes.length === 0) throw new AppError('validation_failed', 'a key needs at least one scope');
  const secret = `${PERSONAL_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
  const row = onlyRow(
    await db
      .insert(personalKeys)
      .values({
        id: newId('key'),
        accountId: input.accountId,
        name: input.name,
        prefix: `${secret.slice(0, PERSONAL_KEY_PREFIX.length + 4)}…`,
        hash: hashCredential(secret),
        scopes: input.scopes,
      })
      .returning(),
    'insert the key',
  );
  return { key: toInfo(row), secret };
}

export async function listPersonalKeys(db: DbOrTx, accountId: string): Promise<PersonalKeyInfo[]> {
  const rows = await db.select().from(personalKeys).where(eq(personalKeys.accountId, accountId)).orderBy(desc(personalKeys.createdAt));
  return rows.map(toInfo);
}

export async function revokePersonalKey(db: DbOrTx, accountId: string, keyId: string, now: Date): Promise<PersonalKeyInfo> {
  const [row] = await db
    .update(personalKeys)
    .set({ revokedAt: now })
    .where(and(eq(personalKeys.id, keyId), eq(personalKeys.accountId, accountId), isNull(personalKeys.revokedAt)))
    .returning();
  if (row) return toInfo(row);
  const [existing] = await db
    .select()
    .from(personalKeys)
    .where(and(eq(personalKeys.id, keyId), eq(personalKeys.accountId, accountId)));
  if (!existing) throw new AppError('not_found', `key ${keyId} not found for this account`);
  return toInfo(existing); // already revoked: revoking again is a no-op
}
