import { randomBytes } from 'node:crypto';
import { eq, sql } from 'drizzle-orm';
import { type Db, onlyRow } from './client.js';
import { settings } from './schema/index.js';

/**
 * Returns the named secret, generating it on first use. Every node of a deployment reads the same
 * row, so cookies and signed URLs made by one node verify on another.
 */
export async function getOrCreateSecret(db: Db, name: string): Promise<string> {
  const key = `secret:${name}`;
  await db
    .insert(settings)
    .values({ key, value: randomBytes(32).toString('base64url') })
    .onConflictDoNothing();
  const row = onlyRow(await db.select().from(settings).where(eq(settings.key, key)), 'read the secret');
  return row.value;
}

/**
 * Claims the named lease until `now + ttlMs` when nobody holds it (a settings row whose value is the
 * holder's expiry): one statement, so of several nodes asking at once exactly one gets it. A holder
 * that dies simply lets it expire.
 */
export async function claimLease(db: Db, name: string, now: Date, ttlMs: number): Promise<boolean> {
  const key = `lease:${name}`;
  const until = new Date(now.getTime() + ttlMs).toISOString();
  const rows = await db
    .insert(settings)
    .values({ key, value: until })
    .onConflictDoUpdate({ target: settings.key, set: { value: until }, setWhere: sql`${settings.value} < ${now.toISOString()}` })
    .returning({ key: settings.key });
  return rows.length === 1;
}
