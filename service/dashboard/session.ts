import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { and, eq, gt, isNull, lt } from 'drizzle-orm';
import type { Context } from 'hono';
import { deleteCookie, getCookie, getSignedCookie, setCookie, setSignedCookie } from 'hono/cookie';
import { hashCredential } from '../accounts/personal-keys.js';
import { accounts, dashboardSessions } from '../db/schema/index.js';
import type { DbOrTx } from '../db/client.js';
import type { Deps } from '../deps.js';

export const SESSION_COOKIE = 'svc_session';
/** Anonymous forms (sign in, sign up) get their CSRF token from this cookie (signed double submit). */
export const PRE_SESSION_COOKIE = 'svc_presession';
/**
 * A random id of the browser, set beside the session (host-only, long-lived, kept at sign-out). The
 * session cookie carries an HMAC of it, so a session cookie is worth nothing in a browser that does
 * not hold the same id: one planted by another host carries its planter's id, not this browser's.
 */
export const BROWSER_COOKIE = 'svc_browser';
type CookieKind = typeof SESSION_COOKIE | typeof PRE_SESSION_COOKIE | typeof BROWSER_COOKIE;
const BROWSER_TTL_SECONDS = 400 * 24 * 3600;

/**
 * The dashboard's cookie names. Over https they carry the `__Host-` prefix: a browser keeps such a
 * cookie only when the dashboard's own host set it (Secure, no Domain, Path=/), so a page on a
 * sibling host (`<slug>.<sites domain>`) can neither set nor shadow it. Plain http has no such
 * prefix; there a cookie a sibling host planted for the parent domain shows as a second cookie of
 * the same name beside the browser's own (`duplicatedCookie`), which makes the dashboard trust
 * neither, and a planted session alone fails its browser binding (BROWSER_COOKIE).
 */
export function cookieName(deps: Deps, name: CookieKind): string {
  return secureCookies(deps) ? `__Host-${name}` : name;
}

export interface DashboardSession {
  accountId: string;
  email: string;
  /** SHA-256 of the session secret: the row key, and the input of the session's CSRF token. */
  hash: string;
}

export function secureCookies(deps: Deps): boolean {
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
  const browser = randomBytes(32).toString('base64url');
  const now = deps.clock.now();
  const ttl = deps.config.dashboard.sessionTtlSeconds;
  await deps.db.insert(dashboardSessions).values({ hash: hashCredential(token), accountId, createdAt: now, expiresAt: new Date(now.getTime() + ttl * 1000) });
  setCookie(c, cookieName(deps, BROWSER_COOKIE), browser, cookieOptions(deps, BROWSER_TTL_SECONDS));
  await setSignedCookie(c, cookieName(deps, SESSION_COOKIE), `${token}.${browserBinding(deps, browser)}`, deps.secret, cookieOptions(deps, ttl));
  deleteCookie(c, cookieName(deps, PRE_SESSION_COOKIE), { path: '/', secure: secureCookies(deps) });
}

function browserBinding(deps: Deps, browser: string): string {
  return mac(deps, 'browser', browser).slice(0, 22);
}

/** Housekeeping: forgets sessions that expired. */
export async function pruneExpiredSessions(db: DbOrTx, now: Date): Promise<number> {
  return (await db.delete(dashboardSessions).where(lt(dashboardSessions.expiresAt, now)).returning({ hash: dashboardSessions.hash })).length;
}

/** The signed-in account, from the signed session cookie and its live row; never from a Bearer header. */
export async function currentSession(deps: Deps, c: Context): Promise<DashboardSession | null> {
  const name = cookieName(deps, SESSION_COOKIE);
  const browserName = cookieName(deps, BROWSER_COOKIE);
  if (duplicatedCookie(c, name) || duplicatedCookie(c, browserName)) {
    clearShadowingCookies(deps, c);
    return null;
  }
  const value = await getSignedCookie(c, deps.secret, name);
  const browser = getCookie(c, browserName);
  if (!value || !browser) return null;
  const dot = value.indexOf('.');
  if (dot === -1 || !sameText(value.slice(dot + 1), browserBinding(deps, browser))) return null;
  const hash = hashCredential(value.slice(0, dot));
  const [row] = await deps.db
    .select({ accountId: dashboardSessions.accountId, email: accounts.email })
    .from(dashboardSessions)
    .innerJoin(accounts, eq(accounts.id, dashboardSessions.accountId))
    // A suspended account's session is refused (kept: restoring the account brings it back); sign-in says why.
    .where(and(eq(dashboardSessions.hash, hash), gt(dashboardSessions.expiresAt, deps.clock.now()), isNull(accounts.suspendedAt)));
  return row ? { ...row, hash } : null;
}

