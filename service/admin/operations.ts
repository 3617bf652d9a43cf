import { z } from 'zod';
import { SCOPES } from '../../shared/scopes.js';
import { createAccount, requireAccountByEmail } from '../accounts/accounts.js';
import { createPersonalKey, listPersonalKeys, revokePersonalKey } from '../accounts/personal-keys.js';
import { eq } from 'drizzle-orm';
import { sites } from '../db/schema/index.js';
import type { Deps } from '../deps.js';
import { deleteFunctionSecret, findOwnedFunction, listFunctionSecretNames, setAllowUserInvoke, setFunctionSecret } from '../functions/functions.js';
import { AppError } from '../kernel/app-error.js';
import { setAccountPassword } from '../dashboard/passwords.js';
import { runFaucet } from '../payments/faucet.js';
import { reconcileOrphanedPayments } from '../payments/reconcile.js';
import { viewSite, writeSiteFile } from '../sites/sites.js';
import { listAbuseReports } from '../abuse/reports.js';
import { listAudit } from '../operator/audit.js';
import { changeAccountLimits, LimitsChangeSchema } from '../operator/limits.js';
import {
  ActorSchema,
  blockWallet,
  ReasonSchema,
  restoreAccount,
  restoreSite,
  suspendAccount,
  suspendSite,
  unblockWallet,
  WalletAddressSchema,
} from '../operator/takedowns.js';
import { retentionOf, setRetention } from '../sites/versions.js';
import { recountCounters } from '../db/counters.js';

/**
 * Operator actions (the `svc` CLI). Each is declared once: the CLI runs it in-process when the
 * service is stopped, or through the running service's loopback admin endpoint (PGlite allows one
 * process at a time). Never reachable with Account API credentials.
 */
export interface AdminOperation<I extends z.ZodType = z.ZodType> {
  input: I;
  run(deps: Deps, input: z.infer<I>): Promise<unknown>;
}

const op = <I extends z.ZodType>(input: I, run: (deps: Deps, input: z.infer<I>) => Promise<unknown>): AdminOperation<I> => ({ input, run });

