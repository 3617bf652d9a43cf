import { and, asc, count, desc, eq, sql } from 'drizzle-orm';
import type { PgUpdateSetSource } from 'drizzle-orm/pg-core';
import { SECRET_NAME_PATTERN, type CreateFunctionBody, type FunctionView } from '../../shared/account-api/functions.js';
import type { DbOrTx } from '../db/client.js';
import { countOf, isUniqueViolation, onlyRow } from '../db/client.js';
import { idPrefix, newId } from '../kernel/ids.js';
import { functions, functionSecrets } from '../db/schema/index.js';
import type { Deps } from '../deps.js';
import { AppError, notFound } from '../kernel/app-error.js';
import { checkModuleSyntax } from './sandbox.js';
import { accountQuotas } from '../accounts/quotas.js';
import { readCounter } from '../db/counters.js';

/**
 * Functions: the domain layer behind the Account API routes, the CLI and the dashboard. Every
 * operation takes the owning account and loads the Function with the owner in the WHERE clause: another
 * account's Function is a 404, indistinguishable from none.
 */

export type FunctionRow = typeof functions.$inferSelect;

/** Who is changing a Function. The spec refuses draft/publish through the Account API once secrets exist. */
export type ChangeChannel = 'account_api' | 'dashboard';

export const MAX_SECRETS_PER_FUNCTION = 20;
export const MAX_SECRET_VALUE_BYTES = 4096;

