import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { bytesToHex, hashTypedData, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import { TRANSFER_WITH_AUTHORIZATION_TYPES } from '../../shared/agent-api/network.js';
import { transferAuthorizationDigest, transferSigner } from '../../service/payments/transfer-signature.js';
import { transferAuthorizationTypedData } from '../../service/payments/verify-payment.js';
import { DEV_RECIPIENT } from '../../service/payments/x402-config.js';
import { signAuthorization } from './helpers.js';

const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const hex = (bytes: number) => fc.uint8Array({ minLength: bytes, maxLength: bytes }).map((b) => bytesToHex(b));
const uint256 = fc.bigInt({ min: 0n, max: (1n << 256n) - 1n }).map(String);

describe('the EIP-3009 digest and its signer (service/payments/transfer-signature.ts)', () => {
  it("equals viem's hashTypedData of the same authorization in USDC's domain, for any field values", () => {
    fc.assert(
      fc.property(hex(20), hex(20), uint256, uint256, uint256, hex(32), (from, to, value, validAfter, validBefore, nonce) => {
        const a = { from, to, value, validAfter, validBefore, nonce };
        expect(bytesToHex(transferAuthorizationDigest(a))).toBe(hashTypedData(transferAuthorizationTypedData(a)));
      }),
      { numRuns: 300 },
    );
    expect(TRANSFER_WITH_AUTHORIZATION_TYPES.TransferWithAuthorization.map((f) => f.name)).toEqual([
      'from',
      'to',
      'value',
      'validAfter',
      'validBefore',
      'nonce',
    ]);
  });

  it('recovers the wallet that signed (as x402 clients sign, with viem)', async () => {
    for (let i = 0; i < 20; i++) {
      const account = privateKeyToAccount(generatePrivateKey());
      const p = await signAuthorization(account, { to: DEV_RECIPIENT, value: BigInt(1 + i) });
      expect(await transferSigner(p.authorization, p.signature)).toBe(account.address.toLowerCase());
      // Another authorization's fields: another digest, so another (unrelated) key.
      const other = await transferSigner({ ...p.authorization, value: String(2 + i) }, p.signature);
      expect(other).not.toBe(account.address.toLowerCase());
    }
  });

  it('refuses what USDC would refuse: a high s (the twin of a valid signature), v other than 27/28, another length', async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const { authorization, signature } = await signAuthorization(account, { to: DEV_RECIPIENT, value: 1000n });
    const r = signature.slice(2, 66);
    const s = BigInt(`0x${signature.slice(66, 130)}`);
    const v = Number.parseInt(signature.slice(130), 16);
    const highS = `0x${r}${(N - s).toString(16).padStart(64, '0')}${(v === 27 ? 28 : 27).toString(16)}` as Hex;
    expect(await transferSigner(authorization, highS)).toBeUndefined();
    expect(await transferSigner(authorization, `0x${signature.slice(2, 130)}${(v - 27).toString(16).padStart(2, '0')}`)).toBeUndefined();
    expect(await transferSigner(authorization, `0x${signature.slice(2, 130)}` as Hex)).toBeUndefined();
    expect(await transferSigner(authorization, `${signature}00` as Hex)).toBeUndefined();
    expect(await transferSigner(authorization, `0x${r}${'0'.repeat(64)}1b`)).toBeUndefined();
    expect(await transferSigner(authorization, `0x${'f'.repeat(64)}${signature.slice(66)}` as Hex)).toBeUndefined(); // r ≥ n
    expect(await transferSigner({ ...authorization, nonce: `0x${randomBytes(31).toString('hex')}` }, signature)).toBeUndefined();
    expect(await transferSigner({ ...authorization, value: (1n << 256n).toString() }, signature)).toBeUndefined();
  });
});
