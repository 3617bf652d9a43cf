import fs from 'node:fs';
import { readWalletFile } from './wallet-file.js';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { atomicToUsdc } from '../shared/money.js';
import type { Caps } from './config.js';
import { WalletError } from './errors.js';
import { writeFileAtomically } from './atomic-file.js';
import { withFileLock } from './file-lock.js';

const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;

/**
 * One payment the wallet signed. `reserved`: the signed header is leaving or has left and the answer
 * is not in yet (a crash leaves it so: counted as spent); `committed`: the service answered with
 * success; `released`: the service definitely refused it without settling (not counted); `unknown`:
 * no definite answer (timeout, 5xx, connection lost: counted as spent).
 */
export const LedgerEntrySchema = z.object({
  id: z.string(),
  sessionId: z.string(),
  pid: z.number(),
  action: z.string(),
  /**
   * The tool the person's agent called, whose SVC_MAX_USDC_PER_TOOL cap the payment counts toward
   * (`deploy_site` for each of its steps); absent in older ledgers: the action's own tool.
   */
  tool: z.string().optional(),
  method: z.string(),
  url: z.string(),
  /** Atomic USDC units as a decimal integer string. */
  amount: z.string(),
  network: z.string(),
  recipient: z.string(),
  payer: z.string(),
  status: z.enum(['reserved', 'committed', 'released', 'unknown']),
  reservedAt: z.number(),
  settledAt: z.number().optional(),
  httpStatus: z.number().optional(),
  txHash: z.string().optional(),
  receiptId: z.string().optional(),
  receipt: z.record(z.string(), z.unknown()).optional(),
  note: z.string().optional(),
  /** The signed EIP-3009 authorization's nonce (0x…): how an unknown outcome is looked up on chain. */
  nonce: z.string().optional(),
  /** Its validBefore (unix seconds): past it, an authorization never used can never be charged. */
  validBefore: z.number().optional(),
});
export type LedgerEntry = z.infer<typeof LedgerEntrySchema>;

const LedgerFileSchema = z.object({ version: z.literal(1), entries: z.array(LedgerEntrySchema) });
type LedgerFile = z.infer<typeof LedgerFileSchema>;

export interface SpendTotals {
  session: bigint;
  day: bigint;
  total: bigint;
  /** Tool → what its calls spent over the rolling 24 h (absent: nothing counted). */
  byTool?: ReadonlyMap<string, bigint>;
  /** When each payment signed in the last hour was reserved (ms, oldest first), whatever its outcome. */
  signedLastHour?: readonly number[];
}

/** The tool a ledger entry counts toward: the one recorded, else its action's (`x402.publish_app` → publish_app). */
export const toolOfEntry = (e: Pick<LedgerEntry, 'tool' | 'action'>): string => e.tool ?? toolOfAction(e.action);
export const toolOfAction = (action: string) => action.replace(/^x402\./, '');

export interface Reservation {
  action: string;
  method: string;
  url: string;
  amount: bigint;
  /** The tool the agent called (default: the action's own): what its per-tool cap counts. */
  tool?: string;
  network: string;
  recipient: string;
  payer: string;
  /** The authorization's nonce and validBefore, when signed before the reservation (HTTP payments). */
  nonce?: string;
  validBefore?: number;
}

/** `httpStatus`: the paid HTTP request's status; absent for payments made over MCP `_meta`. */
export type Outcome =
  | { status: 'committed'; httpStatus?: number; txHash?: string; receipt?: Record<string, unknown> }
  | { status: 'released'; httpStatus?: number; note?: string }
  | { status: 'unknown'; httpStatus?: number; note?: string };

const counts = (e: LedgerEntry) => e.status !== 'released';

/**
 * The persisted spend ledger: a JSON file rewritten atomically (temp file + fsync + rename) under a
 * cross-process lock, so two processes sharing it (two MCP servers, a script) see each other's
 * spending and a daily cap holds across restarts. Also serialises callers inside this process, so
 * concurrent tool calls queue at the check-and-reserve instead of racing each other.
 */
export class SpendLedger {
  readonly sessionId = randomUUID();
  #queue: Promise<unknown> = Promise.resolve();

  constructor(
    readonly file: string,
    private readonly now: () => number = Date.now,
  ) {}