export function toFunctionView(row: FunctionRow, secretNames: string[]): FunctionView {
  return {
    id: row.id,
    name: row.name,
    slug: row.slug,
    code: row.draftCode,
    draftVersion: row.draftVersion,
    status: row.state === 'cleanup_pending' ? 'cleanup_pending' : row.liveCode !== null ? 'live' : 'draft',
    liveVersion: row.liveVersion,
    hasUnpublishedChanges: row.liveVersion !== row.draftVersion,
    publishedAt: row.publishedAt?.toISOString() ?? null,
    allowUserInvoke: row.allowUserInvoke,
    secretNames,
    invokePath: `/api/v1/functions/invoke/${row.slug}`,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

export async function viewFunction(deps: Deps, row: FunctionRow, db: DbOrTx = deps.db): Promise<FunctionView> {
  return toFunctionView(row, await secretNamesOf(db, row.id));
}

async function secretNamesOf(db: DbOrTx, functionId: string): Promise<string[]> {
  const rows = await db
    .select({ name: functionSecrets.name })
    .from(functionSecrets)
    .where(eq(functionSecrets.functionId, functionId))
    .orderBy(asc(functionSecrets.name));
  return rows.map((r) => r.name);
}

/** The Function `functionId` of `accountId`, or 404. */
export async function getOwnedFunction(db: DbOrTx, accountId: string, functionId: string): Promise<FunctionRow> {
  const [row] = await db
    .select()
    .from(functions)
    .where(and(eq(functions.id, functionId), eq(functions.accountId, accountId)));
  if (!row) throw notFound(`function ${functionId}`);
  return row;
}

/**
 * By id (`fn_…`) or by slug, owner in the WHERE clause: a slug (letters, digits, hyphens) never holds
 * the id's `_`, so the prefix chooses one indexed equality.
 */
export async function findOwnedFunction(db: DbOrTx, accountId: string, ref: string): Promise<FunctionRow> {
  const [row] = await db
    .select()
    .from(functions)
    .where(and(eq(functions.accountId, accountId), isFunctionId(ref) ? eq(functions.id, ref) : eq(functions.slug, ref.trim().toLowerCase())));
  if (!row) throw notFound(`function ${ref}`);
  return row;
}

/** The id of the account's Function named by id or slug (`ref`); an id is taken as it is (the operation checks the owner). */
export async function ownedFunctionId(db: DbOrTx, accountId: string, ref: string): Promise<string> {
  return isFunctionId(ref) ? ref : (await findOwnedFunction(db, accountId, ref)).id;
}

const FUNCTION_ID_KIND = 'fn';
const isFunctionId = (ref: string) => ref.startsWith(idPrefix(FUNCTION_ID_KIND));

export async function listOwnedFunctions(
  deps: Deps,
  accountId: string,
  page: { limit: number; offset: number },
): Promise<{ functions: FunctionView[]; total: number }> {
  const n = await readCounter(deps.db, `acct:${accountId}`, 'functions');
  const rows = await deps.db
    .select()
    .from(functions)
    .where(eq(functions.accountId, accountId))
    .orderBy(desc(functions.createdAt), desc(functions.id))
    .limit(page.limit)
    .offset(page.offset);
  const secrets = rows.length
    ? await deps.db
        .select({ functionId: functionSecrets.functionId, name: functionSecrets.name })
        .from(functionSecrets)
        .innerJoin(functions, eq(functions.id, functionSecrets.functionId))
        .where(eq(functions.accountId, accountId))
        .orderBy(asc(functionSecrets.name))
    : [];
  const byFunction = new Map<string, string[]>();
  for (const s of secrets) byFunction.set(s.functionId, [...(byFunction.get(s.functionId) ?? []), s.name]);
  return { functions: rows.map((r) => toFunctionView(r, byFunction.get(r.id) ?? [])), total: Number(n) };
}

/** Refuses code that is too large or does not compile as an ES module (nothing is run). */
async function assertValidCode(deps: Deps, code: string): Promise<void> {
  const bytes = Buffer.byteLength(code, 'utf8');
  const max = deps.config.functions.maxCodeBytes;
  if (bytes > max) throw new AppError('payload_too_large', `code is ${bytes} bytes; the limit is ${max}`, { field: 'code', bytes, maxBytes: max });
  const error = await checkModuleSyntax(code);
  if (error) {
    throw new AppError('validation_failed', `code does not compile: ${error}`, { issues: [{ field: 'code', message: error }] });
  }
}

export async function createFunction(deps: Deps, accountId: string, input: CreateFunctionBody): Promise<FunctionView> {
  await assertValidCode(deps, input.code);
  const max = (await accountQuotas(deps.config, deps.db, accountId)).functions;
  try {
    return await deps.db.transaction(async (tx) => {
      // Serialise creates of one account so two concurrent requests cannot both pass the count.
      await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`svc-fn-create:${accountId}`}))`);
      const n = countOf(await tx.select({ n: count() }).from(functions).where(eq(functions.accountId, accountId)));
      if (max > 0 && Number(n) >= max) {
        throw new AppError('quota_exceeded', `this account already has ${n} functions; the limit is ${max}`, { limit: max });
      }
      const now = deps.clock.now();
      const row = onlyRow(
        await tx
          .insert(functions)
          .values({
            id: newId(FUNCTION_ID_KIND),
            accountId,
            name: input.name,
            slug: input.slug,
            draftCode: input.code,
            allowUserInvoke: input.allowUserInvoke,
            createdAt: now,
            updatedAt: now,
          })
          .returning(),
        'insert the function',
      );
      return toFunctionView(row, []);
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw new AppError('slug_taken', `the function slug "${input.slug}" is taken; choose another`, { field: 'slug' });
    throw e;
  }
}

const noSecrets = sql`not exists (select 1 from ${functionSecrets} where ${functionSecrets.functionId} = ${functions.id})`;

function secretsRefusal(row: FunctionRow): AppError {
  return new AppError(
    'function_has_secrets',
    `function ${row.id} has configured secrets, so its draft and publish can't be changed through the Account API; use the dashboard`,
    { functionId: row.id },
  );
}

/** PUT …/draft. Through the Account API it is refused (409) for a Function with secrets, atomically. */
export async function replaceDraft(
  deps: Deps,
  accountId: string,
  functionId: string,
  code: string,
  channel: ChangeChannel = 'account_api',
): Promise<FunctionView> {
  const current = await getOwnedFunction(deps.db, accountId, functionId);
  if (current.state !== 'active') throw notFound(`function ${functionId}`);
  await assertValidCode(deps, code);
  return changeActiveFunction(deps, accountId, functionId, channel, {
    draftCode: code,
    draftVersion: sql`${functions.draftVersion} + 1`,
    updatedAt: deps.clock.now(),
  });
}

/**
 * Applies `set` to an active function the account owns. Through the Account API the secrets rule
 * is part of the UPDATE itself, so it cannot be raced; a refused change says why (404 or 409).
 */
async function changeActiveFunction(
  deps: Deps,
  accountId: string,
  functionId: string,
  channel: ChangeChannel,
  set: PgUpdateSetSource<typeof functions>,
): Promise<FunctionView> {
  const [row] = await deps.db
    .update(functions)
    .set(set)
    .where(
      and(eq(functions.id, functionId), eq(functions.accountId, accountId), eq(functions.state, 'active'), channel === 'account_api' ? noSecrets : undefined),
    )
    .returning();
  if (!row) {
    const again = await getOwnedFunction(deps.db, accountId, functionId);
    if (again.state !== 'active') throw notFound(`function ${functionId}`);
    throw secretsRefusal(again);
  }
  return viewFunction(deps, row);
}

/** POST …/publish: the current draft becomes live. Same secrets rule as the draft. */
export async function publishFunction(deps: Deps, accountId: string, functionId: string, channel: ChangeChannel = 'account_api'): Promise<FunctionView> {
  const current = await getOwnedFunction(deps.db, accountId, functionId);
  if (current.state !== 'active') throw notFound(`function ${functionId}`);
  const now = deps.clock.now();
  return changeActiveFunction(deps, accountId, functionId, channel, {
    liveCode: sql`${functions.draftCode}`,
    liveVersion: sql`${functions.draftVersion}`,
    publishedAt: now,
    updatedAt: now,
  });
}

/**
 * Deletes a Function with its secrets and every caller's memory. It is first marked cleanup_pending
 * (invoke answers 404 from then on), then removed; the slug is free again afterwards.
 */
export async function deleteFunction(deps: Deps, accountId: string, functionId: string): Promise<{ id: string; slug: string }> {
  const row = await getOwnedFunction(deps.db, accountId, functionId);
  await deps.db
    .update(functions)
    .set({ state: 'cleanup_pending', updatedAt: deps.clock.now() })
    .where(and(eq(functions.id, row.id), eq(functions.accountId, accountId)));
  // Memory rows and secrets go with the row (ON DELETE CASCADE).
  await deps.db.delete(functions).where(and(eq(functions.id, row.id), eq(functions.accountId, accountId)));
  return { id: row.id, slug: row.slug };
}

/** The owner's svc-user access switch (dashboard, CLI `svc-agent-host function access`, `PUT /api/v1/functions/{id}/access`). */
export async function setAllowUserInvoke(deps: Deps, accountId: string, functionId: string, allow: boolean): Promise<FunctionView> {
  const row = await getOwnedFunction(deps.db, accountId, functionId);
  const [updated] = await deps.db
    .update(functions)
    .set({ allowUserInvoke: allow, updatedAt: deps.clock.now() })
    .where(and(eq(functions.id, row.id), eq(functions.accountId, accountId)))
    .returning();
  if (!updated) throw notFound(`function ${functionId}`);
  return viewFunction(deps, updated);
}

/** Creates or replaces a secret. The value is stored for the runtime and never returned by any API. */
export async function setFunctionSecret(
  deps: Deps,
  accountId: string,
  functionId: string,
  name: string,
  value: string,
): Promise<{ functionId: string; name: string; secretNames: string[] }> {
  if (!SECRET_NAME_PATTERN.test(name)) {
    throw new AppError('validation_failed', 'secret names use A–Z, 0–9 and _, start with a letter or _, at most 64 characters', {
      issues: [{ field: 'name', message: 'invalid secret name' }],
    });
  }
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes > MAX_SECRET_VALUE_BYTES) {
    throw new AppError('payload_too_large', `secret values are at most ${MAX_SECRET_VALUE_BYTES} bytes`, { field: 'value', maxBytes: MAX_SECRET_VALUE_BYTES });
  }
  const row = await getOwnedFunction(deps.db, accountId, functionId);
  await deps.db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`svc-fn-secrets:${row.id}`}))`);
    const names = await secretNamesOf(tx, row.id);
    if (!names.includes(name) && names.length >= MAX_SECRETS_PER_FUNCTION) {
      throw new AppError('quota_exceeded', `a function has at most ${MAX_SECRETS_PER_FUNCTION} secrets`, { limit: MAX_SECRETS_PER_FUNCTION });
    }
    const now = deps.clock.now();
    await tx
      .insert(functionSecrets)
      .values({ functionId: row.id, name, value, updatedAt: now })
      .onConflictDoUpdate({ target: [functionSecrets.functionId, functionSecrets.name], set: { value, updatedAt: now } });
  });
  return { functionId: row.id, name, secretNames: await secretNamesOf(deps.db, row.id) };
}

export async function deleteFunctionSecret(
  deps: Deps,
  accountId: string,
  functionId: string,
  name: string,
): Promise<{ functionId: string; name: string; deleted: boolean; secretNames: string[] }> {
  const row = await getOwnedFunction(deps.db, accountId, functionId);
  const gone = await deps.db
    .delete(functionSecrets)
    .where(and(eq(functionSecrets.functionId, row.id), eq(functionSecrets.name, name)))
    .returning({ name: functionSecrets.name });
  return { functionId: row.id, name, deleted: gone.length > 0, secretNames: await secretNamesOf(deps.db, row.id) };
}

export async function listFunctionSecretNames(deps: Deps, accountId: string, functionId: string): Promise<string[]> {
  const row = await getOwnedFunction(deps.db, accountId, functionId);
  return secretNamesOf(deps.db, row.id);
}

/** Secret values for one invocation (runtime only). */
export async function loadSecretValues(db: DbOrTx, functionId: string): Promise<Record<string, string>> {
  const rows = await db
    .select({ name: functionSecrets.name, value: functionSecrets.value })
    .from(functionSecrets)
    .where(eq(functionSecrets.functionId, functionId));
  return Object.fromEntries(rows.map((r) => [r.name, r.value]));
}
