import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'; // Crockford base32, lower case

/** How every id of `kind` starts: `site` → `site_`. */
export const idPrefix = (kind: string): string => `${kind}_`;

/** A random identifier with a readable prefix: `site_3k9x…` (80 bits of entropy). */
export function newId(kind: string, length = 16): string {
  const bytes = randomBytes(length);
  let out = '';
  for (let i = 0; i < length; i++) out += ALPHABET[bytes[i]! & 31];
  return `${idPrefix(kind)}${out}`;
}
