import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The cookie that unlocks a password-protected site: `<expiry>.<hmac>` over the site id, the
 * expiry and the current password hash, so changing the password signs everyone out.
 */
export const UNLOCK_TTL_SECONDS = 7 * 24 * 3600;

export function unlockCookieName(siteId: string): string {
  return `svc_site_${siteId}`;
}

function mac(secret: string, siteId: string, passwordHash: string, exp: number): Buffer {
  return createHmac('sha256', secret).update(`site-unlock:${siteId}:${exp}:${passwordHash}`).digest();
}

export function signUnlockCookie(secret: string, siteId: string, passwordHash: string, nowMs: number): string {
  const exp = Math.floor(nowMs / 1000) + UNLOCK_TTL_SECONDS;
  return `${exp}.${mac(secret, siteId, passwordHash, exp).toString('base64url')}`;
}

export function verifyUnlockCookie(secret: string, siteId: string, passwordHash: string, value: string | undefined, nowMs: number): boolean {
  if (!value) return false;
  const [expText, sig] = value.split('.');
  const exp = Number(expText);
  if (!Number.isInteger(exp) || !sig || exp * 1000 <= nowMs) return false;
  const expected = mac(secret, siteId, passwordHash, exp);
  const given = Buffer.from(sig, 'base64url');
  return given.length === expected.length && timingSafeEqual(given, expected);
}
