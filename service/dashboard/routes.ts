import { count, eq } from 'drizzle-orm';
import { Hono, type Context } from 'hono';
import { isScope, type Scope } from '../../shared/scopes.js';
import { createAccount, findAccountByEmail } from '../accounts/accounts.js';
import { createPersonalKey, listPersonalKeys, revokePersonalKey } from '../accounts/personal-keys.js';
import { hashPassword, verifyPassword } from '../auth/passwords.js';
import { sites } from '../db/schema/index.js';
import type { Deps } from '../deps.js';
import { AppError } from '../http/app-error.js';
import { clientIp } from '../http/client-ip.js';
import { toAppError } from '../http/handle-error.js';
import { consumeRateLimit } from '../http/rate-limit.js';
import { listConnectedApps, revokeConnectedApp } from '../oauth/tokens.js';
import { accountOwner } from '../sites/owner.js';
import { getOwnedSite, listOwnedSites } from '../sites/sites.js';
import { accountUsage } from '../usage/usage.js';
import { dashboardResources, type DashboardResources } from './integrations.js';
import { STYLE_CSS, type Html } from './layout.js';
import { countSessions, endOtherSessions, MAX_PASSWORD_LENGTH, passwordProblem, setAccountPassword } from './passwords.js';
import * as pages from './pages.js';
import { anonymousCsrfToken, checkCsrf, currentSession, endSession, sessionCsrfToken, startSession, type DashboardSession } from './session.js';

/** Sign-in attempts: per client address per minute, and per email address per 15 minutes. */
export const SIGNIN_LIMIT_PER_IP = 20;
export const SIGNIN_LIMIT_PER_EMAIL = 10;

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

