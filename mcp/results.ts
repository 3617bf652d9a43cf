import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { isWalletError } from '../wallet/errors.js';

/** A tool failure with the sentence the agent reads: what failed, what it cost, what to do. */
export class ToolFailure extends Error {
  constructor(
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export function okResult(structured: Record<string, unknown>, summary?: string): CallToolResult {
  const text = JSON.stringify(structured, null, 1);
  return { content: [{ type: 'text', text: summary ? `${summary}\n${text}` : text }], structuredContent: structured };
}

export function errorResult(e: unknown): CallToolResult {
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
