import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { and, eq, gt, lt } from 'drizzle-orm';
import type { Context } from 'hono';
import { deleteCookie, getCookie, getSignedCookie, setCookie, setSignedCookie } from 'hono/cookie';
import { hashCredential } from '../accounts/personal-keys.js';
import { accounts, dashboardSessions } from '../db/schema/index.js';
import type { DbOrTx } from '../db/client.js';
import type { Deps } from '../deps.js';

export const SESSION_COOKIE = 'svc_session';
/** Anonymous forms (sign in, sign up) get their CSRF token from this cookie (signed double submit). */
export const PRE_SESSION_COOKIE = 'svc_presession';

export interface DashboardSession {
  accountId: string;
  email: string;
  /** SHA-256 of the session secret: the row key, and the input of the session's CSRF token. */
  hash: string;
}

function secureCookies(deps: Deps): boolean {
  return deps.config.baseUrl.startsWith('https:');
}

function cookieOptions(deps: Deps, maxAge?: number) {
  // Lax, not Strict: a third-party app sends the user to /oauth/authorize with a top-level GET, and
  // the consent screen must see the session. Every state change is a POST, which Lax never sends
  // cross-site, and carries a CSRF token besides.
  return { path: '/', httpOnly: true, sameSite: 'Lax' as const, secure: secureCookies(deps), ...(maxAge ? { maxAge } : {}) };
}

function mac(deps: Deps, purpose: string, value: string): string {
  return createHmac('sha256', deps.secret).update(`${purpose}:${value}`).digest('base64url');
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export async function startSession(deps: Deps, c: Context, accountId: string): Promise<void> {
  const token = randomBytes(32).toString('base64url');
  const now = deps.clock.now();
  const ttl = deps.config.dashboard.sessionTtlSeconds;
  await deps.db.insert(dashboardSessions).values({ hash: hashCredential(token), accountId, createdAt: now, expiresAt: new Date(now.getTime() + ttl * 1000) });
  await setSignedCookie(c, SESSION_COOKIE, token, deps.secret, cookieOptions(deps, ttl));
  deleteCookie(c, PRE_SESSION_COOKIE, { path: '/' });
}

/** Housekeeping: forgets sessions that expired. */
export async function pruneExpiredSessions(db: DbOrTx, now: Date): Promise<number> {
  return (await db.delete(dashboardSessions).where(lt(dashboardSessions.expiresAt, now)).returning({ hash: dashboardSessions.hash })).length;
}

/** The signed-in account, from the signed session cookie and its live row; never from a Bearer header. */
export async function currentSession(deps: Deps, c: Context): Promise<DashboardSession | null> {
  const token = await getSignedCookie(c, deps.secret, SESSION_COOKIE);
  if (!token) return null;
  const hash = hashCredential(token);
  const [row] = await deps.db
    .select({ accountId: dashboardSessions.accountId, email: accounts.email })
    .from(dashboardSessions)
    .innerJoin(accounts, eq(accounts.id, dashboardSessions.accountId))
    .where(and(eq(dashboardSessions.hash, hash), gt(dashboardSessions.expiresAt, deps.clock.now())));
  return row ? { ...row, hash } : null;
}

export async function endSession(deps: Deps, c: Context, session: DashboardSession | null): Promise<void> {
  if (session) await deps.db.delete(dashboardSessions).where(eq(dashboardSessions.hash, session.hash));
  deleteCookie(c, SESSION_COOKIE, { path: '/', secure: secureCookies(deps) });
}

/** The CSRF token of the session's forms (HMAC of the session, so it needs no storage). */
export function sessionCsrfToken(deps: Deps, session: DashboardSession): string {
  return mac(deps, 'csrf', session.hash);
}

/** The CSRF token of a signed-out form; sets the pre-session cookie it is bound to when missing. */
export function anonymousCsrfToken(deps: Deps, c: Context): string {
  let value = getCookie(c, PRE_SESSION_COOKIE);
  if (!value || !/^[\w-]{43}$/.test(value)) {
    value = randomBytes(32).toString('base64url');
    setCookie(c, PRE_SESSION_COOKIE, value, { ...cookieOptions(deps, 3600), sameSite: 'Strict' });
  }
  return mac(deps, 'csrf-anon', value);
}

/**
 * A state-changing form is genuine when it carries the CSRF token bound to the caller's session (or
 * pre-session cookie), and, when the browser names an Origin, it is this service's own.
 */
export function checkCsrf(deps: Deps, c: Context, session: DashboardSession | null, token: unknown): boolean {
  // The configured origin, or the one the browser actually used (e.g. 127.0.0.1 vs localhost in
  // development): a browser always sends the Host it navigated to, so a foreign site cannot fake it.
  const origin = c.req.header('origin');
  if (origin && origin !== new URL(deps.config.baseUrl).origin && origin !== new URL(c.req.url).origin) return false;
  if (typeof token !== 'string' || !token) return false;
  if (session) return sameText(token, sessionCsrfToken(deps, session));
  const value = getCookie(c, PRE_SESSION_COOKIE);
  return !!value && sameText(token, mac(deps, 'csrf-anon', value));
}