  #read(): LedgerFile {
    // A ledger we cannot read must stop payments, never reset the caps to zero.
    return readWalletFile(
      this.file,
      LedgerFileSchema,
      { version: 1, entries: [] },
      () =>
        new WalletError(
          'ledger_invalid',
          `The spend ledger ${this.file} is not a valid ledger file; nothing was paid. Move it aside (payments stay blocked until the file is fixed or replaced).`,
        ),
    );
  }

  #write(data: LedgerFile): void {
    fs.mkdirSync(path.dirname(this.file), { recursive: true, mode: 0o700 });
    writeFileAtomically(this.file, JSON.stringify(data, null, 1));
  }

  /** Runs `work` holding both the in-process queue and the file lock. */
  #exclusive<T>(work: () => T): Promise<T> {
    const run = this.#queue.then(() => {
      fs.mkdirSync(path.dirname(this.file), { recursive: true, mode: 0o700 });
      return withFileLock(this.file, work);
    });
    this.#queue = run.catch(() => undefined);
    return run;
  }

  #totals(entries: LedgerEntry[]): SpendTotals {
    const now = this.now();
    const since = now - DAY_MS;
    let session = 0n;
    let day = 0n;
    let total = 0n;
    const byTool = new Map<string, bigint>();
    const signedLastHour: number[] = [];
    for (const e of entries) {
      const a = BigInt(e.amount);
      // Every payment signed counts toward the hour's calls, refused or not: the limit is on signatures.
      if (a > 0n && e.reservedAt > now - HOUR_MS) signedLastHour.push(e.reservedAt);
      if (!counts(e)) continue;
      total += a;
      if (e.reservedAt > since) {
        day += a;
        const tool = toolOfEntry(e);
        byTool.set(tool, (byTool.get(tool) ?? 0n) + a);
      }
      if (e.sessionId === this.sessionId) session += a;
    }
    signedLastHour.sort((x, y) => x - y);
    return { session, day, total, byTool, signedLastHour };
  }

  async totals(): Promise<SpendTotals> {
    return this.#exclusive(() => this.#totals(this.#read().entries));
  }

  async entries(): Promise<LedgerEntry[]> {
    return this.#exclusive(() => this.#read().entries);
  }

  /**
   * The check-and-reserve: under the lock, the caps are checked against everything already counted
   * (this session, the rolling 24 h, all time, the tool's 24 h, the payments signed in the last
   * hour) and the entry is written before the lock is released. Throws `cap_exceeded` naming the cap,
   * its setting and its headroom when the amount does not fit.
   */
  async reserve(r: Reservation, caps: Caps): Promise<LedgerEntry> {
    return this.#exclusive(() => {
      const data = this.#read();
      const t = this.#totals(data.entries);
      const tool = r.tool ?? toolOfAction(r.action);
      assertWithinCaps(r.amount, t, caps, r.action, { tool });
      const entry: LedgerEntry = {
        id: randomUUID(),
        sessionId: this.sessionId,
        pid: process.pid,
        action: r.action,
        tool,
        method: r.method,
        url: r.url,
        amount: r.amount.toString(),
        network: r.network,
        recipient: r.recipient,
        payer: r.payer,
        status: 'reserved',
        reservedAt: this.now(),
        ...(r.nonce ? { nonce: r.nonce } : {}),
        ...(r.validBefore !== undefined ? { validBefore: r.validBefore } : {}),
      };
      data.entries.push(entry);
      this.#write(data);
      return entry;
    });
  }

  /** Records the authorization signed for a reservation made before signing (MCP payments). */
  async attachAuthorization(id: string, a: { nonce: string; validBefore: number }): Promise<void> {
    await this.#exclusive(() => {
      const data = this.#read();
      const entry = data.entries.find((e) => e.id === id);
      if (!entry) return;
      entry.nonce = a.nonce;
      entry.validBefore = a.validBefore;
      this.#write(data);
    });
  }

  /**
   * Settles `id` only if its outcome is still open (`unknown`, or `reserved` by a process that is
   * gone): what the chain later told about a payment never overwrites an answer recorded meanwhile.
   */
  async resolve(id: string, outcome: Outcome): Promise<LedgerEntry | undefined> {
    return this.settle(id, outcome, true);
  }

  async settle(id: string, outcome: Outcome, onlyIfOpen = false): Promise<LedgerEntry | undefined> {
    return this.#exclusive(() => {
      const data = this.#read();
      const entry = data.entries.find((e) => e.id === id);
      if (!entry) return undefined;
      if (onlyIfOpen && entry.status !== 'unknown' && entry.status !== 'reserved') return undefined;
      entry.status = outcome.status;
      entry.settledAt = this.now();
      if (outcome.httpStatus !== undefined) entry.httpStatus = outcome.httpStatus;
      if (outcome.status === 'committed') {
        if (outcome.txHash) entry.txHash = outcome.txHash;
        if (outcome.receipt) {
          entry.receipt = outcome.receipt;
          if (typeof outcome.receipt.receiptId === 'string') entry.receiptId = outcome.receipt.receiptId;
        }
      } else if (outcome.note) entry.note = outcome.note;
      this.#write(data);
      return entry;
    });
  }
}

export interface Headroom {
  perCall: bigint;
  session: bigint;
  day: bigint;
  total?: bigint;
  /** Each tool with a cap (SVC_MAX_USDC_PER_TOOL) → what is left of it over the rolling 24 h. */
  perTool: Map<string, bigint>;
  /** Payments that may still be signed this hour (SVC_MAX_PAID_CALLS_PER_HOUR); undefined: no limit. */
  callsThisHour?: number;
  /** When the oldest payment of the hour leaves it (ms), where the limit is reached. */
  nextCallAt?: number;
  /** The most one next payment may cost under every cap (of `tool`, where one is named). */
  next: bigint;
}

