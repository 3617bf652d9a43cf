/**
 * USDC amounts: decimal strings for people ("0.007"), bigint atomic units for the wire (6 decimals).
 * Integer math only: x402's own float conversion yields "7900.000000000001" for "$0.0079".
 */
export const USDC_DECIMALS = 6;
const SCALE = 10n ** BigInt(USDC_DECIMALS);
const DECIMAL = /^(0|[1-9]\d*)(?:\.(\d{1,6}))?$/;

export function usdcToAtomic(decimal: string): bigint {
  const m = DECIMAL.exec(decimal.trim());
  if (!m) throw new Error(`not a USDC amount with at most ${USDC_DECIMALS} decimals: "${decimal}"`);
  const whole = BigInt(m[1]!);
  const frac = BigInt((m[2] ?? '').padEnd(USDC_DECIMALS, '0'));
  return whole * SCALE + frac;
}

export function atomicToUsdc(atomic: bigint): string {
  if (atomic < 0n) return `-${atomicToUsdc(-atomic)}`;
  const whole = atomic / SCALE;
  const frac = (atomic % SCALE).toString().padStart(USDC_DECIMALS, '0').replace(/0+$/, '');
  return frac ? `${whole}.${frac}` : `${whole}`;
}

export function isUsdcAmount(text: string): boolean {
  return DECIMAL.test(text.trim());
}
