import { Hono } from 'hono';
import type { Deps } from '../deps.js';
import { AUTHORIZATION_PARAMS, checkAuthorizationRequest, clientRedirect } from '../oauth/authorize.js';
import { issueAuthorizationCode } from '../oauth/tokens.js';
import * as pages from './pages.js';
import { dashboardSecurityHeaders, renderPage, safeNext } from './page-kit.js';
import { checkCsrf, currentSession, sessionCsrfToken } from './session.js';

/** The authorization request parameters of a query or form; a repeated one is marked so the check refuses it. */
function pick(source: Record<string, unknown>): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const name of AUTHORIZATION_PARAMS) {
    const v = source[name];
    out[name] = typeof v === 'string' ? v : Array.isArray(v) ? '\u0000duplicate' : undefined;
  }
  return out;
}

/**
 * The OAuth authorization endpoint's screen (`/oauth/authorize`, RFC 6749 §3.1): a dashboard page
 * where the signed-in user approves or denies a client. The request is checked by
 * oauth/authorize.ts and the code issued by oauth/tokens.ts; this is the page between them.
 */
export function consentRoutes(deps: Deps): Hono {
  const app = new Hono();

  app.get('/oauth/authorize', async (c) => {
    dashboardSecurityHeaders(c);
    const params = pick(c.req.queries() ? Object.fromEntries(Object.entries(c.req.queries()).map(([k, v]) => [k, v.length === 1 ? v[0] : v])) : {});
    const check = await checkAuthorizationRequest(deps, params);
    const session = await currentSession(deps, c);
    const chrome = session ? { email: session.email, csrf: sessionCsrfToken(deps, session) } : undefined;
    if (check.kind === 'fatal') return renderPage(c, pages.errorPage('Authorization request refused', check.message, chrome), 400);
    if (check.kind === 'redirect') return c.redirect(check.location, 302);
    if (!session || !chrome) {
      const here = new URL(c.req.url);
      return c.redirect(`/dashboard/signin?next=${encodeURIComponent(safeNext(here.pathname + here.search))}`, 302);
    }
    const visible = Object.fromEntries(Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined));
    // The browser follows the approval's redirect to the client, which CSP form-action must allow.
    dashboardSecurityHeaders(c, `'self' ${new URL(check.request.redirectUri).origin}`);
    return renderPage(
      c,
      pages.consentPage(chrome, {
        clientName: check.client.name,
        clientUri: check.client.clientUri,
        redirectHost: new URL(check.request.redirectUri).host,
        request: check.request,
        params: visible,
      }),
    );
  });

  app.post('/oauth/authorize', async (c) => {
    dashboardSecurityHeaders(c);
    const form = await c.req.parseBody({ all: true });
    const params = pick(form);
    const session = await currentSession(deps, c);
    if (!session) {
      const query = new URLSearchParams(Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined));
      return c.redirect(`/dashboard/signin?next=${encodeURIComponent(`/oauth/authorize?${query}`)}`, 303);
    }
    const chrome = { email: session.email, csrf: sessionCsrfToken(deps, session) };
    if (!checkCsrf(deps, c, session, form.csrf)) {
      return renderPage(
        c,
        pages.errorPage('Form expired', 'This approval did not come from the svc consent screen, or it expired. Start again from the application.', chrome),
        403,
      );
    }
    const check = await checkAuthorizationRequest(deps, params);
    if (check.kind === 'fatal') return renderPage(c, pages.errorPage('Authorization request refused', check.message, chrome), 400);
    if (check.kind === 'redirect') return c.redirect(check.location, 303);
    const { request } = check;
    if (form.decision !== 'approve') {
      return c.redirect(
        clientRedirect(deps, request.redirectUri, { error: 'access_denied', error_description: 'the user denied the request', state: request.state }),
        303,
      );
    }
    const code = await issueAuthorizationCode(deps, {
      accountId: session.accountId,
      clientId: request.clientId,
      scopes: request.scopes,
      redirectUri: request.redirectUri,
      codeChallenge: request.codeChallenge,
      resource: request.resource,
    });
    return c.redirect(clientRedirect(deps, request.redirectUri, { code, state: request.state }), 303);
  });

  return app;
}
