import { eq } from 'drizzle-orm';
import { z } from 'zod';
import { requireAccountByEmail } from '../accounts/accounts.js';
import type { Db, DbOrTx } from '../db/client.js';
import { accounts, sites, walletBlocks } from '../db/schema/index.js';
import type { SiteRow } from '../db/schema/sites.js';
import type { Deps } from '../deps.js';
import { AppError } from '../kernel/app-error.js';
import { accountOwner, ownedBy, walletOwner, type SiteOwner } from '../db/owner.js';
import { siteChanged } from '../sites/site-changes.js';
import { lockOwnerQuota } from '../sites/sites.js';
import { siteSuspension, type SiteSuspension } from '../sites/suspension.js';
import { recordAudit, type AuditEntry } from './audit.js';

/**
 * Takedowns (docs/operator.md): an operator suspends a site, suspends an account, or blocks a
 * wallet, and restores it. Nothing is deleted: a suspension is a mark on the rows, and restoring
 * removes the mark. Each act and its audit record are one transaction; every node learns of it the
 * way it learns of a publish (site-changes.ts: the site rows change, and their notifications reach
 * every node's site cache; the Table API's cached rows are checked against the rows' versions).
 */

export const ReasonSchema = z.string().trim().min(3, 'give a reason of at least 3 characters').max(1000);
export const ActorSchema = z.string().trim().min(1).max(200).default('admin endpoint');
export const WalletAddressSchema = z
  .string()
  .trim()
  .regex(/^0x[0-9a-fA-F]{40}$/, 'not a wallet address (0x followed by 40 hex digits)')
  .transform((a) => a.toLowerCase());

/** A site of any owner by id (`site_…`) or name; 404 naming it when there is none. */
async function findSite(db: DbOrTx, ref: string): Promise<SiteRow> {
  const key = ref.trim();
  const [row] = await db
    .select()
    .from(sites)
    .where(key.startsWith('site_') ? eq(sites.id, key) : eq(sites.slug, key.toLowerCase()));
  if (!row) throw new AppError('not_found', `no site with id or name "${ref}"`, { site: ref });
  return row;
}

interface Act {
  actor: string;
  reason: string;
}

function transaction<T>(deps: Deps, run: (tx: DbOrTx) => Promise<T>): Promise<T> {
  return (deps.db as Db).transaction(run);
}

export async function suspendSite(deps: Deps, input: Act & { site: string }): Promise<{ site: SiteView; audit: AuditEntry }> {
  return transaction(deps, async (tx) => {
    const site = await findSite(tx, input.site);
    if (site.suspendedAt)
      throw new AppError('conflict', `the site "${site.slug}" is already suspended (since ${site.suspendedAt.toISOString()}: ${site.suspensionReason})`);
    const at = deps.clock.now();
    const [row] = await tx.update(sites).set({ suspendedAt: at, suspensionReason: input.reason }).where(eq(sites.id, site.id)).returning();
    await siteChanged(deps, tx, site);
    const audit = await recordAudit(tx, {
      at,
      actor: input.actor,
      action: 'site.suspend',
      targetKind: 'site',
      target: site.id,
      reason: input.reason,
      details: { slug: site.slug },
    });
    return { site: siteSummary(row!), audit };
  });
}

export async function restoreSite(deps: Deps, input: Act & { site: string }): Promise<{ site: SiteView; audit: AuditEntry }> {
  return transaction(deps, async (tx) => {
    const site = await findSite(tx, input.site);
    if (!site.suspendedAt) {
      const owner = site.ownerSuspension ? ` (its owner is: ${site.ownerSuspension}; restore the account or unblock the wallet)` : '';
      throw new AppError('conflict', `the site "${site.slug}" is not suspended${owner}`);
    }
    const [row] = await tx.update(sites).set({ suspendedAt: null, suspensionReason: null }).where(eq(sites.id, site.id)).returning();
    await siteChanged(deps, tx, site);
    const audit = await recordAudit(tx, {
      at: deps.clock.now(),
      actor: input.actor,
      action: 'site.restore',
      targetKind: 'site',
      target: site.id,
      reason: input.reason,
      details: { slug: site.slug },
    });
    return { site: siteSummary(row!), audit };
  });
}

/**
 * Marks (or clears) the owner's suspension on each of its sites, under the owner's quota lock (a
 * site being created at the same moment is either marked here or made after, by a refused owner).
 */