const DONE: Record<string, string> = {
  key_revoked: 'The key was revoked; it no longer works.',
  app_revoked: 'The application was disconnected; its tokens no longer work.',
  access_on: 'svc-user access is on.',
  access_off: 'svc-user access is off.',
  secret_set: 'The secret was saved. Its value is never shown again.',
  secret_deleted: 'The secret was deleted.',
  signed_out: 'You are signed out.',
  password_changed: 'Your password was changed; other browsers are signed out.',
  sessions_ended: 'Every other session was signed out.',
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

let dummyHash: Promise<string> | undefined;

export function dashboardRoutes(deps: Deps, resources: DashboardResources = dashboardResources): Hono {
  const app = new Hono();

  app.get('/dashboard/assets/style.css', (c) => {
    c.header('content-type', 'text/css; charset=utf-8');
    c.header('cache-control', 'public, max-age=3600');
    return c.body(STYLE_CSS);
  });

  app.get('/dashboard/', (c) => c.redirect('/dashboard', 301));

  app.use('/dashboard', async (c, next) => {
    await next();
    dashboardSecurityHeaders(c);
  });
  app.use('/dashboard/*', async (c, next) => {
    await next();
    if (!c.req.path.startsWith('/dashboard/assets/')) dashboardSecurityHeaders(c);
  });

  /** Runs `handler` for a signed-in account; sends anyone else to the sign-in page. */
  function signedIn(handler: (c: Context, session: DashboardSession, chrome: pages.Chrome, form: Record<string, string | string[]>) => Promise<Response>) {
    return async (c: Context) => {
      const session = await currentSession(deps, c);
      if (!session) {
        const next = c.req.method === 'GET' ? c.req.path + (new URL(c.req.url).search || '') : '/dashboard';
        return c.redirect(`/dashboard/signin?next=${encodeURIComponent(next)}`, 303);
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

  const text = (v: string | string[] | undefined) => (Array.isArray(v) ? (v[0] ?? '') : (v ?? ''));
  const done = (c: Context) => DONE[c.req.query('done') ?? ''];

  // ---- sign up / sign in / sign out ----

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
      await consumeRateLimit(deps.db, `signup:ip:${clientIp(c, deps.config.trustProxy)}`, SIGNIN_LIMIT_PER_IP, 60_000, deps.clock.now());
      const account = await createAccount(deps.db, { email, passwordHash: await hashPassword(password) });
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
      await consumeRateLimit(deps.db, `signin:ip:${clientIp(c, deps.config.trustProxy)}`, SIGNIN_LIMIT_PER_IP, 60_000, now);
      await consumeRateLimit(deps.db, `signin:email:${email.toLowerCase()}`, SIGNIN_LIMIT_PER_EMAIL, 15 * 60_000, now);
      const account = email && password.length <= MAX_PASSWORD_LENGTH ? await findAccountByEmail(deps.db, email).catch(() => null) : null;
      // Spend the same scrypt time whether or not the account exists, so timing does not tell.
      dummyHash ??= hashPassword('not-a-password');
      const ok = await verifyPassword(password, account?.passwordHash ?? (await dummyHash));
      if (!account?.passwordHash || !ok) return again('Wrong email or password.', 401);
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

  // ---- overview and usage ----

  app.get(
    '/dashboard',
    signedIn(async (c, s, chrome) => {
      const [usage, keys, apps, [siteCount]] = await Promise.all([
        accountUsage(deps, s.accountId),
        listPersonalKeys(deps.db, s.accountId),
        listConnectedApps(deps.db, s.accountId),
        deps.db.select({ n: count() }).from(sites).where(eq(sites.ownerAccountId, s.accountId)),
      ]);
      return renderPage(
        c,
        pages.overviewPage(chrome, {
          usage,
          keys: keys.filter((k) => !k.revokedAt).length,
          sites: Number(siteCount?.n ?? 0),
          apps: apps.length,
          baseUrl: deps.config.baseUrl,
        }),
      );
    }),
  );

  app.get(
    '/dashboard/usage',
    signedIn(async (c, s, chrome) => renderPage(c, pages.usagePage(chrome, await accountUsage(deps, s.accountId), deps.config.limits.rateLimitPerMinute))),
  );

  // ---- personal keys: only a signed-in person creates or revokes them, never a Bearer credential ----

  app.get(
    '/dashboard/keys',
    signedIn(async (c, s, chrome) => renderPage(c, pages.keysPage(chrome, { keys: await listPersonalKeys(deps.db, s.accountId), ok: done(c) }))),
  );

  app.post(
    '/dashboard/keys',
    signedIn(async (c, s, chrome, form) => {
      const name = text(form.name).trim().slice(0, 100);
      const raw = form.scopes === undefined ? [] : Array.isArray(form.scopes) ? form.scopes : [form.scopes];
      const scopes = [...new Set(raw.filter((v): v is Scope => typeof v === 'string' && isScope(v)))];
      const keys = () => listPersonalKeys(deps.db, s.accountId);
      if (!name) return renderPage(c, pages.keysPage(chrome, { keys: await keys(), error: 'Give the key a name.' }), 400);
      if (scopes.length === 0 || scopes.length !== raw.length)
        return renderPage(c, pages.keysPage(chrome, { keys: await keys(), error: 'Choose at least one known scope.' }), 400);
      const { secret } = await createPersonalKey(deps.db, { accountId: s.accountId, name, scopes });
      return renderPage(c, pages.keysPage(chrome, { keys: await keys(), created: { name, secret, scopes } }), 201);
    }),
  );

  app.post(
    '/dashboard/keys/:keyId/revoke',
    signedIn(async (c, s, chrome) => {
      try {
        await revokePersonalKey(deps.db, s.accountId, c.req.param('keyId')!, deps.clock.now());
      } catch (e) {
        const err = toAppError(e, deps.log);
        return renderPage(c, pages.keysPage(chrome, { keys: await listPersonalKeys(deps.db, s.accountId), error: err.message }), err.status);
      }
      return c.redirect('/dashboard/keys?done=key_revoked', 303);
    }),
  );

  // ---- sites and their tables ----

  async function sitesView(s: DashboardSession) {
    const { sites: list, total } = await listOwnedSites(deps, accountOwner(s.accountId), { limit: 200, offset: 0 });
    const withTables = await Promise.all(
      list.map(async (site) => ({
        site,
        tables: resources.listTables ? await resources.listTables(deps, await getOwnedSite(deps.db, accountOwner(s.accountId), site.id)) : null,
      })),
    );
    return { sites: withTables, total, tablesAvailable: resources.listTables !== null };
  }

  app.get(
    '/dashboard/sites',
    signedIn(async (c, s, chrome) => renderPage(c, pages.sitesPage(chrome, { ...(await sitesView(s)), ok: done(c) }))),
  );

  app.post(
    '/dashboard/sites/:siteId/tables/:tableId/write-key',
    signedIn(async (c, s, chrome) => {
      try {
        if (!resources.regenerateWriteKey) throw new AppError('not_found', 'regenerating write keys is not available on this server yet');
        const writeKey = await resources.regenerateWriteKey(deps, s.accountId, c.req.param('siteId')!, c.req.param('tableId')!);
        return renderPage(c, pages.sitesPage(chrome, { ...(await sitesView(s)), writeKey }));
      } catch (e) {
        const err = toAppError(e, deps.log);
        return renderPage(c, pages.sitesPage(chrome, { ...(await sitesView(s)), error: err.message }), err.status);
      }
    }),
  );

  // ---- functions ----

  async function functionsView(s: DashboardSession) {
    return resources.listFunctions ? await resources.listFunctions(deps, s.accountId) : null;
  }

  app.get(
    '/dashboard/functions',
    signedIn(async (c, s, chrome) => renderPage(c, pages.functionsPage(chrome, { functions: await functionsView(s), ok: done(c) }))),
  );

  function functionAction(run: (s: DashboardSession, functionId: string, form: Record<string, string | string[]>) => Promise<string>) {
    return signedIn(async (c, s, chrome, form) => {
      try {
        const doneCode = await run(s, c.req.param('functionId')!, form);
        return c.redirect(`/dashboard/functions?done=${doneCode}`, 303);
      } catch (e) {
        const err = toAppError(e, deps.log);
        return renderPage(c, pages.functionsPage(chrome, { functions: await functionsView(s), error: err.message }), err.status);
      }
    });
  }
  const unavailable = () => new AppError('not_found', 'this is not available on this server yet');

  app.post(
    '/dashboard/functions/:functionId/user-access',
    functionAction(async (s, id, form) => {
      if (!resources.setUserAccess) throw unavailable();
      const enabled = text(form.enabled) === 'true';
      await resources.setUserAccess(deps, s.accountId, id, enabled);
      return enabled ? 'access_on' : 'access_off';
    }),
  );
  app.post(
    '/dashboard/functions/:functionId/secrets',
    functionAction(async (s, id, form) => {
      if (!resources.setSecret) throw unavailable();
      await resources.setSecret(deps, s.accountId, id, text(form.name).trim(), text(form.value));
      return 'secret_set';
    }),
  );
  app.post(
    '/dashboard/functions/:functionId/secrets/delete',
    functionAction(async (s, id, form) => {
      if (!resources.deleteSecret) throw unavailable();
      await resources.deleteSecret(deps, s.accountId, id, text(form.name).trim());
      return 'secret_deleted';
    }),
  );

  // ---- account: password and sessions ----

  app.get(
    '/dashboard/account',
    signedIn(async (c, s, chrome) => renderPage(c, pages.accountPage(chrome, { sessions: await countSessions(deps, s.accountId), ok: done(c) }))),
  );

  app.post(
    '/dashboard/account/password',
    signedIn(async (c, s, chrome, form) => {
      const again = async (error: string, status: number) =>
        renderPage(c, pages.accountPage(chrome, { sessions: await countSessions(deps, s.accountId), error }), status);
      try {
        await consumeRateLimit(deps.db, `signin:email:${s.email}`, SIGNIN_LIMIT_PER_EMAIL, 15 * 60_000, deps.clock.now());
        const account = await findAccountByEmail(deps.db, s.email);
        const current = text(form.current);
        if (!account?.passwordHash || current.length > MAX_PASSWORD_LENGTH || !(await verifyPassword(current, account.passwordHash))) {
          return again('The current password is wrong.', 401);
        }
        await setAccountPassword(deps, s.accountId, text(form.password));
        await startSession(deps, c, s.accountId);
      } catch (e) {
        const err = toAppError(e, deps.log);
        return again(err.message, err.status);
      }
      return c.redirect('/dashboard/account?done=password_changed', 303);
    }),
  );

  app.post(
    '/dashboard/account/sessions/end-others',
    signedIn(async (c, s) => {
      await endOtherSessions(deps, s.accountId, s.hash);
      return c.redirect('/dashboard/account?done=sessions_ended', 303);
    }),
  );

  // ---- connected OAuth apps ----

  app.get(
    '/dashboard/apps',
    signedIn(async (c, s, chrome) => renderPage(c, pages.appsPage(chrome, { apps: await listConnectedApps(deps.db, s.accountId), ok: done(c) }))),
  );

  app.post(
    '/dashboard/apps/:clientId/revoke',
    signedIn(async (c, s) => {
      await revokeConnectedApp(deps.db, s.accountId, c.req.param('clientId')!, deps.clock.now());
      return c.redirect('/dashboard/apps?done=app_revoked', 303);
    }),
  );

  return app;
}
