import type { SiteRow } from '../db/schema/sites.js';
import { AppError } from '../kernel/app-error.js';

/** The parts of a site row that say whether the operator suspended it (service/operator/takedowns.ts). */
type SuspensionColumns = Pick<SiteRow, 'slug' | 'suspendedAt' | 'suspensionReason' | 'ownerSuspension'>;

/** Why a site does not answer, as its owner sees it (null: it is served). */
export interface SiteSuspension {
  /** `site`: the site itself was suspended; `owner`: its account is suspended or its wallet blocked. */
  cause: 'site' | 'owner';
  reason: string;
  /** When the site itself was suspended; null for an owner's suspension (see the account or wallet). */
  suspendedAt: string | null;
}

export function siteSuspension(site: SuspensionColumns): SiteSuspension | null {
  if (site.suspendedAt) return { cause: 'site', reason: site.suspensionReason ?? '', suspendedAt: site.suspendedAt.toISOString() };
  if (site.ownerSuspension) return { cause: 'owner', reason: site.ownerSuspension, suspendedAt: null };
  return null;
}

export function isSiteSuspended(site: SuspensionColumns): boolean {
  return site.suspendedAt !== null || site.ownerSuspension !== null;
}

/** The refusal of a change to a suspended site by its owner: 451, with the operator's reason. */
export function siteSuspendedError(site: SuspensionColumns): AppError {
  const s = siteSuspension(site);
  return new AppError(
    'site_suspended',
    `the site "${site.slug}" is suspended by the operator of this service${s ? ` (${s.reason})` : ''}; nothing of it was changed or deleted`,
    { suspension: s },
  );
}

/** The public's refusal (Table API): 451 with the same neutral words as the site's page, without the operator's reason. */
export function siteSuspendedNotice(slug: string): AppError {
  return new AppError('site_suspended', `the site "${slug}" has been suspended by the operator of this service`);
}

/** Throws `site_suspended` (451) when the site is suspended, on its own or through its owner. */
export function assertSiteActive(site: SuspensionColumns): void {
  if (isSiteSuspended(site)) throw siteSuspendedError(site);
}
