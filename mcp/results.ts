import type { CallToolResult } from '@modelcontextprotocol/server';
import { isWalletError } from '../wallet/errors.js';
import { PaymentRequiredFailure, ToolFailure, X402_META } from './failures.js';

export { ToolFailure };

/** Structured content plus its compact JSON as text (for clients that read only text), after an optional one-line summary. */
export function okResult(structured: Record<string, unknown>, summary?: string, meta?: Record<string, unknown>): CallToolResult {
  const text = JSON.stringify(structured);
  return { content: [{ type: 'text', text: summary ? `${summary}\n${text}` : text }], structuredContent: structured, ...(meta ? { _meta: meta } : {}) };
}

/**
 * x402 MCP transport: a paid tool called without (a valid) payment. Every client convention finds the
 * PaymentRequired object where it looks: the transport spec's clients in `structuredContent` and, as
 * text, in the `x402/error` wrapper; Cloudflare's `withX402Client` (agents/x402) in
 * `_meta["x402/error"]`, which is all it reads. A refused payment adds `_meta["x402/payment-response"]`.
 */
function paymentRequiredResult(e: PaymentRequiredFailure): CallToolResult {
  const wrapper = { [X402_META.error]: { code: 402, message: e.message, data: e.paymentRequired } };
  return {
    isError: true,
    content: [{ type: 'text', text: JSON.stringify(wrapper) }],
    structuredContent: e.paymentRequired,
    _meta: { [X402_META.error]: e.paymentRequired, ...(e.paymentResponse ? { [X402_META.paymentResponse]: e.paymentResponse } : {}) },
  };
}

/** The PaymentRequired of a tool result made by paymentRequiredResult, if it is one. */
export function paymentRequiredOf(result: CallToolResult): Record<string, unknown> | undefined {
  const required = result.isError ? result._meta?.[X402_META.error] : undefined;
  return typeof required === 'object' && required !== null ? (required as Record<string, unknown>) : undefined;
}

export function errorResult(e: unknown): CallToolResult {
  if (e instanceof PaymentRequiredFailure) return paymentRequiredResult(e);
  let text: string;
  if (isWalletError(e)) text = e.message;
  else if (e instanceof ToolFailure) text = e.message;
  else
    text = `Unexpected failure: ${(e as Error)?.message ?? String(e)}. Nothing is known to have been paid beyond what list_receipts shows; check it before retrying.`;
  return { isError: true, content: [{ type: 'text', text }] };
}

/** Runs a tool body, turning every failure into an `isError` result instead of a protocol error. */
export async function guarded(work: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await work();
  } catch (e) {
    return errorResult(e);
  }
}
