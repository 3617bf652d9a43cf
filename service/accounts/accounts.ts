import { svcCommand } from '../kernel/cli-command.js';
import { eq } from 'drizzle-orm';
import { z } from 'zod';
import type { DbOrTx } from '../db/client.js';
import { isUniqueViolation, onlyRow } from '../db/client.js';
import { newId } from '../kernel/ids.js';
import { accounts } from '../db/schema/index.js';
import { AppError } from '../kernel/app-error.js';

export const EmailSchema = z
  .string()
  .trim()
  .toLowerCase()
  .max(254)
  .regex(/^[^\s@]+@[^\s@]+\.[^\s@]+$/, 'not an email address');

function parseEmail(email: string): string {
  const r = EmailSchema.safeParse(email);
  if (!r.success) throw new AppError('validation_failed', `email: ${JSON.stringify(email)} is not an email address`, { field: 'email' });
  return r.data;
}

export interface Account {
  id: string;
  email: string;
  createdAt: string;
}

function toAccount(row: typeof accounts.$inferSelect): Account {
  return { id: row.id, email: row.email, createdAt: row.createdAt.toISOString() };
}

export async function createAccount(db: DbOrTx, input: { email: string; passwordHash?: string }): Promise<Account> {
  const email = parseEmail(input.email);
  try {
    const row = onlyRow(
      await db
        .insert(accounts)
        .values({ id: newId('acct'), email, passwordHash: input.passwordHash ?? null })
        .returning(),
      'insert the account',
    );
    return toAccount(row);
  } catch (e) {
    if (isUniqueViolation(e)) throw new AppError('conflict', `an account with email ${email} already exists`);
    throw e;
  }
}

/** The account with this email, its password hash, and the operator's reason when it is suspended (else null). */
export async function findAccountByEmail(db: DbOrTx, email: string): Promise<(Account & { passwordHash: string | null; suspension: string | null }) | null> {
  const [row] = await db
    .select()
    .from(accounts)
    .where(eq(accounts.email, parseEmail(email)));
  return row ? { ...toAccount(row), passwordHash: row.passwordHash, suspension: row.suspendedAt ? (row.suspensionReason ?? '') : null } : null;
}

export async function requireAccountByEmail(db: DbOrTx, email: string): Promise<Account> {
  const found = await findAccountByEmail(db, email);
  if (!found) throw new AppError('not_found', `no account with email ${email}; create it first: ${svcCommand(`account create --email ${email}`)}`);
  return found;
}
