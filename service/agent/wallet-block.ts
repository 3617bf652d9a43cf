import { eq } from 'drizzle-orm';
import type { DbOrTx } from '../db/client.js';
import { walletBlocks } from '../db/schema/index.js';

/** The block of a wallet, or null: one primary-key read, made before any payment of the wallet is looked at. */
export async function walletBlock(db: DbOrTx, wallet: string): Promise<{ reason: string; blockedAt: Date } | null> {
  const [row] = await db
    .select({ reason: walletBlocks.reason, blockedAt: walletBlocks.blockedAt })
    .from(walletBlocks)
    .where(eq(walletBlocks.wallet, wallet.toLowerCase()));
  return row ?? null;
}
