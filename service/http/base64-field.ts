import { invalidField } from '../kernel/app-error.js';

/**
 * A request field holding base64 (an inline file's content): its bytes, or a 400 naming the field
 * when it is not well-formed (a typo would otherwise store or convert garbage). Whitespace is allowed.
 */
export function decodeBase64Field(field: string, content: string): Buffer {
  const compact = content.replace(/\s+/g, '');
  if (compact.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(compact)) throw invalidField(field, 'not valid base64');
  return Buffer.from(compact, 'base64');
}
