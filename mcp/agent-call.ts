import type { AgentAction } from '../shared/agent-api/action.js';
import { toolNameOf } from '../shared/agent-api/catalogue.js';
import { atomicToUsdc, usdcToAtomic } from '../shared/money.js';
import type { LedgerEntry } from '../wallet/ledger.js';
import { headroom } from '../wallet/ledger.js';
import { assertWithinCaps } from '../wallet/ledger.js';
import { isWalletError } from '../wallet/errors.js';
import { priceOf, type McpContext } from './context.js';
import { ToolFailure } from './results.js';

export interface ActionCallResult {
  status: number;
  body: Record<string, unknown>;
  payment: PaymentInfo | null;
}

export interface PaymentInfo {
  price: string;
  receiptId: string | null;
  txHash: string | null;
}

/** Path of an action with its `:params` filled in (URL-encoded). */
export function actionPath(action: AgentAction, params: Record<string, unknown>): string {
  return action.path.replace(/:([A-Za-z_]\w*)/g, (_m, k: string) => {
    const v = params[k];
    if (typeof v !== 'string' || !v) throw new ToolFailure(`${toolNameOf(action)} needs ${k}; nothing was sent or paid.`);
    return encodeURIComponent(v);
  });
}

function paymentInfo(entry: LedgerEntry | undefined): PaymentInfo | null {
  if (!entry) return null;
  return { price: atomicToUsdc(BigInt(entry.amount)), receiptId: entry.receiptId ?? null, txHash: entry.txHash ?? null };
}

function costSentence(entry: LedgerEntry | undefined): string {
  if (!entry || entry.status === 'released') return 'Nothing was paid.';
  if (entry.status === 'committed') return `${atomicToUsdc(BigInt(entry.amount))} USDC was paid.`;
  return `The ${atomicToUsdc(BigInt(entry.amount))} USDC payment may have been taken (counted as spent); check list_apps / list_receipts before retrying.`;
}

function nextStep(status: number): string {
  if (status === 400) return 'Fix the arguments named above and call again.';
  if (status === 401 || status === 403) return 'The wallet or key is not allowed to do this; check you own the app (list_apps).';
  if (status === 404) return 'Check the identifier (list_apps shows your apps).';
  if (status === 409) return 'Pick another name (suggest_site_name) or update the existing resource.';
  if (status === 413) return 'Send less data in one call.';
  if (status === 429) return 'A limit was reached; wait and retry, or free space.';
  return 'Retry later; if it keeps failing, report it to the user.';
}

/**
 * Calls one Agent API action through the wallet, quoting `maxPrice` (default: the advertised
 * price). A non-2xx answer becomes a ToolFailure carrying the service's message and the cost.
 */
export async function callAction(
  ctx: McpContext,
  action: AgentAction,
  params: Record<string, unknown>,
  body: Record<string, unknown> | undefined,
  maxPrice?: string,
): Promise<ActionCallResult> {
  const tool = toolNameOf(action);
  const quote = maxPrice ?? priceOf(ctx, action.name);
  const url = `${ctx.config.serviceUrl}${actionPath(action, params)}`;
  const hasBody = action.method === 'POST' || action.method === 'PATCH';
  const { response, payment, entry } = await ctx.wallet.fetch({
    action: action.name,
    method: action.method,
    url,
    headers: { accept: 'application/json', ...(hasBody ? { 'content-type': 'application/json' } : {}) },
    body: hasBody ? JSON.stringify(body ?? {}) : undefined,
    quote,
  });
  const text = await response.text();
  let json: Record<string, unknown> = {};
  try {
    json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {
    json = {};
  }
  if (!response.ok) {
    const err = (json.error ?? {}) as { code?: string; message?: string; details?: unknown };
    const issues = (err.details as { issues?: { field: string; message: string }[] } | undefined)?.issues;
    const what = err.message ?? (text.slice(0, 300) || response.statusText);
    throw new ToolFailure(
      `${tool} failed: ${what}${issues?.length ? ` (${issues.map((i) => `${i.field}: ${i.message}`).join('; ')})` : ''} [HTTP ${response.status}${err.code ? ` ${err.code}` : ''}]. ${costSentence(entry)} ${nextStep(response.status)}`,
      { status: response.status, code: err.code },
    );
  }
  return { status: response.status, body: json, payment: paymentInfo(payment) };
}

export interface Quote {
  action: string;
  tool: string;
  price: string;
  currency: 'USDC';
  /** Whether the caps allow paying this price right now. */
  allowed: boolean;
  /** The most the next call may cost under every cap. */
  headroom: string;
  refusal: string | null;
  walletConfigured: boolean;
}

/** Price and cap headroom of a call (no payment, no request to the service). */
export async function quoteAction(ctx: McpContext, action: AgentAction, price = priceOf(ctx, action.name)): Promise<Quote> {
  const totals = await ctx.wallet.ledger.totals();
  const h = headroom(totals, ctx.wallet.config.caps);
  let refusal: string | null = null;
  const amount = usdcToAtomic(price);
  if (amount > 0n && !ctx.wallet.address) refusal = 'no wallet configured (SVC_WALLET_PRIVATE_KEY or SVC_WALLET_KEY_FILE)';
  else {
    try {
      assertWithinCaps(amount, totals, ctx.wallet.config.caps, action.name);
    } catch (e) {
      if (!isWalletError(e)) throw e;
      refusal = e.message;
    }
  }
  return {
    action: action.name,
    tool: toolNameOf(action),
    price,
    currency: 'USDC',
    allowed: refusal === null,
    headroom: atomicToUsdc(h.next),
    refusal,
    walletConfigured: ctx.wallet.address !== null,
  };
}
