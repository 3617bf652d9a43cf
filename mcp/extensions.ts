import { CLIENT_CAPABILITIES_META_KEY } from '@modelcontextprotocol/server';

/**
 * Whether this request advertised the extension `id` in its per-request client capabilities (the
 * MCP 2026-07-28 `_meta` envelope; a 2025-era request never does). The spec binds an extension to
 * each request, not to a session: a server must not use it toward a request that did not name it.
 */
export function advertisesExtension(extra: unknown, id: string): boolean {
  const envelope = (extra as { mcpReq?: { envelope?: Record<string, { extensions?: Record<string, unknown> } | undefined> } } | undefined)?.mcpReq?.envelope;
  return envelope?.[CLIENT_CAPABILITIES_META_KEY]?.extensions?.[id] !== undefined;
}
