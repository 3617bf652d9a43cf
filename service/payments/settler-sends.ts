import type { Address, Hex, TransactionReceipt, TransactionSerializableEIP1559 } from 'viem';
import type { Logger } from '../kernel/logger.js';

/** A transaction the settler key is asked to send. */
export interface SettlerSend {
  to: Address;
  data: Hex;
}

/** A transaction the settler sent, with the nonce it was signed with (a replacement is told by it). */
export interface SettlerTransaction {
  hash: Hex;
  nonce: number;
  /** Its receipt, when the send returned it (a chain that mines on arrival). */
  receipt?: TransactionReceipt;
}

/** What the node filled in: the gas (a simulation), the account's pending nonce and the fees. */
export type FilledTransaction = TransactionSerializableEIP1559 & { nonce: number; maxFeePerGas: bigint; maxPriorityFeePerGas: bigint };

export interface SettlerSendsOptions {
  /** The node fills gas, pending nonce and fees; rejects when the transaction would revert. */
  fill(request: SettlerSend): Promise<FilledTransaction>;
  /** Signs the transaction with the settler key and sends it: its hash (and receipt, when the node answers with it). */
  signAndSend(transaction: FilledTransaction): Promise<{ hash: Hex; receipt?: TransactionReceipt }>;
  log?: Logger;
}

/**
 * The settler was refused a nonce another sender took (another node with the same key): the
 * transaction was refused before it could run, so sending it again with a fresh nonce is safe.
 */
const NONCE_TAKEN = /nonce (provided for the transaction )?(is )?(too low|lower than)|replacement transaction underpriced/i;
const SEND_ATTEMPTS = 8;
/** Sends in one turn at most (each is one request of the turn's two JSON-RPC batches). */
const MAX_PER_TURN = 32;

interface Queued {
  request: SettlerSend;
  attempt: number;
  resolve(sent: SettlerTransaction): void;
  reject(error: unknown): void;
}

/**
 * The settler key's sends, one turn at a time (its nonces must not collide), each turn taking every
 * send that waited for it: the node fills them all (one exchange when the transport batches), they
 * are signed with consecutive nonces from the pending one, and all are sent (one more exchange).
 * Two round trips a turn however many sends it holds, where one send a turn made a busy node's
 * settlements queue behind one another: each turn waits twice for the node and twice for the event
 * loop, ~14 ms a turn under the payments bench's load, which capped it near 70 settlements a second.
 *
 * Nonce and fees are read at the start of each turn, never counted across turns: a count kept by one
 * node goes stale when other nodes send with the same key, and a same-nonce send carrying older,
 * higher fees replaces another node's pending settlement. The turn's nonces start at the highest
 * pending nonce any fill saw (a lower one was taken meanwhile) and all carry the highest fees any
 * fill gave. A send refused because its nonce was taken (NONCE_TAKEN) waits a jittered moment and
 * joins a later turn (up to 8 times); a fill that fails (the settlement would revert) is answered
 * at once and takes no nonce.
 *
 * A send refused for another reason, after a later nonce of its turn was taken, leaves a gap: the
 * later transaction waits in the node's pool until the next turn's first send fills that nonce (the
 * pending nonce stops at the gap). Refusals of a filled, simulated transaction (the fees below the
 * node's floor, the settler's gas money spent, a full pool) refuse every send of a turn or its tail,
 * which leaves no gap; should one still wait past its receipt timeout, the payment is marked unpaid
 * and reconcile collects it once the chain shows the authorization used.
 */
export class SettlerSends {
  #queue: Queued[] = [];
  #turning = false;
  /** Turns taken and transactions sent in them (`npm run bench payments` prints sends per turn). */
  readonly counts = { turns: 0, sent: 0 };

  constructor(private readonly options: SettlerSendsOptions) {}

  send(request: SettlerSend): Promise<SettlerTransaction> {
    return new Promise((resolve, reject) => this.#enqueue({ request, attempt: 1, resolve, reject }));
  }

  #enqueue(q: Queued): void {
    this.#queue.push(q);
    if (this.#turning) return;
    this.#turning = true;
    // After the running code: sends asked for in the same run join the first turn.
    queueMicrotask(() => void this.#turns());
  }

  async #turns(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue.splice(0, MAX_PER_TURN);
        // Every send of a turn is answered, whatever happens to the turn (answering twice is a no-op).
        await this.#turn(batch).catch((e: unknown) => {
          for (const q of batch) q.reject(e);
        });
      }
    } finally {
      this.#turning = false;
    }
  }

  async #turn(batch: Queued[]): Promise<void> {
    const fills = await Promise.allSettled(batch.map((q) => this.options.fill(q.request)));
    const ready: { q: Queued; filled: FilledTransaction }[] = [];
    fills.forEach((f, i) => {
      if (f.status === 'fulfilled') ready.push({ q: batch[i]!, filled: f.value });
      else batch[i]!.reject(f.reason);
    });
    if (ready.length === 0) return;
    this.counts.turns++;
    const first = Math.max(...ready.map((r) => r.filled.nonce));
    const maxFeePerGas = maxOf(ready.map((r) => r.filled.maxFeePerGas));
    const maxPriorityFeePerGas = maxOf(ready.map((r) => r.filled.maxPriorityFeePerGas));
    const sends = await Promise.allSettled(
      ready.map((r, i) => this.options.signAndSend({ ...r.filled, nonce: first + i, maxFeePerGas, maxPriorityFeePerGas })),
    );
    sends.forEach((s, i) => {
      const { q } = ready[i]!;
      if (s.status === 'fulfilled') {
        this.counts.sent++;
        q.resolve({ ...s.value, nonce: first + i });
      } else if (q.attempt < SEND_ATTEMPTS && NONCE_TAKEN.test(errorMessage(s.reason))) this.#sendAgain(q);
      else q.reject(s.reason);
    });
  }

  /** Jittered: two nodes that collided should not collide again at once. */
  #sendAgain(q: Queued): void {
    this.options.log?.info('settler transaction sent again: another sender took its nonce', { attempt: q.attempt, to: q.request.to });
    setTimeout(() => this.#enqueue({ ...q, attempt: q.attempt + 1 }), 10 + Math.random() * 40 * q.attempt);
  }
}

/** The largest of some bigints (Math.max takes numbers only). */
function maxOf(values: bigint[]): bigint {
  let max = values[0]!;
  for (const v of values) if (v > max) max = v;
  return max;
}

function errorMessage(e: unknown): string {
  return e instanceof Error ? `${(e as { shortMessage?: string }).shortMessage ?? ''} ${e.message}` : String(e);
}
