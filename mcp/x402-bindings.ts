import type { CallToolResult, McpServer } from '@modelcontextprotocol/server';
import type { McpContext } from './context.js';
import { advertisesExtension } from './extensions.js';
import { X402_META } from './failures.js';
import type { RequestHandler } from './register.js';
import { paymentRequiredOf } from './results.js';

/**
 * How a hosted endpoint says "payment required" (x402 MCP transport, x402-foundation/x402
 * `specs/transports-v2/mcp.md`). Every tool builds the tool-result binding (mcp/results.ts); here,
 * per call, the answer takes the form the caller speaks:
 *
 * - **the extension binding** `org.x402/payment` (MCP 2026-07-28): a request that advertises it in its
 *   per-request client capabilities gets `resultType: "payment_required"` with `paymentRequired` (the
 *   x402 v2 PaymentRequired) and, after a refused payment, `_meta["x402/payment-response"]`. The spec
 *   makes it a must when both sides support it, and forbids it for any request that did not advertise it;
 * - **the JSON-RPC error form** of the earlier draft (mcp-go-x402 and its kin), asked for with
 *   `?x402_errors=jsonrpc`: a JSON-RPC error 402 with the PaymentRequired in `error.data`;
 * - otherwise **the tool-result binding** as built (on 2026-07-28 the SDK adds `resultType: "complete"`).
 *
 * Whatever the form, the paid retry is the same (`_meta["x402/payment"]`) and checked by the same code:
 * the binding changes how the question is put, never what is charged.
 */

/** The extension's identifier, in `capabilities.extensions` of both sides. */
export const X402_EXTENSION = 'org.x402/payment';

/** What a paying face adds to its capabilities (listed in `server/discover`). */
export const X402_EXTENSION_CAPABILITY = { [X402_EXTENSION]: {} } as const;

export function installX402Bindings(server: McpServer, ctx: McpContext): void {
  // The SDK keeps its tools/call handler in Protocol's handler map (see installToolCallHints).
  const handlers = (server.server as unknown as { _requestHandlers: Map<string, RequestHandler> })._requestHandlers;
  const inner = handlers.get('tools/call');
  if (!inner) return;
  handlers.set('tools/call', async (request, extra) => {
    const result = (await inner(request, extra)) as CallToolResult;
    const required = paymentRequiredOf(result);
    if (!required) return result;
    if (advertisesExtension(extra, X402_EXTENSION)) {
      const settled = result._meta?.[X402_META.paymentResponse];
      return { resultType: 'payment_required', paymentRequired: required, ...(settled ? { _meta: { [X402_META.paymentResponse]: settled } } : {}) };
    }
    if (ctx.hosted?.x402Errors !== 'jsonrpc') return result;
    const wrapped = JSON.parse(result.content[0]?.type === 'text' ? result.content[0].text : '{}')[X402_META.error] as { message?: string } | undefined;
    // Protocol turns a thrown error's code, message and data into the JSON-RPC error as they are.
    throw Object.assign(new Error(wrapped?.message ?? 'payment required'), { code: 402, data: required });
  });
}
