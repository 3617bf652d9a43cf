import type { Hono } from 'hono';
import { createAccount, findAccountByEmail } from '../accounts/accounts.js';
import { hashPassword, verifyPassword } from '../auth/passwords.js';
import type { Deps } from '../deps.js';
import { clientIp } from '../http/client-ip.js';
import { toAppError } from '../http/handle-error.js';
import { consumeRateLimit } from '../http/rate-limit.js';
import { DONE, formText as text, renderPage, safeNext } from './page-kit.js';
import { MAX_PASSWORD_LENGTH, passwordProblem } from './passwords.js';
import * as pages from './pages.js';
import { anonymousCsrfToken, checkCsrf, currentSession, endSession, startSession } from './session.js';

/** Sign-in attempts per email address per 15 minutes (per client address: SVC_ADDRESS_LIMITS signin). */
export const SIGNIN_LIMIT_PER_EMAIL = 10;

const dummyHashes = new Map<number, Promise<string>>();
/** A hash at the configured cost, verified when the email has no account. */
function dummyHashOf(cost: number): Promise<string> {
  const known = dummyHashes.get(cost);
  if (known) return known;
  const hash = hashPassword('not-a-password', cost);
  dummyHashes.set(cost, hash);
  return hash;
}

/** Sign up, sign in and sign out: the pages anyone reaches without a session. */
export function signInRoutes(app: Hono, deps: Deps): void {
  app.get('/dashboard/signup', async (c) => {
    if (!deps.config.dashboard.signupEnabled)
      return renderPage(c, pages.errorPage('Sign-up is closed', 'This server does not accept new accounts. Ask its operator.'), 403);
    return renderPage(c, pages.signUpPage({ csrf: anonymousCsrfToken(deps, c), next: safeNext(c.req.query('next')) }));
  });

  app.post('/dashboard/signup', async (c) => {
    if (!deps.config.dashboard.signupEnabled) return renderPage(c, pages.errorPage('Sign-up is closed', 'This server does not accept new accounts.'), 403);
    const form = await c.req.parseBody();
    const next = safeNext(form.next);
    const email = text(form.email as string).trim();
    const again = (error: string, status = 400) => renderPage(c, pages.signUpPage({ csrf: anonymousCsrfToken(deps, c), next, email, error }), status);
    if (!checkCsrf(deps, c, null, form.csrf)) return again('The form expired. Please try again.', 403);
    const password = text(form.password as string);
    const problem = passwordProblem(password);
    if (problem) return again(problem);
    try {
      await consumeRateLimit(deps.db, `signup:ip:${clientIp(c, deps.config.trustProxy)}`, deps.config.addressLimits.signup, 60_000, deps.clock.now());
      const account = await createAccount(deps.db, { email, passwordHash: await hashPassword(password, deps.config.passwordHashCost) });
      await startSession(deps, c, account.id);
    } catch (e) {
      const err = toAppError(e, deps.log);
      return again(err.code === 'conflict' ? 'An account with this email already exists. Sign in instead.' : err.message, err.status);
    }
    return c.redirect(next, 303);
  });

  app.get('/dashboard/signin', async (c) => {
    const next = safeNext(c.req.query('next'));
    if (await currentSession(deps, c)) return c.redirect(next, 303);
    return renderPage(
      c,
      pages.signInPage({ csrf: anonymousCsrfToken(deps, c), next, info: DONE[c.req.query('done') ?? ''], signupEnabled: deps.config.dashboard.signupEnabled }),
    );
  });

  app.post('/dashboard/signin', async (c) => {
    const form = await c.req.parseBody();
    const next = safeNext(form.next);
    const email = text(form.email as string).trim();
    const again = (error: string, status = 400) =>
      renderPage(c, pages.signInPage({ csrf: anonymousCsrfToken(deps, c), next, email, error, signupEnabled: deps.config.dashboard.signupEnabled }), status);
    if (!checkCsrf(deps, c, null, form.csrf)) return again('The form expired. Please try again.', 403);
    const password = text(form.password as string);
    try {
      const now = deps.clock.now();
      await consumeRateLimit(deps.db, `signin:ip:${clientIp(c, deps.config.trustProxy)}`, deps.config.addressLimits.signin, 60_000, now);
      await consumeRateLimit(deps.db, `signin:email:${email.toLowerCase()}`, SIGNIN_LIMIT_PER_EMAIL, 15 * 60_000, now);
      const account = email && password.length <= MAX_PASSWORD_LENGTH ? await findAccountByEmail(deps.db, email).catch(() => null) : null;
      // Spend the same scrypt time whether or not the account exists, so timing does not tell.
      const ok = await verifyPassword(password, account?.passwordHash ?? (await dummyHashOf(deps.config.passwordHashCost)));
      if (!account?.passwordHash || !ok) return again('Wrong email or password.', 401);
      if (account.suspension) return again(`This account is suspended by the operator of this service: ${account.suspension}. Nothing of it was deleted.`, 403);
      await startSession(deps, c, account.id);
    } catch (e) {
      const err = toAppError(e, deps.log);
      return again(err.message, err.status);
    }
    return c.redirect(next, 303);
  });

  app.post('/dashboard/signout', async (c) => {
    const session = await currentSession(deps, c);
    const form = await c.req.parseBody();
    if (session && !checkCsrf(deps, c, session, form.csrf)) return renderPage(c, pages.errorPage('Form expired', 'Reload the page and try again.'), 403);
    await endSession(deps, c, session);
    return c.redirect('/dashboard/signin?done=signed_out', 303);
  });
}
