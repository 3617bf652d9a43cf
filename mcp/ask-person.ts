import { createHash, createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import {
  CLIENT_CAPABILITIES_META_KEY,
  type ElicitRequestFormParams,
  type InputRequiredResult,
  inputRequired,
  inputResponse,
  type ServerContext,
} from '@modelcontextprotocol/server';

/**
 * Asking the person during a tool call on a stateless endpoint (MCP 2026-07-28 `input_required`):
 * the call answers with a form elicitation and a sealed `requestState`; the client asks the person
 * and repeats the call with the answer and the state, which may reach any node.
 *
 * The state is sealed here, not trusted: HMAC-SHA256 with the service's key over a random id, an
 * expiry, and a digest of what it approves (the tool, its arguments, the caller's credential). A
 * state that is forged, expired, for another call or caller, or used before is refused; "used" is
 * recorded where every node sees it (`UsedRequestStates`), so a replay on another node is refused too.
 *
 * Only a request that declares the elicitation capability in its per-request envelope is asked; any
 * other (every 2025-era request on stateless HTTP, which has no way back to the client) gets
 * `cannot-ask`, and the tool does what it did before (its annotations let the host confirm).
 */

/** Where a state's id is claimed once, on any node; `true` for the first claim only. */
export interface UsedRequestStates {
  claim(id: string, expiresAt: Date): Promise<boolean>;
}

/** What a sealed state approves: one tool call, with these arguments, by this caller. */
export interface AskedCall {
  tool: string;
  args: unknown;
  /** The caller's credential (or any string that names the caller); only its digest is sealed. */
  caller: string;
}

/** The question: a form elicitation (`message`, and the form's `requestedSchema`). */
export type Question = Pick<ElicitRequestFormParams, 'message' | 'requestedSchema'>;

export type Asked =
  /** Return `result` from the tool handler: the client asks the person and repeats the call. */
  | { kind: 'ask'; result: InputRequiredResult }
  /** The client cannot be asked (no elicitation capability, or the 2025 era): do what the tool did before. */
  | { kind: 'cannot-ask' }
  /** The person answered the form: `content` holds its fields. */
  | { kind: 'accepted'; content: Record<string, unknown> }
  | { kind: 'declined' }
  | { kind: 'cancelled' }
  /** The repeated call's state is not valid for it (`why` is said to the agent); nothing may be done. */
  | { kind: 'refused'; why: string };

interface Sealed {
  /** Random; claimed once in UsedRequestStates. */
  id: string;
  /** Expiry, ms since the epoch. */
  exp: number;
  /** Digest of the tool, its arguments and the caller. */
  call: string;
}

/** The key of the answer in `inputRequests` / `inputResponses`. */
const ANSWER = 'answer';

export class PersonAsker {
  readonly #key: Buffer;
  readonly #ttlMs: number;
  readonly #used: UsedRequestStates;
  readonly #now: () => number;

  constructor(options: { key: string | Buffer; used: UsedRequestStates; ttlSeconds?: number; now?: () => number }) {
    this.#key = Buffer.isBuffer(options.key) ? options.key : Buffer.from(options.key);
    this.#used = options.used;
    this.#ttlMs = (options.ttlSeconds ?? 600) * 1000;
    this.#now = options.now ?? Date.now;
  }

  /**
   * The first call: `ask` (or `cannot-ask`). The repeated call, with the client's answer and the
   * state: the person's answer, or `refused`.
   */
  async ask(ctx: ServerContext, call: AskedCall, question: Question): Promise<Asked> {
    const state = ctx.mcpReq.requestState<string>();
    if (state === undefined) {
      if (!canElicit(ctx)) return { kind: 'cannot-ask' };
      const sealed: Sealed = { id: randomUUID(), exp: this.#now() + this.#ttlMs, call: callDigest(call) };
      return {
        kind: 'ask',
        result: inputRequired({ inputRequests: { [ANSWER]: inputRequired.elicit({ mode: 'form', ...question } as never) }, requestState: this.#seal(sealed) }),
      };
    }
    const sealed = this.#open(state);
    if (!sealed) return { kind: 'refused', why: 'the confirmation state was not made by this service' };
    if (sealed.exp <= this.#now()) return { kind: 'refused', why: 'the confirmation expired' };
    if (sealed.call !== callDigest(call)) return { kind: 'refused', why: 'the confirmation was given for another call' };
    if (!(await this.#used.claim(sealed.id, new Date(sealed.exp)))) return { kind: 'refused', why: 'the confirmation was used already' };
    const answer = inputResponse(ctx.mcpReq.inputResponses, ANSWER);
    if (answer.kind !== 'elicit') return { kind: 'cancelled' };
    if (answer.action === 'accept') return { kind: 'accepted', content: answer.content ?? {} };
    return { kind: answer.action === 'decline' ? 'declined' : 'cancelled' };
  }

  #seal(sealed: Sealed): string {
    const body = Buffer.from(JSON.stringify(sealed)).toString('base64url');
    return `${body}.${this.#mac(body)}`;
  }

  #open(state: string): Sealed | undefined {
    const [body, mac, extra] = state.split('.');
    if (!body || !mac || extra !== undefined) return undefined;
    const expected = Buffer.from(this.#mac(body));
    const given = Buffer.from(mac);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    try {
      return JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Sealed;
    } catch {
      return undefined;
    }
  }

  #mac(body: string): string {
    return createHmac('sha256', this.#key).update(body).digest('base64url');
  }
}

/** Whether this request's client can be asked: a 2026 envelope that declares elicitation (form). */
function canElicit(ctx: ServerContext): boolean {
  const envelope = ctx.mcpReq.envelope as Record<string, { elicitation?: { form?: unknown; url?: unknown } } | undefined> | undefined;
  const elicitation = envelope?.[CLIENT_CAPABILITIES_META_KEY]?.elicitation;
  if (!elicitation) return false;
  // A bare `elicitation: {}` means form (the spec's default); `{url: {}}` alone does not.
  return elicitation.form !== undefined || elicitation.url === undefined;
}

function callDigest(call: AskedCall): string {
  return createHash('sha256')
    .update(JSON.stringify([call.tool, canonical(call.args ?? {}), createHash('sha256').update(call.caller).digest('base64url')]))
    .digest('base64url');
}

/** Objects with their keys sorted, at every depth: the same arguments give the same digest. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
  );
}

/** One process's used states (svc-mcp: one process serves its client); expired ones are forgotten. */
export function usedStatesInMemory(now: () => number = Date.now): UsedRequestStates {
  const used = new Map<string, number>();
  return {
    async claim(id, expiresAt) {
      for (const [k, exp] of used) if (exp <= now()) used.delete(k);
      if (used.has(id)) return false;
      used.set(id, expiresAt.getTime());
      return true;
    },
  };
}
