import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const scrypt = (password: string, salt: Buffer, keylen: number, options: ScryptOptions) =>
  new Promise<Buffer>((resolve, reject) => scryptCb(password, salt, keylen, options, (err, key) => (err ? reject(err) : resolve(key))));

/**
 * log2 of scrypt's N. scrypt is memory-hard: N=2^15, r=8 needs 32 MiB and ~0.2 s of CPU per guess
 * (OWASP's recommended minimum), the default. SVC_PASSWORD_HASH_COST raises it; lower values are for
 * test runs only (the service warns at start).
 */
export const DEFAULT_PASSWORD_HASH_COST = 15;
export const PASSWORD_HASH_COSTS = { min: 10, max: 18 } as const;
const R = 8;
const P = 1;
/** scrypt needs 128·N·r bytes; twice that leaves room. */
const maxmemFor = (n: number, r = R) => 2 * 128 * n * r;

/** `scrypt$N$r$p$salt$hash` (base64url parts), self-describing: a stored hash keeps verifying after the cost changes. */
export async function hashPassword(password: string, cost = DEFAULT_PASSWORD_HASH_COST): Promise<string> {
  const N = 2 ** cost;
  const salt = randomBytes(16);
  const key = await scrypt(password.normalize('NFKC'), salt, 32, { N, r: R, p: P, maxmem: maxmemFor(N) });
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [alg, n, r, p, salt, hash] = stored.split('$');
  if (alg !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const key = await scrypt(password.normalize('NFKC'), Buffer.from(salt, 'base64url'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: maxmemFor(Number(n), Number(r)),
  });
  return timingSafeEqual(key, expected);
}
