import { and, eq, gt, ne } from 'drizzle-orm';
import { hashPassword } from '../auth/passwords.js';
import { accounts, dashboardSessions } from '../db/schema/index.js';
import type { Deps } from '../deps.js';
import { AppError } from '../kernel/app-error.js';

export const MIN_PASSWORD_LENGTH = 10;
export const MAX_PASSWORD_LENGTH = 200;

/** Why `password` is not acceptable, or null. */
export function passwordProblem(password: string): string | null {
  if (password.length < MIN_PASSWORD_LENGTH) return `Choose a password of at least ${MIN_PASSWORD_LENGTH} characters.`;
  if (password.length > MAX_PASSWORD_LENGTH) return `Passwords are at most ${MAX_PASSWORD_LENGTH} characters.`;
  return null;
}

/**
 * Sets the dashboard password of an account (operators: `svc account password`, e.g. for accounts
 * made by the CLI, which have none) and ends every dashboard session of that account.
 */
export async function setAccountPassword(deps: Deps, accountId: string, password: string): Promise<{ sessionsEnded: number }> {
  const problem = passwordProblem(password);
  if (problem) throw new AppError('validation_failed', problem, { issues: [{ field: 'password', message: problem }] });
  const passwordHash = await hashPassword(password, deps.config.passwordHashCost);
  return deps.db.transaction(async (tx) => {
    const updated = await tx.update(accounts).set({ passwordHash }).where(eq(accounts.id, accountId)).returning({ id: accounts.id });
    if (updated.length === 0) throw new AppError('not_found', `account ${accountId} not found`);
    const ended = await tx.delete(dashboardSessions).where(eq(dashboardSessions.accountId, accountId)).returning({ hash: dashboardSessions.hash });
    return { sessionsEnded: ended.length };
  });
}

export async function countSessions(deps: Deps, accountId: string): Promise<number> {
  const rows = await deps.db
    .select({ hash: dashboardSessions.hash })
    .from(dashboardSessions)
    .where(and(eq(dashboardSessions.accountId, accountId), gt(dashboardSessions.expiresAt, deps.clock.now())));
  return rows.length;
}

/** Ends every session of the account except `keepHash` (the browser asking). */
export async function endOtherSessions(deps: Deps, accountId: string, keepHash: string): Promise<number> {
  const rows = await deps.db
    .delete(dashboardSessions)
    .where(and(eq(dashboardSessions.accountId, accountId), ne(dashboardSessions.hash, keepHash)))
    .returning({ hash: dashboardSessions.hash });
  return rows.length;
}
