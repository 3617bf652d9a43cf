import { describe, expect, it } from 'vitest';
import { SettlerSends, type FilledTransaction, type SettlerSend } from '../../service/payments/settler-sends.js';

const TO = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913' as const;
const request = (i: number): SettlerSend => ({ to: TO, data: `0x${i.toString(16).padStart(2, '0')}` });

/**
 * A node as the settler's sends see it: `fill` answers the pending nonce and the fees of the moment,
 * a send whose nonce another sender took is refused as geth refuses it, and every exchange takes a
 * few milliseconds (so sends made meanwhile wait for the next turn).
 */
function fakeNode() {
  const node = {
    pending: 5,
    fees: { maxFeePerGas: 100n, maxPriorityFeePerGas: 2n },
    turns: [] as { data: string; nonce: number; maxFeePerGas: bigint }[][],
    fills: 0,
    refuseFill: new Set<string>(),
    refuseSend: new Map<string, string>(),
    takenBeforeSend: 0,
  };
  let turn: (typeof node.turns)[number] | undefined;
  const later = () => new Promise((r) => setTimeout(r, 3));
  const sends = new SettlerSends({
    async fill(r): Promise<FilledTransaction> {
      node.fills++;
      turn = undefined;
      const filled = { type: 'eip1559', chainId: 8453, to: r.to, data: r.data, gas: 60_000n, nonce: node.pending, ...node.fees } as const;
      await later();
      if (node.refuseFill.has(r.data)) throw new Error('execution reverted: FiatTokenV2: authorization is used or canceled');
      return filled;
    },
    async signAndSend(tx) {
      if (!turn) {
        turn = [];
        node.turns.push(turn);
        // Another node with the same key sends meanwhile.
        node.pending += node.takenBeforeSend;
        node.takenBeforeSend = 0;
      }
      turn.push({ data: tx.data!, nonce: tx.nonce, maxFeePerGas: tx.maxFeePerGas });
      await later();
      const refusal = node.refuseSend.get(tx.data!);
      if (refusal) {
        node.refuseSend.delete(tx.data!);
        throw new Error(refusal);
      }
      if (tx.nonce < node.pending) throw new Error('nonce too low: next nonce 9, tx nonce 7');
      node.pending = Math.max(node.pending, tx.nonce + 1);
      return { hash: `0x${String(tx.nonce).padStart(64, '0')}` };
    },
  });
  return { node, sends };
}

describe("the settler key's sends (service/payments/settler-sends.ts)", () => {
  it('sends made while a turn runs go together in the next one: consecutive nonces from the pending one, all at the highest fees', async () => {
    const { node, sends } = fakeNode();
    const first = sends.send(request(0));
    await new Promise((r) => setTimeout(r, 1)); // the first turn is under way
    node.fees = { maxFeePerGas: 140n, maxPriorityFeePerGas: 3n };
    const rest = [1, 2, 3, 4].map((i) => sends.send(request(i)));
    const sent = await Promise.all([first, ...rest]);
    expect(sent.map((s) => s.nonce)).toEqual([5, 6, 7, 8, 9]);
    expect(node.turns.map((t) => t.map((s) => s.nonce))).toEqual([[5], [6, 7, 8, 9]]);
    expect(node.turns[1]!.map((s) => s.maxFeePerGas)).toEqual([140n, 140n, 140n, 140n]);
    expect(node.fills).toBe(5);
    expect(sends.counts).toEqual({ turns: 2, sent: 5 });
  });

  it('a send that would revert is answered with its error and takes no nonce: the others of its turn leave no gap', async () => {
    const { node, sends } = fakeNode();
    node.refuseFill.add(request(1).data);
    const results = await Promise.allSettled([0, 1, 2].map((i) => sends.send(request(i))));
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason.message).toMatch(/authorization is used/);
    expect(node.turns).toEqual([
      [
        { data: request(0).data, nonce: 5, maxFeePerGas: 100n },
        { data: request(2).data, nonce: 6, maxFeePerGas: 100n },
      ],
    ]);
    expect(node.pending).toBe(7);
  });

  it('a send whose nonce another sender took joins a later turn with a fresh nonce; every send lands once', async () => {
    const { node, sends } = fakeNode();
    node.takenBeforeSend = 2; // another node takes 5 and 6 between this turn's fill and its sends
    const sent = await Promise.all([0, 1, 2].map((i) => sends.send(request(i))));
    // 5 and 6 were refused; 7 landed; the two refused sends went again (each after its own jittered
    // pause, in one later turn or two), at 8 and 9.
    expect(node.turns[0]!.map((s) => [s.data, s.nonce])).toEqual([
      [request(0).data, 5],
      [request(1).data, 6],
      [request(2).data, 7],
    ]);
    expect(
      node.turns
        .slice(1)
        .flat()
        .map((s) => s.data)
        .sort(),
    ).toEqual([request(0).data, request(1).data]);
    expect(sent[2]!.nonce).toBe(7);
    expect([sent[0]!.nonce, sent[1]!.nonce].sort()).toEqual([8, 9]);
    expect(new Set(sent.map((s) => s.hash)).size).toBe(3);
  });

  it('a send refused for another reason is answered with that error, not sent again', async () => {
    const { node, sends } = fakeNode();
    node.refuseSend.set(request(0).data, 'insufficient funds for gas * price + value');
    await expect(sends.send(request(0))).rejects.toThrow(/insufficient funds for gas/);
    expect(node.turns).toHaveLength(1);
    expect(await sends.send(request(1))).toMatchObject({ nonce: 5 });
  });

  it('a turn that fails as a whole answers each of its sends with the error, and later sends still get a turn', async () => {
    let broken = true;
    const sends = new SettlerSends({
      fill: (r) => {
        if (broken) throw new Error('the node client threw before any request');
        return Promise.resolve({ type: 'eip1559', chainId: 8453, to: r.to, data: r.data, gas: 60_000n, nonce: 3, maxFeePerGas: 1n, maxPriorityFeePerGas: 1n });
      },
      signAndSend: async (tx) => ({ hash: `0x${String(tx.nonce).padStart(64, '0')}` }),
    });
    const failed = await Promise.allSettled([sends.send(request(0)), sends.send(request(1))]);
    expect(failed.map((r) => (r.status === 'rejected' ? (r.reason as Error).message : 'sent'))).toEqual([
      'the node client threw before any request',
      'the node client threw before any request',
    ]);
    broken = false;
    expect(await sends.send(request(2))).toMatchObject({ nonce: 3 });
  });
});
