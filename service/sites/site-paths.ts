import { z } from 'zod';
import { invalidField } from '../kernel/app-error.js';

/**
 * A file path inside a site: relative, `/`-separated, no `.`/`..` segments, no backslashes or
 * control characters. Leading `./` or `/` is tolerated and removed, so "/css/a.css" = "css/a.css".
 */
export const SitePathSchema = z
  .string()
  .max(512)
  .transform((p) => p.replace(/^(\.\/|\/)+/, ''))
  .refine((p) => p.length > 0, 'path is empty')
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  .refine((p) => !/[\\\u0000-\u001f\u007f]/.test(p), 'path has a backslash or control character')
  .refine((p) => p.split('/').every((seg) => seg !== '' && seg !== '.' && seg !== '..'), 'path has an empty, "." or ".." segment');

export function normaliseSitePath(p: string): string {
  return SitePathSchema.parse(p);
}

/**
 * A path listed in a request (`files.N.path`, `delete.N`), checked and normalised, and added to
 * `seen`; refused naming `field` when it is not a site path, when `reserved` says why it cannot be
 * listed, or when it is in `seen` already (`css/a.css` and `/css/a.css` are one path).
 */
export function listedSitePath(path: string, field: string, seen: Set<string>, reserved: Readonly<Record<string, string>> = {}): string {
  const parsed = SitePathSchema.safeParse(path);
  if (!parsed.success) throw invalidField(field, parsed.error.issues[0]?.message ?? 'invalid path');
  const why = reserved[parsed.data];
  if (why) throw invalidField(field, why);
  if (seen.has(parsed.data)) throw invalidField(field, `${parsed.data} is listed twice`);
  seen.add(parsed.data);
  return parsed.data;
}
