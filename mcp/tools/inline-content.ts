/**
 * Files sent inside one Account API request (svc-mcp acting for the account without a wallet:
 * deploy_site, upload_dataset): the JSON a request may carry and how bytes are written in it.
 */

/** JSON carried by one request: under the service's default body limit (1 MiB, SVC_MAX_JSON_BODY_BYTES), with room for the rest of the body. */
export const REQUEST_BUDGET = 960 * 1024;

/** Bytes as the Account API takes them inline: text as it is, other bytes in base64 (what does not survive UTF-8 unchanged). */
export function inlineContent(bytes: Buffer): { content: string; encoding?: 'base64' } {
  const text = bytes.toString('utf8');
  return Buffer.from(text, 'utf8').equals(bytes) ? { content: text } : { content: bytes.toString('base64'), encoding: 'base64' };
}

/** Bytes of `value` as JSON. */
export const jsonSize = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');
