import { createPublicClient, erc20Abi, getAddress, http, isAddress, isAddressEqual, type Address } from 'viem';
import { USDC_ABI } from '../shared/usdc-abi.js';
import type { PrivateKeyAccount } from 'viem/accounts';
import { randomBytes } from 'node:crypto';
import { TRANSFER_WITH_AUTHORIZATION_TYPES } from '../shared/agent-api/network.js';
import { atomicToUsdc, usdcToAtomic } from '../shared/money.js';
import type { WalletConfig } from './config.js';
import { assertApproved, GET_A_WALLET, WalletError, isWalletError, noWalletToPay } from './errors.js';
import { SpendLedger, assertWithinCaps, headroom, toolOfAction, type LedgerEntry, type SpendTotals } from './ledger.js';
import { fetchDiscovery, termsFromDiscovery, type PaymentTerms } from './terms.js';
import { PayeePins } from './payees.js';

/** One x402 v1 payment requirement (an entry of a 402 body's `accepts`). */
interface Requirement {
  scheme: string;
  network: string;
  maxAmountRequired: string;
  resource: string;
  payTo: string;
  maxTimeoutSeconds: number;
  asset: string;
  extra?: Record<string, unknown>;
}

export interface PaidRequest {
  /** Catalogue action name (`x402.create_app_from_html`), recorded in the ledger. */
  action: string;
  method: string;
  /** Absolute URL; its origin must be an allowed origin. */
  url: string;
  headers?: Record<string, string>;
  body?: string;
  /** The price the caller was quoted (catalogue or pricing endpoint): the most this call may pay. */
  quote: string;
  /** The most the person approved for this call (SVC_APPROVAL_ABOVE; mcp/approval.ts asks). */
  approved?: bigint;
  /** The tool the agent called, whose SVC_MAX_USDC_PER_TOOL cap counts this payment; default: the action's own (`publish_app`). */
  tool?: string;
}

/** What the signed sender learned: whether a payment left, and its ledger entry. */
interface PaymentState {
  entry?: LedgerEntry;
  sent: boolean;
}

export interface PaidResponse {
  response: Response;
  /** The ledger entry when a payment was made and accepted. */
  payment?: LedgerEntry;
  /** The ledger entry of a payment that left, whatever its outcome (committed, released, unknown). */
  entry?: LedgerEntry;
}

export interface WalletStatus {
  configured: boolean;
  address: string | null;
  serviceUrl: string;
  network: string | null;
  asset: string | null;
  recipient: string | null;
  /** On-chain USDC balance, or null when no RPC is known or it failed (see balanceNote). */
  balance: string | null;
  balanceNote?: string;
  /** `perTool`: each capped tool's spending over the rolling 24 h; `paidCallsLastHour`: payments signed in the last hour. */
  spent: { session: string; day: string; total: string; perTool: Record<string, string>; paidCallsLastHour: number };
  /** The person's settings: `perTool` SVC_MAX_USDC_PER_TOOL (rolling 24 h), `paidCallsPerHour` SVC_MAX_PAID_CALLS_PER_HOUR (null: none). */
  caps: { perCall: string; perSession: string; perDay: string; total: string | null; perTool: Record<string, string>; paidCallsPerHour: number | null };
  /** What each cap leaves; `nextPaidCallAt`: when the hour's limit lets a payment be signed again (only while it is reached). */
  headroom: {
    session: string;
    day: string;
    total: string | null;
    nextCall: string;
    perTool: Record<string, string>;
    paidCallsThisHour: number | null;
    nextPaidCallAt?: string;
  };
  /** Whom payments go to: SVC_PAY_TO if the person set it, and the payee pinned for each service (payees.ts). */
  payees: {
    payTo: string | null;
    pinned: { serviceUrl: string; recipient: string; network: string; asset: string; pinnedAt: string; source: string }[];
    /** Why no pin can be shown: the pins file cannot be read (payments are refused until it is fixed). */
    note?: string;
  };
  /** SVC_APPROVAL_ABOVE: payments above it are made only after the person approves them; null: never asked. */
  approvalAbove: string | null;
  ledger: string;
  /** Payments whose outcome is not known yet (checked against the chain just now), counted as spent. */
  pending: PendingPayment[];
}

/** A payment whose answer never came, as wallet_status shows it. */
export interface PendingPayment {
  at: string;
  tool: string;
  price: string;
  status: string;
  /** Past this the authorization can never be used; it is released then if still unused. */
  chargeableUntil?: string;
  state: string;
}

