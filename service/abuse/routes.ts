import { Hono } from 'hono';
import { csrfField, html, layout, notice, type Html } from '../dashboard/layout.js';
import { dashboardSecurityHeaders, formText } from '../dashboard/page-kit.js';
import { anonymousCsrfToken, checkCsrf } from '../dashboard/session.js';
import type { Deps } from '../deps.js';
import { clientIp } from '../http/client-ip.js';
import { toAppError } from '../http/handle-error.js';
import { ABUSE_CATEGORIES, createAbuseReport, MAX_REPORT_MESSAGE } from './reports.js';

const CATEGORY_LABELS: Record<(typeof ABUSE_CATEGORIES)[number], string> = {
  phishing: 'Phishing or impersonation',
  malware: 'Malware or a harmful download',
  spam: 'Spam',
  illegal: 'Illegal content',
  copyright: 'Copyright or trademark',
  privacy: 'Personal data published without consent',
  other: 'Something else',
};

interface FormState {
  csrf: string;
  url?: string;
  category?: string;
  message?: string;
  contact?: string;
  error?: string;
}

function reportPage(state: FormState): Html {
  return layout(
    { title: 'Report a page', narrow: true },
    html`<div class="card"><h1>Report a page hosted here</h1><p class="lead">Tell the operator of this service about a page that breaks the law or harms people. Your report goes to the operator, not to the page's owner.</p>
${notice('error', state.error)}
<form method="post" action="/abuse">${csrfField(state.csrf)}
<label for="url">Address of the page</label><input id="url" type="url" name="url" required maxlength="2000" value="${state.url ?? ''}">
<label for="category">What is wrong</label><select id="category" name="category" required>${ABUSE_CATEGORIES.map(
      (c) => html`<option value="${c}"${state.category === c ? ' selected' : ''}>${CATEGORY_LABELS[c]}</option>`,
    )}</select>
<label for="message">Details</label><textarea id="message" name="message" required maxlength="${String(MAX_REPORT_MESSAGE)}" rows="6">${state.message ?? ''}</textarea>
<label for="contact">Your email <span class="muted small">(optional: if the operator may ask you more)</span></label><input id="contact" type="text" name="contact" maxlength="320" value="${state.contact ?? ''}">
<div class="row mt"><button type="submit">Send report</button></div></form></div>`,
  );
}

function thanksPage(id: string): Html {
  return layout(
    { title: 'Report received', narrow: true },
    html`<div class="card"><h1>Thank you</h1><p class="lead">The operator received your report <code id="report-id">${id}</code>.</p></div>`,
  );
}

/**
 * Reports from the public (`GET/POST /abuse`, on the service's own origin, never a site's host) and
 * `/.well-known/security.txt` (RFC 9116). The form is CSRF-safe as the sign-in form is (a token bound
 * to the pre-session cookie, Origin and Sec-Fetch-Site checked) and limited per client address
 * (SVC_ADDRESS_LIMITS abuse).
 */
export function abuseRoutes(deps: Deps): Hono {
  const app = new Hono();

  app.get('/abuse', (c) => {
    dashboardSecurityHeaders(c);
    const url = c.req.query('url');
    return c.html(reportPage({ csrf: anonymousCsrfToken(deps, c), url: url && url.length <= 2000 ? url : undefined }));
  });

  app.post('/abuse', async (c) => {
    dashboardSecurityHeaders(c);
    const form = await c.req.parseBody();
    const state: FormState = {
      csrf: '',
      url: formText(form.url as string),
      category: formText(form.category as string),
      message: formText(form.message as string),
      contact: formText(form.contact as string),
    };
    const again = (error: string, status: number) => c.html(reportPage({ ...state, csrf: anonymousCsrfToken(deps, c), error }), status as 400);
    if (!checkCsrf(deps, c, null, form.csrf)) return again('The form expired or did not come from this page. Please send it again.', 403);
    const address = clientIp(c, deps.config.trustProxy);
    try {
      deps.addressLimits.enforce('abuse', address);
      const report = await createAbuseReport(
        deps.db,
        deps.config,
        { url: state.url!, category: state.category!, message: state.message!, contact: state.contact, address },
        deps.clock.now(),
      );
      deps.log.info('abuse report received', { reportId: report.id, site: report.siteSlug, category: report.category });
      return c.html(thanksPage(report.id), 201);
    } catch (e) {
      const err = toAppError(e, deps.log);
      for (const [name, value] of Object.entries(err.headers ?? {})) c.header(name, value);
      return again(err.message, err.status);
    }
  });

  app.get('/.well-known/security.txt', (c) => {
    const expires = new Date(deps.clock.now().getTime() + 180 * 24 * 3600_000);
    expires.setUTCHours(0, 0, 0, 0);
    const base = deps.config.baseUrl;
    const lines = [
      `Contact: ${deps.config.securityContact ?? `${base}/abuse`}`,
      ...(deps.config.securityContact ? [`Contact: ${base}/abuse`] : []),
      `Expires: ${expires.toISOString()}`,
      `Canonical: ${base}/.well-known/security.txt`,
      'Preferred-Languages: en',
      `# To report a page hosted here (phishing, malware, illegal content): ${base}/abuse`,
    ];
    c.header('cache-control', 'public, max-age=3600');
    return c.text(`${lines.join('\n')}\n`);
  });

  return app;
}
