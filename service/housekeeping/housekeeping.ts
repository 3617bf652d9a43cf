import { pruneExpiredSessions } from '../dashboard/session.js';
import { pruneAbandonedUploads } from '../datasets/uploads.js';
import { claimLease } from '../db/settings.js';
import type { Deps } from '../deps.js';
import { pruneExpiredTasks } from '../mcp-tasks/task-store.js';
import { pruneOAuthRecords } from '../oauth/tokens.js';
import { pruneAnsweredPayments } from '../payments/payment-store.js';
import { pruneSiwxNonces } from '../payments/sign-in-with-x.js';
import { prunePublishRequests } from '../sites/publish.js';
import { pruneVersions } from '../sites/versions.js';
import { deleteOrphanBlobs } from './orphan-blobs.js';

/** How often a node offers to do the housekeeping; the lease makes one node at a time do it. */
export const HOUSEKEEPING_EVERY_MS = 3_600_000;
/** The first run, after start (not during it). */
const FIRST_RUN_AFTER_MS = 60_000;
/** Longer than a run takes; a node that dies holding the lease lets it expire. */
const LEASE_MS = 15 * 60_000;
/** Answered payments (expired past this) and Idempotency-Keys are kept this long for replays. */
export const PAYMENT_RECORD_DAYS = 30;

export interface HousekeepingReport {
  sessions: number;
  oauthTokens: number;
  oauthGrants: number;
  publishRequests: number;
  payments: number;
  idempotencyKeys: number;
  signInNonces: number;
  uploads: number;
  versions: number;
  mcpTasks: number;
  orphanBlobs: number;
}

/**
 * Forgets what has outlived its use: expired dashboard sessions, OAuth codes and tokens, revoked
 * grants, publish requestIds and answered payments past their replay window, Sign-In-With-X nonces
 * past their proofs' expiry, abandoned data-file uploads, site versions past their retention, MCP
 * tasks past their time to live, and blobs nothing references. Every step is idempotent, so two nodes running it at once
 * would only repeat work; the lease (one settings row) keeps it to one node per run anyway.
 * Returns null when another node holds the lease.
 */
export async function runHousekeeping(deps: Deps, options: { force?: boolean } = {}): Promise<HousekeepingReport | null> {
  const now = deps.clock.now();
  if (!options.force && !(await claimLease(deps.db, 'housekeeping', now, LEASE_MS))) return null;
  const payments = await pruneAnsweredPayments(deps.db, new Date(now.getTime() - PAYMENT_RECORD_DAYS * 86_400_000));
  return {
    sessions: await pruneExpiredSessions(deps.db, now),
    ...(await pruneOAuthRecords(deps.db, now)),
    publishRequests: await prunePublishRequests(deps.db, now),
    ...payments,
    signInNonces: await pruneSiwxNonces(deps.db, now),
    uploads: await pruneAbandonedUploads(deps, now),
    // Before the sweep: the blobs only the pruned versions named go with it.
    versions: await pruneVersions(deps, now),
    mcpTasks: await pruneExpiredTasks(deps.db, now),
    // Last: the uploads pruned above leave their blobs to it when a delete failed.
    orphanBlobs: await deleteOrphanBlobs(deps, now),
  };
}

/** Runs the housekeeping a minute after start and then every hour, on every node (one at a time by lease). */
export function startHousekeeping(deps: Deps): { stop(): void } {
  let running = false;
  const run = () => {
    if (running) return;
    running = true;
    void runHousekeeping(deps)
      .then(
        (report) => {
          if (report && Object.values(report).some((n) => n > 0)) deps.log.info('housekeeping', { ...report });
        },
        (e: Error) => deps.log.warn('housekeeping failed; it runs again within the hour', { error: e.message }),
      )
      .finally(() => (running = false));
  };
  const first = setTimeout(run, FIRST_RUN_AFTER_MS);
  const every = setInterval(run, HOUSEKEEPING_EVERY_MS);
  first.unref();
  every.unref();
  return {
    stop: () => {
      clearTimeout(first);
      clearInterval(every);
    },
  };
}
