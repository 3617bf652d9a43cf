/** A JSON-RPC answer to one request. */
export interface RpcAnswer {
  result?: Record<string, unknown> & { _meta?: Record<string, unknown> };
  error?: { code: number; message: string; data?: unknown };
}

export interface Rpc2026Options {
  /** The per-request client capabilities (`_meta["io.modelcontextprotocol/clientCapabilities"]`); none by default. */
  capabilities?: Record<string, unknown>;
  /** Sent as `Authorization: Bearer …`. */
  key?: string;
  /** A retried call's answers to `input_required`: `inputResponses` and the `requestState` echoed. */
  answer?: { inputResponses: unknown; requestState: unknown };
}

/** The body field `Mcp-Name` mirrors, by method (the spec's standard headers, the Tasks extension's rows). */
const NAMED_BY: Record<string, string> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId',
};

/**
 * One raw MCP 2026-07-28 request over streamable HTTP, framed as the revision says: the per-request
 * `_meta` envelope (protocol version, client capabilities, client info) and the standard headers
 * (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`). The answer as JSON-RPC, also when it came as
 * an event stream (its last data line), with the HTTP status and body text.
 */
export async function rpc2026(
  url: string,
  method: string,
  params: Record<string, unknown> & { _meta?: Record<string, unknown> },
  options: Rpc2026Options = {},
): Promise<RpcAnswer & { status: number; text: string }> {
  const named = NAMED_BY[method] ? params[NAMED_BY[method]] : undefined;
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(typeof named === 'string' ? { 'mcp-name': named } : {}),
      ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method,
      params: {
        ...params,
        ...options.answer,
        _meta: {
          ...params._meta,
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': options.capabilities ?? {},
          'io.modelcontextprotocol/clientInfo': { name: 'raw-2026', version: '1.0.0' },
        },
      },
    }),
  });
  const text = await res.text();
  const json = res.headers.get('content-type')?.includes('text/event-stream')
    ? (text
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .pop()
        ?.slice(6) ?? '{}')
    : text;
  let answer: RpcAnswer = {};
  try {
    answer = JSON.parse(json) as RpcAnswer;
  } catch {
    // Not JSON (a refusal before any message): the status and text say what it was.
  }
  return { ...answer, status: res.status, text };
}
