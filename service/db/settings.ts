import { randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import type { Db } from './client.js';
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
  const [row] = await db.select().from(settings).where(eq(settings.key, key));
  return row.value;
}