/** An outcome not known yet: `unknown`, or `reserved` by a process that is gone (it crashed mid-call). */
function isOpen(e: LedgerEntry): boolean {
  if (e.status === 'unknown') return true;
  if (e.status !== 'reserved' || e.pid === process.pid) return false;
  try {
    process.kill(e.pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

const isRedirect = (res: Response) => res.status >= 300 && res.status < 400;

/** A paid call's answer, unless it is a redirect: that is refused (never followed), saying what it cost. */
function refuseRedirect(res: Response, req: PaidRequest, cost: string, spent: 'none' | 'maybe' = 'none'): Response {
  if (!isRedirect(res)) return res;
  throw new WalletError(
    'redirect_refused',
    `The service answered ${req.method} ${req.url} with a redirect (HTTP ${res.status} to ${res.headers.get('location') ?? 'nowhere'}); a paid call never follows one. ${cost} Check SVC_URL (the service's own address, e.g. https rather than http); tell the user.`,
    spent,
  );
}

/** Seconds past an authorization's validBefore before it is taken as unusable (clock skew). */
const EXPIRY_MARGIN_SECONDS = 60;

export interface WalletOptions {
  fetch?: typeof fetch;
  now?: () => number;
}

const b64json = (s: string): unknown => JSON.parse(Buffer.from(s, 'base64').toString('utf8'));

function isRequirement(r: unknown): r is Requirement {
  const o = r as Partial<Record<keyof Requirement, unknown>> | null;
  return (
    typeof o === 'object' &&
    o !== null &&
    typeof o.scheme === 'string' &&
    typeof o.network === 'string' &&
    typeof o.maxAmountRequired === 'string' &&
    /^\d+$/.test(o.maxAmountRequired) &&
    typeof o.payTo === 'string' &&
    isAddress(o.payTo, { strict: false }) &&
    typeof o.asset === 'string' &&
    Number.isInteger(o.maxTimeoutSeconds) &&
    (o.extra === undefined || (typeof o.extra === 'object' && o.extra !== null))
  );
}

function describeMismatch(r: Requirement, t: PaymentTerms, maxTimeout: number): string {
  const why: string[] = [];
  if (r.scheme !== 'exact') why.push(`scheme ${r.scheme}`);
  if (r.network !== t.v1Network) why.push(`network ${r.network} (expected ${t.v1Network})`);
  if (!sameAddress(r.asset, t.asset)) why.push(`asset ${r.asset} (expected USDC ${t.asset})`);
  if (!sameAddress(r.payTo, t.recipient)) why.push(`recipient ${r.payTo} (the payee pinned for this service is ${t.recipient})`);
  if (r.extra?.name !== t.domainName || r.extra?.version !== t.domainVersion) why.push(`EIP-712 domain ${String(r.extra?.name)}/${String(r.extra?.version)}`);
  if (r.maxTimeoutSeconds > maxTimeout) why.push(`validity ${r.maxTimeoutSeconds} s (at most ${maxTimeout} s)`);
  return why.join(', ');
}

/** Whether two strings are the same EVM address (any case); false when either is not an address. */
/**
 * A payment option (x402 v1 or v2) that pays what the discovery document's terms say: the exact
 * scheme on `network` (v1 name or CAIP-2, as the option's version writes it), the terms' token,
 * recipient and EIP-712 domain, and a validity window within `maxTimeout` seconds.
 */
export function matchesTerms(
  r: { scheme: string; network: string; asset: string; payTo: string; extra?: { name?: string; version?: string }; maxTimeoutSeconds: number },
  network: string,
  terms: PaymentTerms,
  maxTimeout: number,
): boolean {
  return (
    r.scheme === 'exact' &&
    r.network === network &&
    sameAddress(r.asset, terms.asset) &&
    sameAddress(r.payTo, terms.recipient) &&
    r.extra?.name === terms.domainName &&
    r.extra?.version === terms.domainVersion &&
    r.maxTimeoutSeconds > 0 &&
    r.maxTimeoutSeconds <= maxTimeout
  );
}

export function sameAddress(a: string, b: string): boolean {
  try {
    return isAddressEqual(a as Address, b as Address);
  } catch {
    return false;
  }
}

/**
 * The paying wallet: usable by any script or agent, not only the MCP server.
 *
 * A paid call goes: pre-flight (origin allowed, quote within caps: refused here, nothing is sent) →
 * unpaid request → on 402 the strict selector accepts only the terms of the service's discovery
 * document and only at most the quoted price → the wallet signs it (the x402 v1 "exact" scheme: an
 * EIP-3009 authorization in an X-PAYMENT header, as x402-fetch 1.x sends it) → the signed sender, the
 * single place a signed payment leaves, checks and reserves it in the ledger atomically, sends it,
 * and records the outcome (committed / released / unknown).
 */
export class Wallet {
  readonly ledger: SpendLedger;
  /** The payee each service URL first published (or SVC_PAY_TO): terms() checks every discovery answer against it. */
  readonly payees: PayeePins;
  readonly #account: PrivateKeyAccount | undefined;
  readonly #fetch: typeof fetch;
  readonly #now: () => number;
  #terms: Promise<PaymentTerms> | undefined;

  constructor(
    readonly config: WalletConfig,
    options: WalletOptions = {},
  ) {
    this.#account = config.key?.toAccount();
    this.#fetch = options.fetch ?? fetch;
    this.#now = options.now ?? Date.now;
    this.ledger = new SpendLedger(config.ledgerPath, options.now);
    this.payees = new PayeePins(config.payeesPath, options.now);
  }

  get address(): Address | null {
    return this.#account?.address ?? null;
  }

  /**
   * Payment terms from the configured service's discovery document, fetched once per process and
   * checked against the payee pinned for the service (pinned now if it has none): a discovery answer
   * naming another recipient, network or asset is refused (`payee_changed`) before anything is signed.
   */
  terms(refresh = false): Promise<PaymentTerms> {
    if (!this.#terms || refresh) {
      const p = this.discoveredTerms().then(async (terms) => {
        await this.payees.verify(this.config.serviceUrl, { recipient: terms.recipient, network: terms.caip2, asset: terms.asset }, this.config.payTo);
        return terms;
      });
      p.catch(() => {
        if (this.#terms === p) this.#terms = undefined;
      });
      this.#terms = p;
    }
    return this.#terms;
  }

  /** The terms the service's discovery names right now, unchecked against the pin (what --accept-payee shows the person). */
  async discoveredTerms(): Promise<PaymentTerms> {
    return termsFromDiscovery(await fetchDiscovery(this.config.serviceUrl, this.#fetch));
  }

  originAllowed(url: string): boolean {
    try {
      return this.config.allowedOrigins.includes(new URL(url).origin);
    } catch {
      return false;
    }
  }

  /** Spend so far and the most the next call may cost; no payment, no network. */
  async headroom(): Promise<{ totals: SpendTotals; next: bigint }> {
    const totals = await this.ledger.totals();
    return { totals, next: headroom(totals, this.config.caps).next };
  }

  /** Refuses (without sending anything) a call quoted at `price` that the caps cannot take now (`tool`: whose per-tool cap counts it). */
  async precheck(action: string, price: string, tool = toolOfAction(action)): Promise<void> {
    const amount = usdcToAtomic(price);
    if (amount === 0n) return;
    if (!this.#account) throw noWalletToPay(action, price);
    // The payee first: a service whose payee changed is refused before any request.
    await this.terms();
    let totals = await this.ledger.totals();
    try {
      assertWithinCaps(amount, totals, this.config.caps, action, { tool });
    } catch (e) {
      // Payments whose answer never came may be settled by now (or never can be): ask the chain, then check again.
      if (!(await this.resolvePending()).resolved) throw e;
      totals = await this.ledger.totals();
      assertWithinCaps(amount, totals, this.config.caps, action, { tool });
    }
  }

  /**
   * Resolves payments whose outcome is unknown (the answer never came: timeout, connection lost, a
   * 5xx) by asking the chain whether the signed authorization was used: used → committed (it was
   * charged); unused once no block can take it any more → released from the caps, as it can never be
   * charged now. "No block can take it": on a chain named by SVC_RPC_URL, the chain's latest block is
   * at or past validBefore and the state is read at that block (a lagging RPC cannot hide a charge);
   * on the service's own dev chain (its discovery names the RPC; anvil mines each transaction at once
   * with the wall clock's time), this process's clock is a minute past validBefore. Unused and still
   * valid stays pending: the service may still collect it (it reconciles unpaid calls), so releasing
   * it could let a charged payment escape the caps. Without a way to ask (no RPC, no nonce recorded)
   * nothing changes.
   */
  async resolvePending(): Promise<{ resolved: number; pending: PendingPayment[] }> {
    const me = this.address;
    const open = (await this.ledger.entries()).filter((e) => isOpen(e) && (!me || sameAddress(e.payer, me)));
    if (!open.length) return { resolved: 0, pending: [] };
    let usedOnChain: ((payer: Address, nonce: `0x${string}`, blockNumber?: bigint) => Promise<boolean>) | undefined;
    let latestBlock: (() => Promise<{ number: bigint; timestamp: bigint }>) | undefined;
    let devChain = false;
    let why = '';
    try {
      const terms = await this.terms();
      const rpcUrl = this.config.rpcUrl ?? terms.rpcUrl;
      devChain = !this.config.rpcUrl && Boolean(terms.rpcUrl);
      if (rpcUrl) {
        const client = createPublicClient({ transport: http(rpcUrl, { timeout: 5_000, retryCount: 0 }) });
        usedOnChain = (payer, nonce, blockNumber) =>
          client.readContract({
            address: terms.asset,
            abi: USDC_ABI,
            functionName: 'authorizationState',
            args: [payer, nonce],
            ...(blockNumber !== undefined ? { blockNumber } : {}),
          });
        latestBlock = async () => {
          const b = await client.getBlock();
          return { number: b.number, timestamp: b.timestamp };
        };
      } else why = 'no RPC URL known (set SVC_RPC_URL) to ask the chain';
    } catch (e) {
      why = `the service's discovery document could not be read: ${(e as Error).message.split('\n')[0]}`;
    }
    let resolved = 0;
    const pending: PendingPayment[] = [];
    const nowSeconds = Math.floor(this.#now() / 1000);
    for (const e of open) {
      const line = (state: string): PendingPayment => ({
        at: new Date(e.reservedAt).toISOString(),
        tool: e.action.replace(/^x402\./, ''),
        price: atomicToUsdc(BigInt(e.amount)),
        status: e.status,
        ...(e.validBefore ? { chargeableUntil: new Date(e.validBefore * 1000).toISOString() } : {}),
        state,
      });
      if (!e.nonce) {
        pending.push(line('counted as spent: the signed authorization was not recorded (a ledger from an older svc-mcp), so it cannot be checked'));
        continue;
      }
      if (!usedOnChain) {
        pending.push(line(`counted as spent until it can be checked: ${why}`));
        continue;
      }
      let used: boolean;
      let expired = false;
      try {
        // Expiry first, then the state at that point: a settlement can only come before it.
        let at: bigint | undefined;
        if (e.validBefore !== undefined) {
          if (devChain) expired = nowSeconds > e.validBefore + EXPIRY_MARGIN_SECONDS;
          else if (latestBlock) {
            const block = await latestBlock();
            expired = block.timestamp >= BigInt(e.validBefore);
            at = block.number;
          }
        }
        used = await usedOnChain(getAddress(e.payer), e.nonce as `0x${string}`, expired ? at : undefined);
      } catch (err) {
        pending.push(line(`counted as spent: the chain did not answer (${(err as Error).message.split('\n')[0]})`));
        continue;
      }
      if (used) {
        if (await this.ledger.resolve(e.id, { status: 'committed', receipt: undefined })) resolved++;
        continue;
      }
      if (expired) {
        const note = 'released: the chain shows the authorization unused and it expired, so it can never be charged';
        if (await this.ledger.resolve(e.id, { status: 'released', note })) resolved++;
        continue;
      }
      pending.push(line('not charged so far (the authorization is unused on chain); counted as spent until it expires, as the service may still collect it'));
    }
    return { resolved, pending };
  }

  /**
   * Makes `req`, paying at most `req.quote` if the service answers 402. Returns the final response
   * (which may be a non-402 error the service gave after a released payment); throws WalletError
   * on every refusal, with `spent` saying whether money may have moved.
   */
  async fetch(req: PaidRequest): Promise<PaidResponse> {
    this.#assertOriginAllowed(req.url);
    const quote = usdcToAtomic(req.quote);
    // The quote is the most this call may sign: above the person's line, it must have been approved.
    assertApproved(this.config.approvalAbove, req.action, quote, req.approved);
    if (quote > 0n) await this.precheck(req.action, req.quote, req.tool);
    const headers = { ...(req.headers ?? {}) };
    const init: RequestInit = { method: req.method, headers, body: req.body };
    if (!this.#account) {
      // No wallet: a 402 here means the action needs one (or its price changed). Never pay.
      const response = await this.#fetch(req.url, { ...init, signal: AbortSignal.timeout(this.config.requestTimeoutMs) });
      if (response.status === 402) throw await this.#freeGot402(req, response);
      return { response };
    }

    const terms = await this.terms();
    const state: PaymentState = { sent: false };
    const send = this.#signedSender(req, quote, terms, state);
    let response: Response;
    try {
      response = await send(req.url, init);
      if (response.status === 402) {
        const payment = await this.#paymentHeader(response, req, quote, terms);
        response = await send(req.url, { ...init, headers: { ...headers, 'X-PAYMENT': payment, 'Access-Control-Expose-Headers': 'X-PAYMENT-RESPONSE' } });
      }
    } catch (e) {
      throw this.#payFailure(e, req, state);
    }
    const entry = state.entry;
    if (entry && entry.status === 'released' && response.status === 402) throw await this.#paymentRejected(req, response);
    return { response, payment: entry?.status === 'committed' ? entry : undefined, entry };
  }

  #assertOriginAllowed(url: string): void {
    if (this.originAllowed(url)) return;
    throw new WalletError(
      'origin_not_allowed',
      `${new URL(url).origin} is not an allowed service origin (allowed: ${this.config.allowedOrigins.join(', ')}); nothing was sent or paid. The user can add it to SVC_ALLOWED_ORIGINS.`,
    );
  }

  /**
   * The X-PAYMENT header answering a 402: of its `accepts`, the requirement #chooseRequirement takes,
   * signed under the discovery document's terms (which that requirement matches: network, asset,
   * recipient, EIP-712 domain) as x402 v1 encodes it, base64 JSON `{x402Version, scheme, network,
   * payload: {signature, authorization}}`. A body that is not an x402 v1 payment request throws.
   */
  async #paymentHeader(res: Response, req: PaidRequest, quote: bigint, terms: PaymentTerms): Promise<string> {
    const body = (await res.json().catch(() => undefined)) as { x402Version?: unknown; accepts?: unknown } | undefined;
    if (body?.x402Version !== 1 || !Array.isArray(body.accepts) || !body.accepts.every(isRequirement))
      throw new Error('the 402 answer is not an x402 v1 payment request (x402Version 1 with accepts)');
    const chosen = this.#chooseRequirement(body.accepts, req, quote, terms);
    const signed = await this.signTransferAuthorization(terms, getAddress(chosen.payTo), BigInt(chosen.maxAmountRequired), chosen.maxTimeoutSeconds);
    const payment = { x402Version: 1, scheme: chosen.scheme, network: chosen.network, payload: signed };
    return Buffer.from(JSON.stringify(payment), 'utf8').toString('base64');
  }

  /**
   * The fetch a paid call sends through: the single place a signed payment leaves this process. It
   * checks the signed authorization against the quoted terms, reserves the amount in the ledger
   * (within the caps, atomically) before sending, and records the outcome.
   */
  #signedSender(req: PaidRequest, quote: bigint, terms: PaymentTerms, state: PaymentState) {
    const timeout = this.config.requestTimeoutMs;
    return async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const headers = (init?.headers ?? {}) as Record<string, string>;
      const xPayment = headers['X-PAYMENT'];
      // A paid call never follows a redirect: the payment would go wherever the redirect points.
      const send = async (what: string) =>
        refuseRedirect(await this.#fetch(input, { ...init, redirect: 'manual', signal: AbortSignal.timeout(timeout) }), req, what);
      if (!xPayment) return send('Nothing was signed or paid.');
      const payload = b64json(xPayment) as {
        network?: string;
        payload?: { authorization?: { from: string; to: string; value: string; nonce?: string; validBefore?: string } };
      };
      const auth = payload.payload?.authorization;
      if (!auth || !sameAddress(auth.to, terms.recipient) || BigInt(auth.value) > quote || payload.network !== terms.v1Network) {
        throw new WalletError('terms_refused', `Refused to send a payment for ${req.action} that does not match the quoted terms; nothing was paid.`);
      }
      const amount = BigInt(auth.value);
      // A zero-value authorization (identity proof of free actions such as list_apps) moves no money.
      if (amount === 0n) return send('Nothing was paid.');
      const reserved = await this.ledger.reserve(
        {
          action: req.action,
          method: req.method,
          url: req.url,
          amount,
          ...(req.tool ? { tool: req.tool } : {}),
          network: terms.caip2,
          recipient: terms.recipient,
          payer: getAddress(auth.from),
          nonce: auth.nonce,
          validBefore: auth.validBefore !== undefined ? Number(auth.validBefore) : undefined,
        },
        this.config.caps,
      );
      state.entry = reserved;
      state.sent = true;
      let res: Response;
      try {
        res = await this.#fetch(input, { ...init, redirect: 'manual', signal: AbortSignal.timeout(timeout) });
      } catch (e) {
        await this.ledger.settle(reserved.id, { status: 'unknown', note: (e as Error).message });
        const why = (e as Error).name === 'TimeoutError' ? `timed out after ${timeout} ms` : (e as Error).message;
        throw new WalletError(
          'outcome_unknown',
          `The paid request for ${req.action} got no answer (${why}); the ${atomicToUsdc(amount)} USDC payment may have been taken and is counted as spent until the chain tells (wallet_status checks it: charged, or released once its authorization expired unused). Check with list_apps / list_receipts before retrying, so the work is not done twice.`,
          'maybe',
          { price: atomicToUsdc(amount) },
        );
      }
      if (isRedirect(res)) {
        // Not followed: the signed payment stays here. Whether whoever answered can use it is not known.
        state.entry =
          (await this.ledger.settle(reserved.id, {
            status: 'unknown',
            httpStatus: res.status,
            note: `redirect to ${res.headers.get('location') ?? '?'} not followed`,
          })) ?? reserved;
        return refuseRedirect(
          res,
          req,
          `The ${atomicToUsdc(amount)} USDC payment was sent with the request and is counted as spent until the chain tells (wallet_status checks it).`,
          'maybe',
        );
      }
      state.entry = (await this.#recordOutcome(reserved, res)) ?? reserved;
      return res;
    };
  }

  /** What a failure of a paid call means for the caller: maybe spent once a payment left, else nothing signed. */
  #payFailure(e: unknown, req: PaidRequest, state: PaymentState): WalletError {
    if (isWalletError(e)) return e;
    const msg = (e as Error).message ?? String(e);
    if (state.sent)
      return new WalletError(
        'outcome_unknown',
        `The payment for ${req.action} left but the call failed (${msg}); it is counted as spent. Check list_receipts before retrying.`,
        'maybe',
      );
    return new WalletError(
      'terms_refused',
      `Could not read the service's payment request for ${req.action} (${msg.slice(0, 300)}); nothing was signed or paid. Check SVC_URL points at an svc service.`,
    );
  }

  /**
   * The service answered 402 to a signed payment (the ledger released it): not settled, nothing paid.
   * The service's own sentence is kept: it says what to do (on the dev chain, the faucet command).
   */
  async #paymentRejected(req: PaidRequest, response: Response): Promise<WalletError> {
    const { reason, said } = await response
      .clone()
      .json()
      .then((b: unknown) => {
        const { error, message } = (b ?? {}) as { error?: unknown; message?: unknown };
        return { reason: typeof error === 'string' ? error : JSON.stringify(error ?? ''), said: typeof message === 'string' ? message.slice(0, 400) : '' };
      })
      .catch(() => ({ reason: '', said: '' }));
    const next = /faucet/.test(said) ? '' : ' Check wallet_status (balance) and try again.';
    return new WalletError(
      'payment_rejected',
      `The service rejected the signed payment for ${req.action}${reason ? ` (${reason})` : ''}; it was not settled, so nothing was paid.${said ? ` The service said: ${said}.` : ''}${next}`,
      'none',
    );
  }

  /**
   * Of a 402's payment options, the cheapest that matches the discovery document's terms, within the
   * quote and the per-call cap; a WalletError (nothing signed) when none does.
   */
  #chooseRequirement(accepts: Requirement[], req: PaidRequest, quote: bigint, terms: PaymentTerms): Requirement {
    const caps = this.config.caps;
    const maxTimeout = this.config.maxPaymentTimeoutSeconds;
    const acceptable = accepts.filter((r) => matchesTerms(r, terms.v1Network, terms, maxTimeout));
    if (acceptable.length === 0) {
      const why = accepts.length ? describeMismatch(accepts[0]!, terms, maxTimeout) : 'no payment options';
      throw new WalletError(
        'terms_refused',
        `Refused to pay for ${req.action}: the service's 402 asks for ${why}, which differs from the terms of the service's discovery document. Nothing was signed or paid. Do not retry; report this to the user.`,
        'none',
        { offered: accepts },
      );
    }
    const cheapest = [...acceptable].sort((a, b) => (BigInt(a.maxAmountRequired) < BigInt(b.maxAmountRequired) ? -1 : 1))[0]!;
    const asked = BigInt(cheapest.maxAmountRequired);
    if (asked > quote) {
      throw new WalletError(
        'price_drift',
        `Refused to pay for ${req.action}: the price changed from ${req.quote} to ${atomicToUsdc(asked)} USDC. Nothing was paid. Check the new price (quote tool / svc://pricing) and call again if it is acceptable.`,
        'none',
        { quoted: req.quote, price: atomicToUsdc(asked) },
      );
    }
    if (asked > caps.perCall) assertWithinCaps(asked, { session: 0n, day: 0n, total: 0n }, caps, req.action);
    return cheapest;
  }

  /**
   * What a paid request's answer means for the ledger: settled (2xx, or a settlement header saying
   * so) → committed with its receipt; another 4xx → released (nothing moved); 5xx → unknown.
   */
  async #recordOutcome(entry: LedgerEntry, res: Response): Promise<LedgerEntry | undefined> {
    const settlementHeader = res.headers.get('x-payment-response') ?? res.headers.get('payment-response');
    let settlement: { success?: boolean; transaction?: string } | undefined;
    try {
      settlement = settlementHeader ? (b64json(settlementHeader) as typeof settlement) : undefined;
    } catch {
      settlement = undefined;
    }
    if (res.ok || settlement?.success) {
      let receipt: Record<string, unknown> | undefined;
      try {
        const body = (await res.clone().json()) as { receipt?: Record<string, unknown> };
        receipt = body?.receipt;
      } catch {
        receipt = undefined;
      }
      return this.ledger.settle(entry.id, {
        status: 'committed',
        httpStatus: res.status,
        txHash: settlement?.transaction ?? (receipt?.txHash as string | undefined),
        receipt,
      });
    }
    // The service answered and did not settle: a definite refusal, nothing moved.
    if (res.status < 500) return this.ledger.settle(entry.id, { status: 'released', httpStatus: res.status, note: `HTTP ${res.status}` });
    return this.ledger.settle(entry.id, { status: 'unknown', httpStatus: res.status, note: `HTTP ${res.status}` });
  }

  /**
   * Signs an EIP-3009 TransferWithAuthorization of `amount` to `to` under `terms` (the x402 "exact"
   * scheme), valid for `validSeconds`. It only signs: reserving the amount in the ledger is the
   * caller's job (see mcp-payer.ts), before the signature leaves the process.
   */
  async signTransferAuthorization(terms: PaymentTerms, to: Address, amount: bigint, validSeconds: number) {
    if (!this.#account) throw new WalletError('no_wallet', `no wallet is configured; nothing was signed or paid. ${GET_A_WALLET}`);
    const now = BigInt(Math.floor(Date.now() / 1000));
    const authorization = {
      from: this.#account.address,
      to,
      value: amount,
      validAfter: now - 600n,
      validBefore: now + BigInt(validSeconds),
      nonce: `0x${randomBytes(32).toString('hex')}` as `0x${string}`,
    };
    const signature = await this.#account.signTypedData({
      domain: { name: terms.domainName, version: terms.domainVersion, chainId: terms.chainId, verifyingContract: terms.asset },
      types: TRANSFER_WITH_AUTHORIZATION_TYPES,
      primaryType: 'TransferWithAuthorization',
      message: authorization,
    });
    const text = (v: bigint) => v.toString();
    return {
      signature,
      authorization: { ...authorization, value: text(amount), validAfter: text(authorization.validAfter), validBefore: text(authorization.validBefore) },
    };
  }

  async #freeGot402(req: PaidRequest, res: Response): Promise<WalletError> {
    let asked: bigint | undefined;
    try {
      const body = (await res.json()) as { accepts?: { maxAmountRequired?: string }[] };
      const a = body.accepts?.[0]?.maxAmountRequired;
      if (a && /^\d+$/.test(a)) asked = BigInt(a);
    } catch {
      // no readable requirements
    }
    if (asked === undefined || asked <= usdcToAtomic(req.quote)) {
      return new WalletError(
        'no_wallet',
        `${req.action} needs a wallet (${asked ? `it costs ${atomicToUsdc(asked)} USDC` : 'a zero-value signature proves who owns the apps'}) but none is configured; nothing was paid. ${GET_A_WALLET}`,
      );
    }
    return new WalletError(
      'price_drift',
      `Refused to pay for ${req.action}: it was quoted ${req.quote} USDC but the service now asks ${atomicToUsdc(asked)} USDC, and no wallet is configured anyway. Nothing was paid.`,
      'none',
      { quoted: req.quote, price: atomicToUsdc(asked) },
    );
  }

  /** On-chain USDC balance of this wallet (null with a note when no RPC is known). */
  async balance(): Promise<{ balance: string | null; note?: string }> {
    if (!this.#account) return { balance: null, note: 'no wallet configured' };
    let terms: PaymentTerms;
    try {
      terms = await this.terms();
    } catch (e) {
      return { balance: null, note: (e as Error).message };
    }
    const rpcUrl = this.config.rpcUrl ?? terms.rpcUrl;
    if (!rpcUrl) return { balance: null, note: 'no RPC URL known: set SVC_RPC_URL to read the on-chain balance' };
    try {
      const client = createPublicClient({ transport: http(rpcUrl, { timeout: 5_000, retryCount: 0 }) });
      const raw = await client.readContract({ address: terms.asset, abi: erc20Abi, functionName: 'balanceOf', args: [this.#account.address] });
      return { balance: atomicToUsdc(raw) };
    } catch (e) {
      return { balance: null, note: `balance read failed: ${(e as Error).message.split('\n')[0]}` };
    }
  }

  /** Everything wallet_status shows (and the wallet view draws): one place builds it. */
  async status(): Promise<WalletStatus> {
    const { pending } = await this.resolvePending();
    const totals = await this.ledger.totals();
    const caps = this.config.caps;
    const h = headroom(totals, caps);
    const perTool = (of: (tool: string, cap: bigint) => bigint) =>
      Object.fromEntries([...(caps.perTool ?? [])].map(([tool, cap]) => [tool, atomicToUsdc(of(tool, cap))]));
    let pinsNote: string | undefined;
    const pins = await this.payees.list().catch((e: unknown) => {
      pinsNote = (e as Error).message;
      return {};
    });
    const pinned = Object.entries(pins).map(([serviceUrl, p]) => ({
      serviceUrl,
      recipient: p.recipient,
      network: p.network,
      asset: p.asset,
      pinnedAt: new Date(p.pinnedAt).toISOString(),
      source: p.source,
    }));
    let terms: PaymentTerms | undefined;
    try {
      terms = await this.terms();
    } catch {
      terms = undefined;
    }
    const bal = await this.balance();
    return {
      configured: this.#account !== undefined,
      address: this.address,
      serviceUrl: this.config.serviceUrl,
      network: terms?.caip2 ?? null,
      asset: terms?.asset ?? null,
      recipient: terms?.recipient ?? null,
      balance: bal.balance,
      ...(bal.note ? { balanceNote: bal.note } : {}),
      spent: {
        session: atomicToUsdc(totals.session),
        day: atomicToUsdc(totals.day),
        total: atomicToUsdc(totals.total),
        perTool: perTool((tool) => totals.byTool?.get(tool) ?? 0n),
        paidCallsLastHour: totals.signedLastHour?.length ?? 0,
      },
      caps: {
        perCall: atomicToUsdc(caps.perCall),
        perSession: atomicToUsdc(caps.perSession),
        perDay: atomicToUsdc(caps.perDay),
        total: caps.total === undefined ? null : atomicToUsdc(caps.total),
        perTool: perTool((_tool, cap) => cap),
        paidCallsPerHour: caps.callsPerHour ?? null,
      },
      headroom: {
        session: atomicToUsdc(h.session),
        day: atomicToUsdc(h.day),
        total: h.total === undefined ? null : atomicToUsdc(h.total),
        nextCall: atomicToUsdc(h.next),
        perTool: perTool((tool) => h.perTool.get(tool)!),
        paidCallsThisHour: h.callsThisHour ?? null,
        ...(h.nextCallAt !== undefined ? { nextPaidCallAt: new Date(h.nextCallAt).toISOString() } : {}),
      },
      approvalAbove: this.config.approvalAbove === undefined ? null : atomicToUsdc(this.config.approvalAbove),
      payees: { payTo: this.config.payTo ?? null, pinned, ...(pinsNote ? { note: pinsNote } : {}) },
      ledger: this.config.ledgerPath,
      pending,
    };
  }
}

export function createWallet(config: WalletConfig, options: WalletOptions = {}): Wallet {
  return new Wallet(config, options);
}