/** What is left of every cap. `tool`: the tool the next payment is for (its own cap applies too). */
export function headroom(t: SpendTotals, caps: Caps, tool?: string): Headroom {
  const pos = (x: bigint) => (x > 0n ? x : 0n);
  const session = pos(caps.perSession - t.session);
  const day = pos(caps.perDay - t.day);
  const total = caps.total === undefined ? undefined : pos(caps.total - t.total);
  const perTool = new Map<string, bigint>();
  for (const [name, cap] of caps.perTool ?? []) perTool.set(name, pos(cap - (t.byTool?.get(name) ?? 0n)));
  const signed = t.signedLastHour ?? [];
  const callsThisHour = caps.callsPerHour === undefined ? undefined : Math.max(0, caps.callsPerHour - signed.length);
  // The limit is reached: the next call may be signed once the oldest payments leave the hour.
  const nextCallAt = callsThisHour === 0 ? (signed[signed.length - caps.callsPerHour!] ?? 0) + HOUR_MS : undefined;
  let next = caps.perCall;
  for (const h of [session, day, total, tool === undefined ? undefined : perTool.get(tool)]) if (h !== undefined && h < next) next = h;
  if (callsThisHour === 0) next = 0n;
  return { perCall: caps.perCall, session, day, total, perTool, callsThisHour, nextCallAt, next };
}

/**
 * Refuses (`cap_exceeded`, nothing paid) a payment of `amount` for `action` that a cap cannot take
 * now, naming the cap, the setting that sets it and what is left. `scope.tool`: the tool whose
 * per-tool cap counts it (default: none checked); `scope.calls`: how many payments it takes (a
 * composite's plan: one per paid step; default 1).
 */
export function assertWithinCaps(amount: bigint, t: SpendTotals, caps: Caps, action: string, scope: { tool?: string; calls?: number } = {}): void {
  const h = headroom(t, caps);
  // A per-call cap is not used up: what is left of it is the cap itself, so it is not said.
  const fail = (cap: string, limit: bigint, left: bigint, hint: string) => {
    const remaining = cap === 'per-call' ? '' : ` and ${atomicToUsdc(left)} USDC of it is left`;
    throw new WalletError(
      'cap_exceeded',
      `Refused to pay ${atomicToUsdc(amount)} USDC for ${action}: the ${cap} cap is ${atomicToUsdc(limit)} USDC${remaining}. Nothing was paid. ${hint}`,
      'none',
      { cap, limit: atomicToUsdc(limit), headroom: atomicToUsdc(left), price: atomicToUsdc(amount) },
    );
  };
  if (amount > caps.perCall) fail('per-call', caps.perCall, caps.perCall, 'Ask the user to raise SVC_MAX_USDC_PER_CALL if this price is acceptable.');
  if (amount > h.session)
    fail('per-session', caps.perSession, h.session, 'The session cap resets when the MCP server restarts; the user can raise SVC_MAX_USDC_PER_SESSION.');
  if (amount > h.day)
    fail('rolling 24-hour', caps.perDay, h.day, 'Wait until older payments leave the 24-hour window, or ask the user to raise SVC_MAX_USDC_PER_DAY.');
  if (caps.total !== undefined && h.total !== undefined && amount > h.total) fail('lifetime', caps.total, h.total, 'Ask the user to raise SVC_MAX_USDC_TOTAL.');
  const toolCap = scope.tool === undefined ? undefined : caps.perTool?.get(scope.tool);
  if (toolCap !== undefined && amount > h.perTool.get(scope.tool!)!)
    fail(
      `${scope.tool} rolling 24-hour`,
      toolCap,
      h.perTool.get(scope.tool!)!,
      `Wait until its older payments leave the 24-hour window, or ask the user to raise ${scope.tool} in SVC_MAX_USDC_PER_TOOL.`,
    );
  const calls = scope.calls ?? 1;
  if (amount > 0n && h.callsThisHour !== undefined && calls > h.callsThisHour) {
    const when = h.nextCallAt === undefined ? '' : ` The next payment may be signed after ${new Date(h.nextCallAt).toISOString()}.`;
    throw new WalletError(
      'cap_exceeded',
      `Refused to pay ${atomicToUsdc(amount)} USDC for ${action}: it takes ${calls} payment${calls === 1 ? '' : 's'} and the paid-calls-per-hour limit is ${caps.callsPerHour}, with ${h.callsThisHour} left in the last hour. Nothing was paid.${when} Wait, or ask the user to raise SVC_MAX_PAID_CALLS_PER_HOUR.`,
      'none',
      { cap: 'paid calls per hour', limit: caps.callsPerHour, headroom: h.callsThisHour, price: atomicToUsdc(amount) },
    );
  }
}
