type Secp256k1 = typeof import('tiny-secp256k1');
let loaded: Promise<Secp256k1> | undefined;

/**
 * libsecp256k1 compiled to wasm (tiny-secp256k1), loaded on first use: it recovers a payer's key and
 * signs the settler's transactions in a fifth to a third of the time of the JavaScript
 * implementation (@noble/curves) viem uses (docs/performance.md, "Paid calls").
 */
export function libsecp256k1(): Promise<Secp256k1> {
  loaded ??= import('tiny-secp256k1');
  return loaded;
}
