import { z } from 'zod';

/** Fields a value names that its schema does not declare, in one object of it. */
export interface Undeclared {
  /** The path of the object holding them ('' for the value itself), e.g. `files.0`. */
  at: string;
  unknown: string[];
  /** The fields that object's schema declares. */
  declared: string[];
}

/**
 * Whether a schema is checked for fields it does not declare: an object that drops what it does not
 * declare (zod's default). A schema that keeps unknown keys, or is not an object, is not.
 */
export function checksDeclaredFields(schema: unknown): schema is z.ZodObject {
  return schema instanceof z.ZodObject && dropsUnknownKeys(schema);
}

/**
 * The fields `value` names that `schema` does not declare, at any depth through objects and arrays
 * (`files.0.encodign`): what zod would drop silently. The service refuses them in request bodies
 * (service/http/known-fields.ts), the MCP server in tool arguments (mcp/register.ts). Unions and
 * records are not looked into.
 */
export function undeclaredFields(value: unknown, schema: z.ZodType): Undeclared[] {
  const found: Undeclared[] = [];
  collect(value, schema, '', found);
  return found;
}

/** `at` and `key` as one field path. */
export const fieldPath = (at: string, key: string) => (at ? `${at}.${key}` : key);

function collect(value: unknown, schema: z.ZodType, at: string, out: Undeclared[]): void {
  const s = unwrapped(schema);
  if (s instanceof z.ZodArray) {
    if (!Array.isArray(value)) return;
    for (const [i, item] of value.entries()) collect(item, s.element as z.ZodType, fieldPath(at, String(i)), out);
    return;
  }
  if (!(s instanceof z.ZodObject) || !dropsUnknownKeys(s) || value === null || typeof value !== 'object' || Array.isArray(value)) return;
  const shape = s.shape as Record<string, z.ZodType>;
  const declared = Object.keys(shape);
  const unknown = Object.keys(value).filter((k) => !Object.hasOwn(shape, k));
  if (unknown.length > 0) out.push({ at, unknown, declared });
  for (const k of declared) if (Object.hasOwn(value, k)) collect((value as Record<string, unknown>)[k], shape[k]!, fieldPath(at, k), out);
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
