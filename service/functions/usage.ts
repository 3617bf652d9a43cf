import { and, eq } from 'drizzle-orm';
import type { UsageEntry } from '../../shared/account-api/usage.js';
import { functionInvocationCounts } from '../db/schema/index.js';
import type { Deps } from '../deps.js';
import { accountQuotas } from '../accounts/quotas.js';
import { readCounter } from '../db/counters.js';

/** Usage counters contributed by Functions: owned Functions, and invocations this UTC month by the account's keys. */
export async function functionUsage(deps: Deps, accountId: string): Promise<Record<string, UsageEntry>> {
  const period = deps.clock.now().toISOString().slice(0, 7);
  const owned = await readCounter(deps.db, `acct:${accountId}`, 'functions');
  const [inv] = await deps.db
    .select({ n: functionInvocationCounts.count })
    .from(functionInvocationCounts)
    .where(and(eq(functionInvocationCounts.accountId, accountId), eq(functionInvocationCounts.period, period)));
  const { functions: maxFunctionsPerAccount, invocationsPerMonth: maxInvocationsPerMonth } = await accountQuotas(deps.config, deps.db, accountId);
  return {
    functions: { used: owned, limit: maxFunctionsPerAccount || null, unit: 'functions' },
    functionInvocations: { used: Number(inv?.n ?? 0), limit: maxInvocationsPerMonth || null, unit: `function invocations in ${period} (UTC)` },
  };
}
