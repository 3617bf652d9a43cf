import { eq } from 'drizzle-orm';
import { z } from 'zod';
import { requireAccountByEmail } from '../accounts/accounts.js';
import { defaultQuotas, mergeQuotas, QUOTA_NAMES, type QuotaName, type Quotas } from '../accounts/quotas.js';
import type { Db, DbOrTx } from '../db/client.js';
import { accountLimits } from '../db/schema/index.js';
import type { Deps } from '../deps.js';
import { recordAudit } from './audit.js';

const count = z.number().int().min(0).max(2_147_483_647);
/** What `account.limits` takes: a value per quota to override, null to go back to the default; none: only show them. */
export const LimitsChangeSchema = z
  .object({
    sites: count.nullable(),
    storageBytes: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).nullable(),
    filesPerSite: count.nullable(),
    fileBytes: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).nullable(),
    functions: count.nullable(),
    invocationsPerMonth: count.nullable(),
    tablesPerSite: count.nullable(),
  })
  .partial()
  .strict();

export interface AccountLimitsView {
  account: { id: string; email: string };
  /** What applies now, override or default. */
  limits: Quotas;
  /** The overrides (null: the default applies). */
  overrides: Record<QuotaName, number | null>;
  defaults: Quotas;
}

async function view(deps: Deps, db: DbOrTx, account: { id: string; email: string }): Promise<AccountLimitsView> {
  const [row] = await db.select().from(accountLimits).where(eq(accountLimits.accountId, account.id));
  const overrides = Object.fromEntries(QUOTA_NAMES.map((n) => [n, row?.[n] ?? null])) as Record<QuotaName, number | null>;
  return { account: { id: account.id, email: account.email }, limits: mergeQuotas(deps.config, row), overrides, defaults: defaultQuotas(deps.config) };
}

/**
 * Shows an account's quotas, or changes some (recorded in the audit log with who and why). Lowering
 * a quota below what the account uses deletes nothing: only what would add more is refused.
 */
export async function changeAccountLimits(
  deps: Deps,
  input: { email: string; change: z.infer<typeof LimitsChangeSchema>; actor: string; reason?: string },
): Promise<AccountLimitsView & { changed: boolean }> {
  return (deps.db as Db).transaction(async (tx) => {
    const account = await requireAccountByEmail(tx, input.email);
    const names = Object.keys(input.change) as QuotaName[];
    if (names.length === 0) return { ...(await view(deps, tx, account)), changed: false };
    const before = await view(deps, tx, account);
    const at = deps.clock.now();
    await tx
      .insert(accountLimits)
      .values({ accountId: account.id, ...input.change, updatedAt: at })
      .onConflictDoUpdate({ target: accountLimits.accountId, set: { ...input.change, updatedAt: at } });
    const after = await view(deps, tx, account);
    await recordAudit(tx, {
      at,
      actor: input.actor,
      action: 'account.limits',
      targetKind: 'account',
      target: account.email,
      reason: input.reason ?? '(no reason given)',
      details: { accountId: account.id, set: input.change, before: pick(before.limits, names), after: pick(after.limits, names) },
    });
    return { ...after, changed: true };
  });
}

function pick(q: Quotas, names: QuotaName[]): Partial<Quotas> {
  return Object.fromEntries(names.map((n) => [n, q[n]]));
}
