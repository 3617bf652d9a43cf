import type { AgentAction } from '../shared/agent-api/action.js';
import { toolNameOf } from '../shared/agent-api/catalogue.js';
import { PAYMENT_HEADERS } from '../shared/agent-api/network.js';
import { atomicToUsdc, usdcToAtomic } from '../shared/money.js';
import { assertWithinCaps, headroom, type LedgerEntry, type SpendTotals } from '../wallet/ledger.js';
import { aboveApprovalLine, isWalletError } from '../wallet/errors.js';
import { priceOf, type McpContext } from './context.js';
import { describeFailure, readAnswer, type ServiceAnswer } from './service-answer.js';
import { PaymentRequiredFailure, ToolFailure, X402_META } from './failures.js';
import { rememberTableWriteKey } from './table-write-keys.js';
import { accountToolListed } from './tools/account-tools.js';

export interface ActionCallResult {
  status: number;
  body: Record<string, unknown>;
  /** What the local wallet paid (null: free, or paid by the caller's own wallet on the hosted endpoint). */
  payment: PaymentInfo | null;
  /** Hosted endpoint: the settlement the service reported (`_meta["x402/payment-response"]`). */
  paymentResponse?: Record<string, unknown>;
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

/** What a refused call cost when nothing was paid (a composite tool says it of the failed step: tools/paid-steps.ts). */
export const NOTHING_PAID = 'Nothing was paid.';

function costSentence(entry: LedgerEntry | undefined): string {
  if (!entry || entry.status === 'released') return NOTHING_PAID;
  if (entry.status === 'committed') return `${atomicToUsdc(BigInt(entry.amount))} USDC was paid.`;
  return `The ${atomicToUsdc(BigInt(entry.amount))} USDC payment may have been taken (counted as spent until the chain tells: wallet_status checks it, and releases it once its authorization expired unused); check list_apps / list_receipts before retrying.`;
}

function nextStep(tool: string, status: number, message = '', code?: string): string {
  if (code === 'slug_taken' && tool === 'create_app_from_html')
    return 'If it is your app (list_apps), update it instead: pass its name as appId (deploy_site, update_app_file). Otherwise take the suggested name.';
  if (code === 'data_file_invalid') return 'Fix the file where the message says, then upload it again.';
  if (code === 'not_uploaded') return 'Upload the bytes as the message says, then call again.';
  if (/insufficient_funds/.test(message))
    return /faucet/.test(message) ? 'Fund the wallet as the message says, then call again.' : 'The wallet lacks USDC for this price: fund it, then call again.';
  if (status === 400) return 'Fix the arguments named above and call again.';
  if (status === 401 || status === 403) return 'The wallet or key is not allowed to do this; check you own the app (list_apps).';
  if (status === 404) return 'Check the identifier (list_apps shows your apps).';
  if (status === 409) return 'Pick another name (suggest_site_name) or update the existing resource.';
  if (status === 413) return 'Send less data in one call.';
  if (status === 429) return 'A limit was reached; wait and retry, or free space.';
  return 'Retry later; if it keeps failing, report it to the user.';
}

/** The request's `_meta` (hosted endpoint: the client's x402 payment rides in it). */
export type RequestMeta = Record<string, unknown> | undefined;

const b64json = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64');
function decodeB64Json(value: string | null): Record<string, unknown> | undefined {
  if (!value) return undefined;
  try {
    const v = JSON.parse(Buffer.from(value, 'base64').toString('utf8'));
    return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `_meta["x402/payment"]` → the HTTP payment header of its generation. The payload comes as an object
 * (the x402 MCP transport spec) or as the base64 string of one (Cloudflare's withX402Client, the
 * header's own encoding); both become the same header, so a string and the object it encodes are one
 * payment to the service (same nonce: one charge). A malformed one is refused before anything is sent.
 */
function paymentHeaderFromMeta(tool: string, meta: RequestMeta): Record<string, string> {
  const signIn = meta?.[X402_META.signIn];
  if (typeof signIn === 'string' || (typeof signIn === 'object' && signIn !== null))
    return { [PAYMENT_HEADERS.signInWithX]: typeof signIn === 'string' ? signIn.trim() : b64json(signIn) };
  const sent = meta?.[X402_META.payment];
  if (sent === undefined) return {};
  const payment = typeof sent === 'string' ? decodeB64Json(sent.trim()) : sent;
  const version = (payment as { x402Version?: unknown } | null | undefined)?.x402Version;
  if (typeof payment !== 'object' || payment === null || (version !== 1 && version !== 2))
    throw new ToolFailure(
      `${tool}: _meta["x402/payment"] must be an x402 PaymentPayload (x402Version 1 or 2): the object, or the base64 string of its JSON. Nothing was sent or paid; sign the PaymentRequired this tool returns and retry.`,
    );
  return { [version === 2 ? PAYMENT_HEADERS.v2Request : PAYMENT_HEADERS.v1Request]: b64json(payment) };
}

function failureSentence(tool: string, response: Response, answer: ServiceAnswer, cost: string): string {
  const f = describeFailure(response, answer);
  return `${tool} failed: ${f.what} ${f.tag}. ${cost} ${nextStep(tool, response.status, f.what, f.code)}`;
}

/** The Account API tool that does what a paid wallet tool does, for the signed-in account and free. */
const ACCOUNT_TOOL_INSTEAD: Record<string, string> = {
  list_apps: 'account_list_apps',
  create_app_from_html: 'account_publish_app',
  update_app_file: 'account_write_app_files',
  update_app_meta: 'account_update_app',
  delete_app: 'account_delete_app',
  create_table_api: 'account_create_table',
  convert_data_file_to_api: 'account_create_dataset',
};

/** The Account API tool that does what a wallet tool does, for the account (undefined when none does). */
export const accountToolInstead = (tool: string): string | undefined => ACCOUNT_TOOL_INSTEAD[tool];

/**
 * On the signed-in hosted endpoint, a paid tool's 402 also names the free account tool that does the
 * same (most MCP clients cannot sign an x402 payment, and a model that met the 402 would stop there).
 */
function accountInstead(ctx: McpContext, tool: string): string {
  const instead = ACCOUNT_TOOL_INSTEAD[tool];
  if (!instead || !accountToolListed(ctx, instead)) return '';
  return ` Without a wallet that signs x402 payments: ${instead} does this for the signed-in account, free (what it makes is the account's, not a wallet's).`;
}

/**
 * Calls one Agent API action. Local (svc-mcp, the loopback endpoint): the configured wallet pays,
 * quoting `maxPrice` (default: the advertised price) within its caps. Hosted: the caller's own
 * wallet pays through `_meta["x402/payment"]` (x402 MCP transport); without it the service's 402
 * becomes a PaymentRequiredFailure. A non-2xx answer becomes a ToolFailure with the service's message.
 */
export async function callAction(
  ctx: McpContext,
  action: AgentAction,
  params: Record<string, unknown>,
  body: Record<string, unknown> | undefined,
  options: {
    maxPrice?: string;
    /** The most the person approved for this call (mcp/approval.ts), when it is above their line. */
    approved?: bigint;
    meta?: RequestMeta;
    tool?: () => { name: string; description: string; inputSchema: Record<string, unknown> };
    /** The tool the agent called, whose SVC_MAX_USDC_PER_TOOL cap counts the payment (a composite's name for its steps); default: this action's. */
    payingTool?: string;
  } = {},
): Promise<ActionCallResult> {
  const tool = toolNameOf(action);
  const url = `${ctx.config.serviceUrl}${actionPath(action, params)}`;
  const hasBody = action.method === 'POST' || action.method === 'PATCH';
  const headers: Record<string, string> = { accept: 'application/json', ...(hasBody ? { 'content-type': 'application/json' } : {}) };
  const payload = hasBody ? JSON.stringify(body ?? {}) : undefined;
  if (ctx.hosted) {
    const response = await ctx.fetch(url, { method: action.method, headers: { ...headers, ...paymentHeaderFromMeta(tool, options.meta) }, body: payload });
    const answer = await readAnswer(response);
    const { json } = answer;
    const settled = decodeB64Json(response.headers.get(PAYMENT_HEADERS.v2Response) ?? response.headers.get(PAYMENT_HEADERS.v1Response));
    if (response.status === 402) {
      const http = decodeB64Json(response.headers.get(PAYMENT_HEADERS.v2Required)) ?? json;
      // Discovery of the tool (Bazaar, MCP form) in place of the HTTP route's.
      const discovery = options.tool && ctx.paymentDiscovery?.(action, options.tool());
      const required = discovery ? { ...http, extensions: { ...(http.extensions as object | undefined), ...discovery } } : http;
      const message = (json.message as string | undefined) ?? `${tool} costs ${priceOf(ctx, action.name)} USDC`;
      throw new PaymentRequiredFailure(
        `${tool} needs payment: ${message}. Sign the PaymentRequired in structuredContent with your wallet and call ${tool} again with the payload in _meta["x402/payment"]${
          (required.extensions as Record<string, unknown> | undefined)?.['sign-in-with-x']
            ? ', or sign in instead: sign its extensions["sign-in-with-x"] challenge (SIWE) and send the proof in _meta["x402/sign-in-with-x"]'
            : ''
        }. Nothing was charged.${accountInstead(ctx, tool)}`,
        required,
        settled ?? (options.meta?.[X402_META.payment] ? { success: false, errorReason: (json.error as string | undefined) ?? 'payment_refused' } : undefined),
      );
    }
    if (!response.ok) throw new ToolFailure(failureSentence(tool, response, answer, 'Nothing was charged.'), { status: response.status });
    return { status: response.status, body: json, payment: null, paymentResponse: settled };
  }
  if (ctx.config.readOnly && usdcToAtomic(priceOf(ctx, action.name)) > 0n)
    // Tools are filtered on the catalogue's prices; a deployment that charges for one of them is refused here.
    throw new ToolFailure(
      `${tool} costs ${priceOf(ctx, action.name)} USDC on this service and this server is read-only (SVC_READ_ONLY=1): it pays for nothing. Nothing was charged.`,
    );
  const { response, payment, entry } = await ctx.wallet.fetch({
    action: action.name,
    method: action.method,
    url,
    headers,
    body: payload,
    quote: options.maxPrice ?? priceOf(ctx, action.name),
    approved: options.approved,
    tool: options.payingTool ?? tool,
  });
  const answer = await readAnswer(response);
  if (!response.ok) {
    throw new ToolFailure(failureSentence(tool, response, answer, costSentence(entry)), {
      status: response.status,
      code: describeFailure(response, answer).code,
    });
  }
  await rememberTableWriteKey(ctx, answer.json);
  return { status: response.status, body: answer.json, payment: paymentInfo(payment) };
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
  /** Whether the person will be asked before it is paid (above SVC_APPROVAL_ABOVE). */
  asksPerson: boolean;
  walletConfigured: boolean;
}

/** Price and cap headroom of a call (no payment, no request to the service). */
export async function quoteAction(ctx: McpContext, action: AgentAction, price = priceOf(ctx, action.name)): Promise<Quote> {
  return quoteAmount(ctx, action.name, toolNameOf(action), usdcToAtomic(price));
}

/**
 * Whether the caps allow paying `amount` now, and the headroom left. `check` throws the caps' refusal
 * (default: one payment of `amount`); a composite passes the check its payments will meet
 * (paid-steps.ts `assertPlanWithinCaps`: the whole plan within the headroom, each step within the
 * per-call cap), so the quote says what the tool will do.
 */
export async function quoteAmount(
  ctx: McpContext,
  action: string,
  tool: string,
  amount: bigint,
  check: (totals: SpendTotals) => void = (totals) => assertWithinCaps(amount, totals, ctx.wallet.config.caps, action, { tool }),
): Promise<Quote> {
  const totals = await ctx.wallet.ledger.totals();
  const h = headroom(totals, ctx.wallet.config.caps, tool);
  let refusal: string | null = null;
  if (amount > 0n && !ctx.wallet.address) refusal = 'no wallet configured (SVC_WALLET_PRIVATE_KEY or SVC_WALLET_KEY_FILE)';
  else {
    try {
      // The payee pinned for the service, as a payment checks it: a quote says the call would be refused.
      // (A service that cannot be reached is the call's to report: the quote sends nothing else.)
      if (amount > 0n)
        await ctx.wallet.terms().catch((e: unknown) => {
          if (isWalletError(e) && e.code === 'payee_changed') throw e;
        });
      check(totals);
    } catch (e) {
      if (!isWalletError(e)) throw e;
      refusal = e.message;
    }
  }
  return {
    action,
    tool,
    price: atomicToUsdc(amount),
    currency: 'USDC',
    allowed: refusal === null,
    headroom: atomicToUsdc(h.next),
    refusal,
    asksPerson: aboveApprovalLine(ctx.wallet.config.approvalAbove, amount),
    walletConfigured: ctx.wallet.address !== null,
  };
}