export async function endSession(deps: Deps, c: Context, session: DashboardSession | null): Promise<void> {
  if (session) await deps.db.delete(dashboardSessions).where(eq(dashboardSessions.hash, session.hash));
  deleteCookie(c, cookieName(deps, SESSION_COOKIE), { path: '/', secure: secureCookies(deps) });
}

/** The CSRF token of the session's forms (HMAC of the session, so it needs no storage). */
export function sessionCsrfToken(deps: Deps, session: DashboardSession): string {
  return mac(deps, 'csrf', session.hash);
}

/** The CSRF token of a signed-out form; sets the pre-session cookie it is bound to when missing. */
export function anonymousCsrfToken(deps: Deps, c: Context): string {
  const name = cookieName(deps, PRE_SESSION_COOKIE);
  let value = duplicatedCookie(c, name) ? undefined : getCookie(c, name);
  if (!value || !/^[\w-]{43}$/.test(value)) {
    if (duplicatedCookie(c, name)) clearShadowingCookies(deps, c);
    value = randomBytes(32).toString('base64url');
    setCookie(c, name, value, { ...cookieOptions(deps, 3600), sameSite: 'Strict' });
  }
  return mac(deps, 'csrf-anon', value);
}

/**
 * A state-changing form is genuine when it carries the CSRF token bound to the caller's session (or
 * pre-session cookie), and the browser says it comes from this origin: `Sec-Fetch-Site` is
 * `same-origin` (a hosted page on a sibling host is `same-site`, which SameSite=Lax cookies do not
 * stop), and an Origin, when sent, is this service's own. A pre-session cookie that has a shadow
 * (a second cookie of its name, set by another host) proves nothing.
 */
export function checkCsrf(deps: Deps, c: Context, session: DashboardSession | null, token: unknown): boolean {
  const fetchSite = c.req.header('sec-fetch-site');
  if (fetchSite !== undefined && fetchSite !== 'same-origin' && fetchSite !== 'none') return false;
  // The configured origin, or the one the browser actually used (e.g. 127.0.0.1 vs localhost in
  // development): a browser always sends the Host it navigated to, so a foreign site cannot fake it.
  const origin = c.req.header('origin');
  if (origin && origin !== new URL(deps.config.baseUrl).origin && origin !== new URL(c.req.url).origin) return false;
  if (typeof token !== 'string' || !token) return false;
  if (session) return sameText(token, sessionCsrfToken(deps, session));
  const name = cookieName(deps, PRE_SESSION_COOKIE);
  if (duplicatedCookie(c, name)) return false;
  const value = getCookie(c, name);
  return !!value && sameText(token, mac(deps, 'csrf-anon', value));
}

/** True when the request carries more than one cookie named `name` (one set by a host other than this one). */
export function duplicatedCookie(c: Context, name: string): boolean {
  const header = c.req.header('cookie');
  if (!header) return false;
  let seen = 0;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if ((eq === -1 ? part : part.slice(0, eq)).trim() === name && ++seen > 1) return true;
  }
  return false;
}

/** Paths a planted cookie most likely uses to be sent before the dashboard's own (longer paths go first). */
const DASHBOARD_PATHS = ['/', '/dashboard', '/oauth', '/abuse'];

/**
 * Over plain http: asks the browser to drop the copies of the dashboard's cookies that another host
 * planted for a parent domain of this one (at `/`, the dashboard's paths and each prefix of this
 * path), never the browser's own (host-only) ones, which then count again. Over https nothing can be
 * planted under the `__Host-` names.
 */
function clearShadowingCookies(deps: Deps, c: Context): void {
  if (secureCookies(deps)) return;
  const host = new URL(c.req.url).hostname;
  if (/^[\d.]+$/.test(host) || host.includes(':') || host.startsWith('[')) return; // an IP address has no parent domain
  // `Domain=<this host>` names a domain cookie, which browsers keep apart from the host-only one.
  const labels = host.split('.');
  const domains = labels.map((_, i) => labels.slice(i).join('.'));
  const segments = c.req.path.split('/').filter(Boolean);
  const paths = new Set([...DASHBOARD_PATHS, ...segments.map((_, i) => `/${segments.slice(0, i + 1).join('/')}`)]);
  for (const kind of [SESSION_COOKIE, PRE_SESSION_COOKIE, BROWSER_COOKIE] as const)
    for (const domain of domains)
      for (const path of paths) c.header('set-cookie', `${cookieName(deps, kind)}=; Max-Age=0; Path=${path}; Domain=${domain}`, { append: true });
}
