import type { Hono } from 'hono';
import { isScope, type Scope } from '../../shared/scopes.js';
import { findAccountByEmail } from '../accounts/accounts.js';
import { createPersonalKey, listPersonalKeys, revokePersonalKey } from '../accounts/personal-keys.js';
import { verifyPassword } from '../auth/passwords.js';
import { toAppError } from '../http/handle-error.js';
import { consumeRateLimit } from '../http/rate-limit.js';
import { listConnectedApps, revokeConnectedApp } from '../oauth/tokens.js';
import { accountUsage } from '../usage/usage.js';
import { formText as text, type PageKit, renderPage } from './page-kit.js';
import { countSessions, endOtherSessions, MAX_PASSWORD_LENGTH, setAccountPassword } from './passwords.js';
import * as pages from './pages.js';
import { startSession } from './session.js';
import { SIGNIN_LIMIT_PER_EMAIL } from './sign-in.js';

/** The signed-in account's own pages: overview, usage, personal keys, password and sessions, connected OAuth apps. */
export function accountPages(app: Hono, kit: PageKit): void {
  overviewPages(app, kit);
  personalKeyPages(app, kit);
  passwordAndSessionPages(app, kit);
  connectedAppPages(app, kit);
}

function overviewPages(app: Hono, { deps, signedIn }: PageKit): void {
  app.get(
    '/dashboard',
    signedIn(async (c, s, chrome) => {
      const [usage, keys, apps] = await Promise.all([
        accountUsage(deps, s.accountId),
        listPersonalKeys(deps.db, s.accountId),
        listConnectedApps(deps.db, s.accountId),
      ]);
      return renderPage(
        c,
        pages.overviewPage(chrome, {
          usage,
          keys: keys.filter((k) => !k.revokedAt).length,
          sites: usage.sites?.used ?? 0,
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
}

/** Only a signed-in person creates or revokes personal keys, never a Bearer credential. */
function personalKeyPages(app: Hono, { deps, signedIn, done }: PageKit): void {
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
}

function passwordAndSessionPages(app: Hono, { deps, signedIn, done }: PageKit): void {
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
}

function connectedAppPages(app: Hono, { deps, signedIn, done }: PageKit): void {
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
}
