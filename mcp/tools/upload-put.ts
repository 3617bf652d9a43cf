import type { McpContext } from '../context.js';
import { ToolFailure } from '../results.js';

/** How many files go up at once. */
const UPLOAD_CONCURRENCY = 4;

/**
 * PUTs bytes to an upload URL (the service's, or a bucket's presigned one) and returns its answer.
 * A connection that fails and an answer that is not 2xx are a ToolFailure: `failed` says it with the
 * reason ("(connect ECONNREFUSED …)", "with HTTP 403 (…)").
 */
export async function putBytes(
  ctx: McpContext,
  url: string,
  init: { method?: string; headers: Record<string, string>; body: Uint8Array<ArrayBuffer> },
  failed: (reason: string) => string,
): Promise<Response> {
  const res = await ctx.fetch(url, { method: init.method ?? 'PUT', headers: init.headers, body: init.body }).catch((e: Error) => {
    throw new ToolFailure(failed(`(${e.message})`));
  });
  if (!res.ok) throw new ToolFailure(failed(`with HTTP ${res.status} (${(await res.text()).slice(0, 200)})`));
  return res;
}

/** `put` for each item, a few at a time; after the first failure no other starts, and it is thrown. */
export async function putInTurns<T>(items: T[], put: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (next < items.length && !failed) {
      try {
        await put(items[next++]!);
      } catch (e) {
        failed = true;
        throw e;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(UPLOAD_CONCURRENCY, items.length) }, worker));
}
