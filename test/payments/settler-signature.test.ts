import fc from 'fast-check';
import { bytesToHex, parseTransaction, recoverTransactionAddress, type TransactionSerializableEIP1559 } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import { signSettlerTransaction } from '../../service/payments/settler-signature.js';

const address = fc.uint8Array({ minLength: 20, maxLength: 20 }).map((b) => bytesToHex(b));
const data = fc.uint8Array({ minLength: 0, maxLength: 300 }).map((b) => bytesToHex(b));
const wei = fc.bigInt({ min: 1n, max: 10n ** 12n });

describe("the settler's transaction signature (service/payments/settler-signature.ts)", () => {
  it("is byte for byte viem's signTransaction (RFC 6979, low s) for any EIP-1559 transaction, and recovers to the settler", async () => {
    await fc.assert(
      fc.asyncProperty(
        address,
        data,
        fc.integer({ min: 0, max: 1_000_000 }),
        fc.bigInt({ min: 21_000n, max: 10_000_000n }),
        wei,
        wei,
        async (to, input, nonce, gas, priority, base) => {
          const key = generatePrivateKey();
          const tx: TransactionSerializableEIP1559 = {
            type: 'eip1559',
            chainId: 8453,
            to,
            data: input,
            nonce,
            gas,
            maxPriorityFeePerGas: priority,
            maxFeePerGas: base + priority,
          };
          const signed = await signSettlerTransaction(tx, key);
          expect(signed).toBe(await privateKeyToAccount(key).signTransaction(tx));
          expect(await recoverTransactionAddress({ serializedTransaction: signed as never })).toBe(privateKeyToAccount(key).address);
          expect(parseTransaction(signed).nonce).toBe(nonce);
        },
      ),
      { numRuns: 150 },
    );
  });
});
