import { getAddress } from 'viem';
import { atomicToUsdc, usdcToAtomic } from '../shared/money.js';
import { assertApproved, WalletError, noWalletToPay } from './errors.js';
import type { LedgerEntry } from './ledger.js';
import type { PaymentTerms } from './terms.js';
import { matchesTerms, type Wallet } from './wallet.js';

/**
 * The client half of x402 over MCP (coinbase/x402 `specs/transports-v2/mcp.md`): our wallet pays an
 * MCP server's paid tool. A tool called without payment answers `isError` with the x402
 * `PaymentRequired` in `structuredContent`; we check it against the terms of the service's own
 * discovery document and the caller's quote, reserve the amount in the same ledger and under the
 * same caps as HTTP payments (atomically, across processes), sign, and call again with
 * `_meta["x402/payment"]`. The server's `_meta["x402/payment-response"]` commits the entry; a
 * definite refusal releases it; no answer leaves it counted as spent.
 */

/** What we need of an MCP client: the SDK's `Client` fits. */
export interface McpToolCaller {
  callTool(params: { name: string; arguments?: Record<string, unknown>; _meta?: Record<string, unknown> }): Promise<McpToolResult>;
}

export interface McpToolResult {
  isError?: boolean;
  structuredContent?: unknown;
  content?: unknown;
  _meta?: Record<string, unknown>;
  [k: string]: unknown;
}

export interface PaidToolCall {
  name: string;
  arguments?: Record<string, unknown>;
  /** The most this call may cost, decimal USDC (the caps apply too). */
  quote: string;
  /** The most the person approved for this call (SVC_APPROVAL_ABOVE; mcp/approval.ts asks). */
  approved?: bigint;
}

interface RequirementV2 {
  scheme: string;
  network: string;
  amount: string;
  asset: string;
  payTo: string;
  maxTimeoutSeconds: number;
  extra?: { name?: string; version?: string };
}

interface PaymentRequiredV2 {
  x402Version: 2;
  resource?: unknown;
  accepts: RequirementV2[];
}

/** The PaymentRequired a tool result carries, if it is one (x402 MCP transport). */
export function paymentRequiredOf(result: McpToolResult): PaymentRequiredV2 | undefined {
  const s = result.structuredContent as Partial<PaymentRequiredV2> | undefined;
  if (!result.isError || !s || s.x402Version !== 2 || !Array.isArray(s.accepts)) return undefined;
  return s as PaymentRequiredV2;
}

function acceptable(r: RequirementV2, terms: PaymentTerms, maxTimeout: number): boolean {
  return matchesTerms(r, terms.caip2, terms, maxTimeout) && typeof r.amount === 'string' && /^\d+$/.test(r.amount);
}

/**
 * Calls `call.name`; when the server asks for payment, pays at most `call.quote` within the caps and
 * calls again. Returns the final tool result and the ledger entry of the payment (if one was made).
 * Every refusal before signing is a WalletError and nothing leaves the process.
 */
export async function callPaidTool(wallet: Wallet, client: McpToolCaller, call: PaidToolCall): Promise<{ result: McpToolResult; entry?: LedgerEntry }> {
  const quote = usdcToAtomic(call.quote);
  // The quote is the most this call may sign (checked below): above the person's line, approved first.
  assertApproved(wallet.config.approvalAbove, call.name, quote, call.approved);
  const first = await client.callTool({ name: call.name, arguments: call.arguments });
  const required = paymentRequiredOf(first);
  if (!required) return { result: first };

  const terms = await wallet.terms();
  const maxTimeout = wallet.config.maxPaymentTimeoutSeconds;
  const options = required.accepts.filter((r) => acceptable(r, terms, maxTimeout));
  if (options.length === 0)
    throw new WalletError(
      'terms_refused',
      `Refused to pay for ${call.name}: its PaymentRequired matches none of the terms of the service's discovery document (USDC on ${terms.caip2} to ${terms.recipient}). Nothing was signed or paid.`,
      'none',
      { offered: required.accepts },
    );
  const req = options.sort((a, b) => (BigInt(a.amount) < BigInt(b.amount) ? -1 : 1))[0]!;
  const amount = BigInt(req.amount);
  if (amount > quote)
    throw new WalletError(
      'price_drift',
      `Refused to pay for ${call.name}: it asks ${atomicToUsdc(amount)} USDC, more than the ${call.quote} USDC quoted. Nothing was signed or paid.`,
      'none',
      { quoted: call.quote, price: atomicToUsdc(amount) },
    );
  if (!wallet.address) throw noWalletToPay(call.name, atomicToUsdc(amount));
  // The caps, as for a payment over HTTP (pending payments resolved on the chain before refusing).
  await wallet.precheck(call.name, atomicToUsdc(amount), call.name);

  // Reserve (atomic with the cap check, across processes) before the signature leaves.
  const entry =
    amount > 0n
      ? await wallet.ledger.reserve(
          {
            action: call.name,
            tool: call.name,
            method: 'MCP',
            url: `mcp://tool/${call.name}`,
            amount,
            network: terms.caip2,
            recipient: terms.recipient,
            payer: getAddress(wallet.address),
          },
          wallet.config.caps,
        )
      : undefined;
  const signed = await wallet.signTransferAuthorization(terms, getAddress(req.payTo), amount, req.maxTimeoutSeconds);
  // Before it leaves: an answer that never comes is then checked on chain by this nonce (wallet.resolvePending).
  if (entry) await wallet.ledger.attachAuthorization(entry.id, { nonce: signed.authorization.nonce, validBefore: Number(signed.authorization.validBefore) });
  const payload = { x402Version: 2, resource: required.resource, accepted: req, payload: signed };
  let second: McpToolResult;
  try {
    second = await client.callTool({ name: call.name, arguments: call.arguments, _meta: { 'x402/payment': payload } });
  } catch (e) {
    if (entry) await wallet.ledger.settle(entry.id, { status: 'unknown', note: (e as Error).message });
    throw new WalletError(
      'outcome_unknown',
      `The paid call of ${call.name} got no answer (${(e as Error).message}); the ${atomicToUsdc(amount)} USDC payment may have been taken and is counted as spent until the chain tells (wallet_status checks it: charged, or released once its authorization expired unused).`,
      'maybe',
    );
  }
  const response = second._meta?.['x402/payment-response'] as { success?: boolean; transaction?: string; errorReason?: string } | undefined;
  if (!entry) return { result: second };
  if (response?.success) {
    const settled = await wallet.ledger.settle(entry.id, { status: 'committed', txHash: response.transaction });
    return { result: second, entry: settled ?? entry };
  }
  if (second.isError) {
    // A definite answer without settlement (the payment was refused, or the work failed and the
    // server settles only on success): nothing moved.
    const released = await wallet.ledger.settle(entry.id, { status: 'released', note: response?.errorReason ?? 'not settled' });
    return { result: second, entry: released ?? entry };
  }
  // Success without a settlement report: the money may have moved.
  const unknown = await wallet.ledger.settle(entry.id, { status: 'unknown', note: 'no x402/payment-response' });
  return { result: second, entry: unknown ?? entry };
}