export const adminOperations = {
  'account.create': op(z.object({ email: z.string() }), async (deps, i) => ({ account: await createAccount(deps.db, i) })),
  'account.password': op(z.object({ email: z.string(), password: z.string() }), async (deps, i) => {
    const account = await requireAccountByEmail(deps.db, i.email);
    return { account: { id: account.id, email: account.email }, ...(await setAccountPassword(deps, account.id, i.password)) };
  }),
  'key.create': op(
    z.object({ email: z.string(), name: z.string().min(1).max(100).default('cli'), scopes: z.array(z.enum(SCOPES)).min(1) }),
    async (deps, i) => {
      const account = await requireAccountByEmail(deps.db, i.email);
      const { key, secret } = await createPersonalKey(deps.db, { accountId: account.id, name: i.name, scopes: i.scopes });
      return { key, secret };
    },
  ),
  'key.list': op(z.object({ email: z.string() }), async (deps, i) => {
    const account = await requireAccountByEmail(deps.db, i.email);
    return { keys: await listPersonalKeys(deps.db, account.id) };
  }),
  'key.revoke': op(z.object({ email: z.string(), keyId: z.string() }), async (deps, i) => {
    const account = await requireAccountByEmail(deps.db, i.email);
    return { key: await revokePersonalKey(deps.db, account.id, i.keyId, deps.clock.now()) };
  }),
  // Function secrets are set here or in the dashboard, never through the Account API; values are never printed.
  'function.secret.set': op(z.object({ email: z.string(), function: z.string().min(1), name: z.string(), value: z.string() }), async (deps, i) => {
    const account = await requireAccountByEmail(deps.db, i.email);
    const fn = await findOwnedFunction(deps.db, account.id, i.function);
    return setFunctionSecret(deps, account.id, fn.id, i.name, i.value);
  }),
  'function.secret.list': op(z.object({ email: z.string(), function: z.string().min(1) }), async (deps, i) => {
    const account = await requireAccountByEmail(deps.db, i.email);
    const fn = await findOwnedFunction(deps.db, account.id, i.function);
    return { functionId: fn.id, secretNames: await listFunctionSecretNames(deps, account.id, fn.id) };
  }),
  'function.secret.delete': op(z.object({ email: z.string(), function: z.string().min(1), name: z.string() }), async (deps, i) => {
    const account = await requireAccountByEmail(deps.db, i.email);
    const fn = await findOwnedFunction(deps.db, account.id, i.function);
    return deleteFunctionSecret(deps, account.id, fn.id, i.name);
  }),
  'function.access': op(z.object({ email: z.string(), function: z.string().min(1), allowUserInvoke: z.boolean() }), async (deps, i) => {
    const account = await requireAccountByEmail(deps.db, i.email);
    const fn = await findOwnedFunction(deps.db, account.id, i.function);
    const view = await setAllowUserInvoke(deps, account.id, fn.id, i.allowUserInvoke);
    return { functionId: view.id, slug: view.slug, allowUserInvoke: view.allowUserInvoke };
  }),
  'site.file.put': op(z.object({ siteId: z.string(), path: z.string(), contentBase64: z.string(), contentType: z.string().optional() }), async (deps, i) => {
    const [site] = await deps.db.select().from(sites).where(eq(sites.id, i.siteId));
    if (!site) throw new AppError('not_found', `site ${i.siteId} not found`);
    const written = await writeSiteFile(
      deps,
      site,
      { path: i.path, bytes: Buffer.from(i.contentBase64, 'base64'), contentType: i.contentType },
      { kind: 'operator' },
    );
    return { site: await viewSite(deps, written) };
  }),
  'abuse.list': op(z.object({ limit: z.number().int().min(1).max(10_000).default(100), site: z.string().min(1).optional() }), async (deps, i) => ({
    reports: await listAbuseReports(deps.db, i),
  })),
  // Takedowns (docs/operator.md): each act and its audit record are one transaction; `actor` is who acts.
  'site.suspend': op(z.object({ site: z.string().trim().min(1), reason: ReasonSchema, actor: ActorSchema }), (deps, i) => suspendSite(deps, i)),
  'site.restore': op(z.object({ site: z.string().trim().min(1), reason: ReasonSchema, actor: ActorSchema }), (deps, i) => restoreSite(deps, i)),
  'account.suspend': op(z.object({ email: z.string(), reason: ReasonSchema, actor: ActorSchema }), (deps, i) => suspendAccount(deps, i)),
  'account.restore': op(z.object({ email: z.string(), reason: ReasonSchema, actor: ActorSchema }), (deps, i) => restoreAccount(deps, i)),
  'wallet.block': op(z.object({ address: WalletAddressSchema, reason: ReasonSchema, actor: ActorSchema }), (deps, i) => blockWallet(deps, i)),
  'wallet.unblock': op(z.object({ address: WalletAddressSchema, reason: ReasonSchema, actor: ActorSchema }), (deps, i) => unblockWallet(deps, i)),
  // Per-account quotas: values to override (null: back to the default); none given only shows them.
  'account.limits': op(z.object({ email: z.string(), set: LimitsChangeSchema.default({}), reason: ReasonSchema.optional(), actor: ActorSchema }), (deps, i) =>
    changeAccountLimits(deps, { email: i.email, change: i.set, actor: i.actor, reason: i.reason }),
  ),
  'audit.list': op(
    z.object({ limit: z.number().int().min(1).max(1000).default(50), target: z.string().trim().min(1).optional(), before: z.iso.datetime().optional() }),
    async (deps, i) => ({ entries: await listAudit(deps.db, { limit: i.limit, target: i.target, before: i.before ? new Date(i.before) : undefined }) }),
  ),
  'account.versions': op(
    z.object({
      email: z.string(),
      keepLast: z.number().int().min(1).optional(),
      keepDays: z.number().int().min(0).optional(),
      reset: z.boolean().default(false),
    }),
    async (deps, i) => {
      const account = await requireAccountByEmail(deps.db, i.email);
      if (i.reset) return { account: { id: account.id, email: account.email }, retention: await setRetention(deps, account.id, null), own: false };
      const now = await retentionOf(deps, account.id);
      if (i.keepLast === undefined && i.keepDays === undefined) return { account: { id: account.id, email: account.email }, retention: now };
      const retention = await setRetention(deps, account.id, { keepLast: i.keepLast ?? now.keepLast, keepDays: i.keepDays ?? now.keepDays });
      return { account: { id: account.id, email: account.email }, retention, own: true };
    },
  ),
  'x402.faucet': op(z.object({ address: z.string(), usdc: z.string() }), (deps, i) => runFaucet(deps, i.address, i.usdc)),
  // Usage counts (db/counters.ts) rewritten from the data; the answer lists what was wrong.
  'counters.recount': op(z.object({}), (deps) => recountCounters(deps.db)),
  'x402.reconcile': op(z.object({ graceMs: z.number().int().min(0).default(120_000) }), (deps, i) => reconcileOrphanedPayments(deps, i.graceMs)),
} satisfies Record<string, AdminOperation>;

export type AdminOperationName = keyof typeof adminOperations;
export const ALL_SCOPES = [...SCOPES];

export async function runAdminOperation(deps: Deps, name: string, input: unknown): Promise<unknown> {
  const operation = (adminOperations as Record<string, AdminOperation>)[name];
  if (!operation) throw new AppError('not_found', `unknown admin operation ${name}`);
  const parsed = operation.input.safeParse(input);
  if (!parsed.success) {
    // Bad input is the caller's (a 400 from the endpoint, exit 1 from the CLI), naming each field.
    const issues = parsed.error.issues.map((i) => ({ field: i.path.join('.') || '(input)', message: i.message }));
    throw new AppError('validation_failed', issues.map((i) => `${i.field}: ${i.message}`).join('; '), { issues });
  }
  return operation.run(deps, parsed.data);
}
