import { z } from 'zod';

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
