import type { z } from 'zod';
import { fieldPath, undeclaredFields } from '../../shared/undeclared-fields.js';
import { AppError } from '../kernel/app-error.js';

/**
 * Refuses a body naming a field its schema does not declare, at any depth through objects and arrays
 * (shared/undeclared-fields.ts). zod would drop it silently, and the call would then do something
 * other than what was asked: `{"name": "shop"}` where the field is `slug` published under a random
 * name (and an Agent API call was paid for it); a file's misspelt `encoding` stored its base64 text
 * as the file. A 400 names each unknown field and the fields declared beside it, before anything is
 * done or paid.
 */
export function refuseUndeclaredFields(body: unknown, schema: z.ZodType): void {
  const found = undeclaredFields(body, schema);
  if (found.length === 0) return;
  const parts = found.map(({ at, unknown, declared }) => {
    const named = `${unknown.length === 1 ? 'unknown field' : 'unknown fields'} ${unknown.map((k) => fieldPath(at, k)).join(', ')}`;
    const fields = declared.length === 0 ? 'none' : declared.join(', ');
    return `${named}; ${at ? `the fields of ${at} are` : 'its fields are'} ${fields}`;
  });
  throw new AppError('validation_failed', `invalid body: ${parts.join('; ')}. Nothing was done.`, {
    issues: found.flatMap(({ at, unknown }) => unknown.map((k) => ({ field: fieldPath(at, k), message: 'unknown field' }))),
  });
}
