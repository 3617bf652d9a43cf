import { domainSeparator, hexToBytes, keccak256, stringToBytes, type Address, type Hex } from 'viem';
import { BASE_CHAIN_ID, USDC_ADDRESS, USDC_EIP712_NAME, USDC_EIP712_VERSION } from '../../shared/agent-api/network.js';
import type { Authorization } from '../../shared/agent-api/payment-requirements.js';
import { libsecp256k1 } from './secp256k1.js';

/**
 * The EIP-712 digest of an EIP-3009 TransferWithAuthorization for USDC on chain 8453, and the key that
 * signed it, the way USDC's own `ECRecover` accepts a signature. Built by hand for speed (every paid
 * call checks one): the domain separator and the type hash are fixed, so the digest is one 224-byte
 * struct hashed and one 66-byte envelope hashed; a test checks it against viem's `hashTypedData`.
 */

const TYPE_HASH = keccak256(
  stringToBytes('TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)'),
  'bytes',
);
const DOMAIN_SEPARATOR = hexToBytes(
  domainSeparator({ domain: { name: USDC_EIP712_NAME, version: USDC_EIP712_VERSION, chainId: BASE_CHAIN_ID, verifyingContract: USDC_ADDRESS } }),
);
const UINT256_MAX = (1n << 256n) - 1n;
/** Half the curve order: USDC (like OpenZeppelin's ECDSA) refuses an `s` above it (EIP-2). */
const HALF_N = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n;

function putWord(out: Uint8Array, word: number, value: bigint): void {
  if (value < 0n || value > UINT256_MAX) throw new RangeError('not a uint256');
  let v = value;
  for (let i = 31; i >= 0 && v > 0n; i--) {
    out[word * 32 + i] = Number(v & 0xffn);
    v >>= 8n;
  }
}

function putBytes(out: Uint8Array, word: number, hex: string, size: 20 | 32): void {
  const bytes = hexToBytes(hex as Hex);
  if (bytes.length !== size) throw new RangeError(`expected ${size} bytes`);
  out.set(bytes, word * 32 + 32 - size);
}

/** hashTypedData of the authorization in USDC's domain on chain 8453. Throws on a malformed field. */
export function transferAuthorizationDigest(a: Authorization): Uint8Array {
  const struct = new Uint8Array(7 * 32);
  struct.set(TYPE_HASH, 0);
  putBytes(struct, 1, a.from, 20);
  putBytes(struct, 2, a.to, 20);
  putWord(struct, 3, BigInt(a.value));
  putWord(struct, 4, BigInt(a.validAfter));
  putWord(struct, 5, BigInt(a.validBefore));
  putBytes(struct, 6, a.nonce, 32);
  const envelope = new Uint8Array(2 + 32 + 32);
  envelope[0] = 0x19;
  envelope[1] = 0x01;
  envelope.set(DOMAIN_SEPARATOR, 2);
  envelope.set(keccak256(struct, 'bytes'), 34);
  return keccak256(envelope, 'bytes');
}

/**
 * The address (lower case) whose key made `signature` over the authorization, or undefined when the
 * signature is not one USDC's `ECRecover` would take from a plain key: 65 bytes, v 27 or 28, s in the
 * lower half of the curve order. (A smart account's signature is none of these: the chain checks it.)
 * libsecp256k1 (secp256k1.ts) recovers in about a fifth of the time of the JS implementation viem uses.
 */
export async function transferSigner(a: Authorization, signature: Hex): Promise<Address | undefined> {
  if (signature.length !== 2 + 65 * 2) return undefined;
  const sig = hexToBytes(signature);
  const v = sig[64]!;
  if (v !== 27 && v !== 28) return undefined;
  const s = BigInt(`0x${signature.slice(66, 130)}`);
  if (s === 0n || s > HALF_N) return undefined;
  let digest: Uint8Array;
  try {
    digest = transferAuthorizationDigest(a);
  } catch {
    return undefined;
  }
  const secp256k1 = await libsecp256k1();
  let publicKey: Uint8Array | null;
  try {
    publicKey = secp256k1.recover(digest, sig.subarray(0, 64), (v - 27) as 0 | 1, false);
  } catch {
    return undefined; // r or s out of range, or no point for r
  }
  if (!publicKey) return undefined;
  return `0x${keccak256(publicKey.subarray(1)).slice(-40)}` as Address;
}
