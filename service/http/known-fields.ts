import { z } from 'zod';
import { AppError } from './app-error.js';

/**
 * Whether a JSON body's schema is checked for fields it does not declare: an object that drops what
 * it does not declare (zod's default). A schema that keeps unknown keys, or is not an object, is not.
 */
export function checksDeclaredFields(schema: unknown): schema is z.ZodObject {
  return schema instanceof z.ZodObject && dropsUnknownKeys(schema);
}

/**
 * Refuses a body naming a field its schema does not declare, at any depth through objects and arrays
 * (`files.0.encodign`). zod would drop it silently, and the call would then do something other than
 * what was asked: `{"name": "shop"}` where the field is `slug` published under a random name (and an
 * Agent API call was paid for it); a file's misspelt `encoding` stored its base64 text as the file. A
 * 400 names each unknown field and the fields declared beside it, before anything is done or paid.
 */
export function refuseUndeclaredFields(body: unknown, schema: z.ZodType): void {
  const found: Undeclared[] = [];
  collect(body, schema, '', found);
  if (found.length === 0) return;
  const parts = found.map(({ at, unknown, declared }) => {
    const named = `${unknown.length === 1 ? 'unknown field' : 'unknown fields'} ${unknown.map((k) => join(at, k)).join(', ')}`;
    const fields = declared.length === 0 ? 'none' : declared.join(', ');
    return `${named}; ${at ? `the fields of ${at} are` : 'its fields are'} ${fields}`;
  });
  throw new AppError('validation_failed', `invalid body: ${parts.join('; ')}. Nothing was done.`, {
    issues: found.flatMap(({ at, unknown }) => unknown.map((k) => ({ field: join(at, k), message: 'unknown field' }))),
  });
}

interface Undeclared {
  /** The path of the object holding the unknown fields ('' for the body itself). */
  at: string;
  unknown: string[];
  declared: string[];
}

function collect(value: unknown, schema: z.ZodType, at: string, out: Undeclared[]): void {
  const s = unwrapped(schema);
  if (s instanceof z.ZodArray) {
    if (!Array.isArray(value)) return;
    for (const [i, item] of value.entries()) collect(item, s.element as z.ZodType, join(at, String(i)), out);
    return;
  }
  if (!(s instanceof z.ZodObject) || !dropsUnknownKeys(s) || value === null || typeof value !== 'object' || Array.isArray(value)) return;
  const shape = s.shape as Record<string, z.ZodType>;
  const declared = Object.keys(shape);
  const unknown = Object.keys(value).filter((k) => !Object.hasOwn(shape, k));
  if (unknown.length > 0) out.push({ at, unknown, declared });
  for (const k of declared) if (Object.hasOwn(value, k)) collect((value as Record<string, unknown>)[k], shape[k]!, join(at, k), out);
}

/** The schema inside optional, nullable, default, catch, readonly and pipe wrappers (a pipe's input side). */
function unwrapped(schema: z.ZodType): z.ZodType {
  let s = schema;
  for (;;) {
    if (
      s instanceof z.ZodOptional ||
      s instanceof z.ZodNullable ||
      s instanceof z.ZodDefault ||
      s instanceof z.ZodPrefault ||
      s instanceof z.ZodCatch ||
      s instanceof z.ZodReadonly
    )
      s = s.def.innerType as z.ZodType;
    else if (s instanceof z.ZodPipe) s = s.def.in as z.ZodType;
    else return s;
  }
}

function dropsUnknownKeys(schema: z.ZodObject): boolean {
  const catchall = schema.def.catchall;
  return catchall === undefined || catchall instanceof z.ZodNever;
}

const join = (at: string, key: string) => (at ? `${at}.${key}` : key);
