import { eq, type SQL } from 'drizzle-orm';
import { sites } from './schema/index.js';

/** Sites belong to an account (Account API) or to a wallet (Agent API); never both. */
export type SiteOwner = { kind: 'account'; accountId: string } | { kind: 'wallet'; wallet: string };

export const accountOwner = (accountId: string): SiteOwner => ({ kind: 'account', accountId });
export const walletOwner = (wallet: string): SiteOwner => ({ kind: 'wallet', wallet: wallet.toLowerCase() });

/** The owner a site's row names (the inverse of `ownerColumns`). */
export function ownerOfSite(site: { ownerAccountId: string | null; ownerWallet: string | null }): SiteOwner {
  return site.ownerAccountId ? { kind: 'account', accountId: site.ownerAccountId } : { kind: 'wallet', wallet: site.ownerWallet! };
}

export function ownerColumns(owner: SiteOwner): { ownerAccountId: string | null; ownerWallet: string | null } {
  return owner.kind === 'account' ? { ownerAccountId: owner.accountId, ownerWallet: null } : { ownerAccountId: null, ownerWallet: owner.wallet };
}

export function ownedBy(owner: SiteOwner): SQL {
  return owner.kind === 'account' ? eq(sites.ownerAccountId, owner.accountId) : eq(sites.ownerWallet, owner.wallet);
}
