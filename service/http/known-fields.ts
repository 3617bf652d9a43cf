import { z } from 'zod';
import { AppError } from './app-error.js';

/**
 * The top-level fields a JSON body's schema declares, when it is an object that drops what it does
 * not declare (zod's default); undefined otherwise (a schema that keeps unknown keys, or not an
 * object): such a body is not checked here.
 */
export function declaredFields(schema: unknown): string[] | undefined {
  if (!(schema instanceof z.ZodObject)) return undefined;
  const catchall = schema.def.catchall;
  if (catchall !== undefined && !(catchall instanceof z.ZodNever)) return undefined;
  return Object.keys(schema.shape);
}

/**
 * Refuses a body naming a field its schema does not declare. zod would drop it silently, and the call
 * would then do something other than what was asked (`{"name": "shop"}` where the field is `slug`
 * published under a random name, and an Agent API call was paid for it): a 400 that names the
 * unknown fields and the declared ones, before anything is done or paid.
 */
export function refuseUnknownFields(body: unknown, fields: readonly string[]): void {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return;
  const unknown = Object.keys(body).filter((k) => !fields.includes(k));
  if (unknown.length === 0) return;
  const named = `${unknown.length === 1 ? 'unknown field' : 'unknown fields'} ${unknown.join(', ')}`;
  const declared = fields.length > 0 ? `its fields are ${fields.join(', ')}` : 'it takes no fields';
  throw new AppError('validation_failed', `invalid body: ${named}; ${declared}. Nothing was done.`, {
    issues: unknown.map((field) => ({ field, message: 'unknown field' })),
  });
}
