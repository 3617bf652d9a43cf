import type { Context } from 'hono';
import type { Deps } from '../deps.js';
import type { DashboardResources } from './integrations.js';
import type { Html } from './layout.js';
import * as pages from './pages.js';
import { checkCsrf, cookieName, currentSession, duplicatedCookie, SESSION_COOKIE, sessionCsrfToken, type DashboardSession } from './session.js';

/** Only same-site paths, so `next` can never send the user to another origin. */
export function safeNext(next: unknown): string {
  if (typeof next !== 'string' || !next.startsWith('/') || next.length > 4000) return '/dashboard';
  // Browsers drop tabs and newlines inside URLs and read a backslash as "/" ("/<TAB>/evil.com" is "//evil.com"):
  // any control character or backslash is refused outright, and what is left must stay on this origin.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  if (/[\u0000-\u001f\u007f\\]/.test(next)) return '/dashboard';
  const here = 'http://svc.invalid';
  const url = new URL(next, here);
  return url.origin === here ? `${url.pathname}${url.search}${url.hash}` : '/dashboard';
}

/** Messages a page shows after a redirect with `?done=<code>`. */
export const DONE: Record<string, string> = {
  key_revoked: 'The key was revoked; it no longer works.',
  app_revoked: 'The application was disconnected; its tokens no longer work.',
  access_on: 'svc-user access is on.',
  access_off: 'svc-user access is off.',
  secret_set: 'The secret was saved. Its value is never shown again.',
  secret_deleted: 'The secret was deleted.',
  signed_out: 'You are signed out.',
  password_changed: 'Your password was changed; other browsers are signed out.',
  sessions_ended: 'Every other session was signed out.',
  cookie_conflict: "You were signed out: a page of another host set a cookie in this dashboard's name. Sign in again.",
  rolled_back: 'Rolled back: the site serves that version now, as a new version.',
};

export function dashboardSecurityHeaders(c: Context, formAction = "'self'"): void {
  c.header(
    'content-security-policy',
    `default-src 'none'; style-src 'self'; img-src 'self' data:; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
  );
  c.header('x-frame-options', 'DENY');
  c.header('x-content-type-options', 'nosniff');
  // same-origin, not no-referrer: with no-referrer Chromium sends `Origin: null` on our own form posts.
  c.header('referrer-policy', 'same-origin');
  c.header('cache-control', 'no-store');
}

export function renderPage(c: Context, page: Html, status = 200): Response | Promise<Response> {
  return c.html(page, status as 200);
}

/** A posted form field as text (the first value when it was sent more than once; '' when absent). */
export const formText = (v: string | string[] | undefined): string => (Array.isArray(v) ? (v[0] ?? '') : (v ?? ''));

/** A page handler for a signed-in account: its session, the page chrome, and the posted form (CSRF already checked). */
export type SignedInHandler = (c: Context, session: DashboardSession, chrome: pages.Chrome, form: Record<string, string | string[]>) => Promise<Response>;

/** What every signed-in page group is built with. */
export interface PageKit {
  deps: Deps;
  resources: DashboardResources;
  signedIn(handler: SignedInHandler): (c: Context) => Promise<Response>;
  /** The message of the `?done=` code of this request, if any. */
  done(c: Context): string | undefined;
}

export function pageKit(deps: Deps, resources: DashboardResources): PageKit {
  /** Runs `handler` for a signed-in account; sends anyone else to the sign-in page. */
  function signedIn(handler: SignedInHandler) {
    return async (c: Context) => {
      const session = await currentSession(deps, c);
      if (!session) {
        const next = c.req.method === 'GET' ? c.req.path + (new URL(c.req.url).search || '') : '/dashboard';
        const shadowed = duplicatedCookie(c, cookieName(deps, SESSION_COOKIE)) ? '&done=cookie_conflict' : '';
        return c.redirect(`/dashboard/signin?next=${encodeURIComponent(next)}${shadowed}`, 303);
      }
      const chrome = { email: session.email, csrf: sessionCsrfToken(deps, session) };
      let form: Record<string, string | string[]> = {};
      if (c.req.method === 'POST') {
        form = (await c.req.parseBody({ all: true })) as Record<string, string | string[]>;
        if (!checkCsrf(deps, c, session, form.csrf)) {
          return renderPage(
            c,
            pages.errorPage('Form expired', 'This form is stale or did not come from this dashboard. Reload the page and try again.', chrome),
            403,
          );
        }
      }
      return handler(c, session, chrome, form);
    };
  }

  return { deps, resources, signedIn, done: (c) => DONE[c.req.query('done') ?? ''] };
}
