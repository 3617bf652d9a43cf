import fs from 'node:fs';
import type { z } from 'zod';

/**
 * A wallet file read whole and checked against its schema: `empty` when it does not exist yet,
 * `invalid()` thrown when it does not parse (a wallet file we cannot read must stop payments,
 * never start over).
 */
export function readWalletFile<T>(file: string, schema: z.ZodType<T>, empty: T, invalid: () => Error): T {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return empty;
    throw e;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    raw = undefined;
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw invalid();
  return parsed.data;
}