async function markOwnerSites(deps: Deps, tx: DbOrTx, owner: SiteOwner, ownerSuspension: string | null): Promise<number> {
  await lockOwnerQuota(tx, owner);
  const changed = await tx.update(sites).set({ ownerSuspension }).where(ownedBy(owner)).returning({ id: sites.id, slug: sites.slug });
  for (const site of changed) await siteChanged(deps, tx, site);
  return changed.length;
}

export async function suspendAccount(deps: Deps, input: Act & { email: string }) {
  return transaction(deps, async (tx) => {
    const account = await requireAccountByEmail(tx, input.email);
    const [row] = await tx.select().from(accounts).where(eq(accounts.id, account.id));
    if (row!.suspendedAt)
      throw new AppError('conflict', `the account ${account.email} is already suspended (since ${row!.suspendedAt.toISOString()}: ${row!.suspensionReason})`);
    const at = deps.clock.now();
    await tx.update(accounts).set({ suspendedAt: at, suspensionReason: input.reason }).where(eq(accounts.id, account.id));
    const sitesSuspended = await markOwnerSites(deps, tx, accountOwner(account.id), `account suspended: ${input.reason}`);
    const audit = await recordAudit(tx, {
      at,
      actor: input.actor,
      action: 'account.suspend',
      targetKind: 'account',
      target: account.email,
      reason: input.reason,
      details: { accountId: account.id, sitesSuspended },
    });
    return { account: { id: account.id, email: account.email, suspendedAt: at.toISOString(), suspensionReason: input.reason }, sitesSuspended, audit };
  });
}

export async function restoreAccount(deps: Deps, input: Act & { email: string }) {
  return transaction(deps, async (tx) => {
    const account = await requireAccountByEmail(tx, input.email);
    const [row] = await tx.select().from(accounts).where(eq(accounts.id, account.id));
    if (!row!.suspendedAt) throw new AppError('conflict', `the account ${account.email} is not suspended`);
    await tx.update(accounts).set({ suspendedAt: null, suspensionReason: null }).where(eq(accounts.id, account.id));
    const sitesRestored = await markOwnerSites(deps, tx, accountOwner(account.id), null);
    const audit = await recordAudit(tx, {
      at: deps.clock.now(),
      actor: input.actor,
      action: 'account.restore',
      targetKind: 'account',
      target: account.email,
      reason: input.reason,
      details: { accountId: account.id, sitesRestored },
    });
    return { account: { id: account.id, email: account.email, suspendedAt: null, suspensionReason: null }, sitesRestored, audit };
  });
}

export async function blockWallet(deps: Deps, input: Act & { address: string }) {
  return transaction(deps, async (tx) => {
    const wallet = input.address;
    const [existing] = await tx.select().from(walletBlocks).where(eq(walletBlocks.wallet, wallet));
    if (existing) throw new AppError('conflict', `the wallet ${wallet} is already blocked (since ${existing.blockedAt.toISOString()}: ${existing.reason})`);
    const at = deps.clock.now();
    await tx.insert(walletBlocks).values({ wallet, reason: input.reason, blockedAt: at, blockedBy: input.actor });
    const appsSuspended = await markOwnerSites(deps, tx, walletOwner(wallet), `wallet blocked: ${input.reason}`);
    const audit = await recordAudit(tx, {
      at,
      actor: input.actor,
      action: 'wallet.block',
      targetKind: 'wallet',
      target: wallet,
      reason: input.reason,
      details: { appsSuspended },
    });
    return { wallet: { address: wallet, blockedAt: at.toISOString(), reason: input.reason }, appsSuspended, audit };
  });
}

export async function unblockWallet(deps: Deps, input: Act & { address: string }) {
  return transaction(deps, async (tx) => {
    const wallet = input.address;
    const removed = await tx.delete(walletBlocks).where(eq(walletBlocks.wallet, wallet)).returning();
    if (removed.length === 0) throw new AppError('conflict', `the wallet ${wallet} is not blocked`);
    const appsRestored = await markOwnerSites(deps, tx, walletOwner(wallet), null);
    const audit = await recordAudit(tx, {
      at: deps.clock.now(),
      actor: input.actor,
      action: 'wallet.unblock',
      targetKind: 'wallet',
      target: wallet,
      reason: input.reason,
      details: { appsRestored },
    });
    return { wallet: { address: wallet, blockedAt: null, reason: null }, appsRestored, audit };
  });
}

interface SiteView {
  id: string;
  slug: string;
  owner: string;
  suspension: SiteSuspension | null;
}

function siteSummary(row: SiteRow): SiteView {
  return { id: row.id, slug: row.slug, owner: row.ownerAccountId ?? row.ownerWallet ?? '', suspension: siteSuspension(row) };
}
