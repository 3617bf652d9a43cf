import type { McpContext } from './context.js';

/**
 * The write keys of Tables this process's own wallet created: `create_table_api` answers the key
 * once, and the table tools then use it when the call names none, so an agent that creates a Table
 * and fills it never has to carry the secret from one call to the next. Local servers only (svc-mcp,
 * the loopback endpoint of `svc serve`): the hosted endpoint serves many callers, keeps nothing
 * between requests, and its signed-in callers' own key opens their Tables anyway. Kept in memory:
 * a restarted server asks for `writeKey` (or SVC_TABLE_WRITE_KEY) again.
 */
const keyOf = (appName: string, table: string) => `${appName.toLowerCase()}/${table.toLowerCase()}`;

/** The app and Table a Table API address names (`…/api/data/<appName>/<table>`): what the table tools take. */
export function tableAddress(url: string): { appName: string; table: string } | null {
  const m = /\/api\/data\/([^/?#]+)\/([^/?#]+)/.exec(url);
  return m ? { appName: decodeURIComponent(m[1]!), table: decodeURIComponent(m[2]!) } : null;
}

/** Learns the write key from an Agent API answer that holds a new Table (`table.writeKey`, `table.pathUrl`). */
export function rememberTableWriteKey(ctx: McpContext, answer: Record<string, unknown>): void {
  if (ctx.hosted) return;
  const table = answer.table as { writeKey?: unknown; pathUrl?: unknown } | undefined;
  if (typeof table?.writeKey !== 'string' || typeof table.pathUrl !== 'string') return;
  const at = tableAddress(table.pathUrl);
  if (at) ctx.tableWriteKeys.set(keyOf(at.appName, at.table), table.writeKey);
}

/** The write key this server learned for a Table, if any. */
export function knownTableWriteKey(ctx: McpContext, appName: string, table: string): string | undefined {
  return ctx.hosted ? undefined : ctx.tableWriteKeys.get(keyOf(appName, table));
}
