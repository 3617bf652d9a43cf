import { SCOPE_DESCRIPTIONS, SCOPES, type Scope } from '../../shared/scopes.js';
import type { UsageEntry } from '../../shared/account-api/usage.js';
import type { PersonalKeyInfo } from '../accounts/personal-keys.js';
import type { ConnectedApp } from '../oauth/tokens.js';
import type { AuthorizationRequest } from '../oauth/authorize.js';
import type { SiteView } from '../sites/sites.js';
import { randomUUID } from 'node:crypto';
import type { SiteVersionView } from '../../shared/account-api/site-versions.js';
import type { SiteTrafficAnswer } from '../../shared/account-api/site-traffic.js';
import { csrfField, html, layout, notice, type Html } from './layout.js';

export interface Chrome {
  email: string;
  csrf: string;
}

const day = (iso: string | null) => (iso ? `${iso.slice(0, 16).replace('T', ' ')} UTC` : '—');

function formatNumber(n: number, unit: string): string {
  if (/bytes/.test(unit)) {
    if (n >= 1 << 30) return `${(n / (1 << 30)).toFixed(1)} GiB`;
    if (n >= 1 << 20) return `${(n / (1 << 20)).toFixed(1)} MiB`;
    if (n >= 1 << 10) return `${(n / (1 << 10)).toFixed(1)} KiB`;
    return `${n} B`;
  }
  return n.toLocaleString('en-US');
}

export function signInPage(input: { csrf: string; next: string; email?: string; error?: string; info?: string; signupEnabled: boolean }): Html {
  return layout(
    { title: 'Sign in', narrow: true },
    html`<div class="card"><h1>Sign in</h1><p class="lead">${input.next.startsWith('/oauth/authorize') ? 'Sign in to continue to the application that sent you here.' : 'Manage your sites, keys and connected apps.'}</p>
${notice('error', input.error)}${notice('info', input.info)}
<form method="post" action="/dashboard/signin">${csrfField(input.csrf)}<input type="hidden" name="next" value="${input.next}">
<label for="email">Email</label><input id="email" type="email" name="email" autocomplete="username" required value="${input.email ?? ''}">
<label for="password">Password</label><input id="password" type="password" name="password" autocomplete="current-password" required>
<div class="row mt"><button type="submit">Sign in</button><span class="spacer"></span>
${input.signupEnabled ? html`<a href="/dashboard/signup?next=${encodeURIComponent(input.next)}">Create an account</a>` : ''}</div></form></div>`,
  );
}

export function signUpPage(input: { csrf: string; next: string; email?: string; error?: string }): Html {
  return layout(
    { title: 'Create account', narrow: true },
    html`<div class="card"><h1>Create your account</h1><p class="lead">Host sites, tables and functions; give agents and apps scoped access.</p>
${notice('error', input.error)}
<form method="post" action="/dashboard/signup">${csrfField(input.csrf)}<input type="hidden" name="next" value="${input.next}">
<label for="email">Email</label><input id="email" type="email" name="email" autocomplete="username" required value="${input.email ?? ''}">
<label for="password">Password <span class="muted small">(at least 10 characters)</span></label><input id="password" type="password" name="password" autocomplete="new-password" minlength="10" required>
<div class="row mt"><button type="submit">Create account</button><span class="spacer"></span><a href="/dashboard/signin?next=${encodeURIComponent(input.next)}">I have an account</a></div></form></div>`,
  );
}

function usageCards(usage: Record<string, UsageEntry>): Html {
  return html`<div class="grid">${Object.entries(usage).map(([name, e]) => {
    const pct = e.limit ? Math.min(100, Math.round((e.used / e.limit) * 100)) : 0;
    return html`<div class="card stat" data-usage="${name}"><div class="n">${formatNumber(e.used, e.unit)}${e.limit !== null ? html`<span class="muted small"> / ${formatNumber(e.limit, e.unit)}</span>` : ''}</div>
<div class="l" title="${name}">${e.unit}</div>${e.limit ? html`<progress max="100" value="${pct}"></progress>` : ''}</div>`;
  })}</div>`;
}

export function overviewPage(chrome: Chrome, input: { usage: Record<string, UsageEntry>; keys: number; sites: number; apps: number; baseUrl: string }): Html {
  return layout(
    { title: 'Overview', active: 'overview', ...chrome },
    html`<h1>Overview</h1><p class="lead">Signed in as ${chrome.email}.</p>
<div class="grid">
<a class="card stat" href="/dashboard/sites"><div class="n">${input.sites}</div><div class="l">sites</div></a>
<a class="card stat" href="/dashboard/keys"><div class="n">${input.keys}</div><div class="l">active API keys</div></a>
<a class="card stat" href="/dashboard/apps"><div class="n">${input.apps}</div><div class="l">connected apps</div></a>
</div>
<div class="card"><h2>Use the Account API</h2><p class="muted">Create a personal key under <a href="/dashboard/keys">API keys</a>, then:</p>
<code class="mono">curl -H "Authorization: Bearer svc_pat_…" ${input.baseUrl}/api/v1/sites</code></div>
<h2>Usage</h2>${usageCards(input.usage)}`,
  );
}

export function usagePage(chrome: Chrome, usage: Record<string, UsageEntry>, rateLimitPerMinute: number): Html {
  return layout(
    { title: 'Usage', active: 'usage', ...chrome },
    html`<h1>Usage and limits</h1><p class="lead">The same counters as <code>GET /api/v1/usage</code>. Rate limit: ${rateLimitPerMinute ? `${rateLimitPerMinute} requests per minute per credential` : 'off'}.</p>
${usageCards(usage)}`,
  );
}

function scopeChecks(selected: readonly Scope[]): Html {
  return html`<div class="checks">${SCOPES.map(
    (s) =>
      html`<label><input type="checkbox" name="scopes" value="${s}" ${selected.includes(s) ? 'checked' : ''}><span><code>${s}</code><small>${SCOPE_DESCRIPTIONS[s]}</small></span></label>`,
  )}</div>`;
}

export function keysPage(
  chrome: Chrome,
  input: { keys: PersonalKeyInfo[]; created?: { name: string; secret: string; scopes: Scope[] }; error?: string; ok?: string },
): Html {
  const active = input.keys.filter((k) => !k.revokedAt);
  const revoked = input.keys.filter((k) => k.revokedAt);
  return layout(
    { title: 'API keys', active: 'keys', ...chrome },
    html`<h1>Personal API keys</h1><p class="lead">For your own scripts, servers and CI. A key is shown once, stored only as a hash, and can do exactly what its scopes allow. Never put one in a published site or browser JavaScript.</p>
${notice('error', input.error)}${notice('ok', input.ok)}
${
  input.created
    ? html`<div class="card" id="new-key"><h2>Key “${input.created.name}” created</h2><p>Copy it now: it will not be shown again.</p>
<code class="secret" id="new-key-secret">${input.created.secret}</code><p class="small muted">Scopes: ${input.created.scopes.map((s) => html`<span class="pill">${s}</span>`)}</p></div>`
    : ''
}
<div class="card"><h2>Active keys</h2>${
      active.length
        ? html`<table><thead><tr><th>Name</th><th>Key</th><th>Scopes</th><th>Created</th><th>Last used</th><th></th></tr></thead><tbody>${active.map(
            (
              k,
            ) => html`<tr data-key="${k.id}"><td>${k.name}</td><td class="mono">${k.prefix}</td><td>${k.scopes.map((s) => html`<span class="pill">${s}</span>`)}</td><td class="small">${day(k.createdAt)}</td><td class="small">${day(k.lastUsedAt)}</td>
<td><form class="inline" method="post" action="/dashboard/keys/${k.id}/revoke">${csrfField(chrome.csrf)}<button class="danger" type="submit">Revoke</button></form></td></tr>`,
          )}</tbody></table>`
        : html`<p class="muted">No active keys yet.</p>`
    }</div>
<div class="card"><h2>Create a key</h2><form method="post" action="/dashboard/keys">${csrfField(chrome.csrf)}
<label for="key-name">Name</label><input id="key-name" type="text" name="name" maxlength="100" placeholder="e.g. deploy script" required>
<label>Scopes</label>${scopeChecks(['svc.sites.read', 'svc.usage.read'])}
<div class="row mt"><button type="submit">Create key</button></div></form></div>
${revoked.length ? html`<div class="card"><h2>Revoked</h2><table><tbody>${revoked.map((k) => html`<tr><td>${k.name}</td><td class="mono">${k.prefix}</td><td class="small muted">revoked ${day(k.revokedAt)}</td></tr>`)}</tbody></table></div>` : ''}`,
  );
}

export interface SiteTablesView {
  site: SiteView;
  tables: { id: string; name: string; slug: string; records?: number }[] | null;
}

export function sitesPage(
  chrome: Chrome,
  input: { sites: SiteTablesView[]; total: number; tablesAvailable: boolean; writeKey?: { table: string; key: string }; error?: string; ok?: string },
): Html {
  return layout(
    { title: 'Sites', active: 'sites', ...chrome },
    html`<h1>Sites and tables</h1><p class="lead">${input.total} site${input.total === 1 ? '' : 's'}. Publish with <code>POST /api/v1/sites</code> or the Agent API.</p>
${notice('error', input.error)}${notice('ok', input.ok)}
${
  input.writeKey
    ? html`<div class="card" id="new-write-key"><h2>New write key for “${input.writeKey.table}”</h2><p>The old key stopped working. Copy this one now: it will not be shown again.</p><code class="secret">${input.writeKey.key}</code></div>`
    : ''
}
${input.sites.length === 0 ? html`<div class="card"><p class="muted">No sites yet.</p></div>` : ''}
${input.sites.map(
  ({
    site,
    tables,
  }) => html`<div class="card" data-site="${site.id}"><div class="row"><h2 class="flat"><a href="/dashboard/sites/${site.id}">${site.slug}</a></h2>
<span class="pill ${site.published ? 'ok' : 'off'}">${site.published ? 'published' : 'unpublished'}</span><span class="pill">${site.visibility}</span>${site.suspension ? html`<span class="pill off">suspended</span>` : ''}<span class="spacer"></span>
<a href="${site.pathUrl}">${site.pathUrl}</a></div>
${
  site.suspension
    ? html`<p class="notice error" data-suspension>Suspended by the operator of this service${site.suspension.suspendedAt ? html` on ${day(site.suspension.suspendedAt)}` : ''}: ${site.suspension.reason}. It answers 451 to visitors and its Table API is closed; nothing of it was deleted, and it can be changed again once restored.</p>`
    : ''
}
<p class="small muted">${site.fileCount} files · ${formatNumber(site.bytes, 'bytes')} · updated ${day(site.updatedAt)} · <code>${site.id}</code></p>
${
  !input.tablesAvailable
    ? ''
    : tables?.length
      ? html`<table><thead><tr><th>Table</th><th>Slug</th><th>Id</th><th></th></tr></thead><tbody>${tables.map(
          (t) => html`<tr><td>${t.name}</td><td class="mono">${t.slug}</td><td class="mono small">${t.id}</td>
<td><form class="inline" method="post" action="/dashboard/sites/${site.id}/tables/${t.id}/write-key">${csrfField(chrome.csrf)}<button class="danger" type="submit">Regenerate write key</button></form></td></tr>`,
        )}</tbody></table>`
      : html`<p class="small muted">No tables.</p>`
}</div>`,
)}`,
  );
}

/** One site: its versions (preview, roll back) and what it served per day. */
export function sitePage(
  chrome: Chrome,
  input: {
    site: SiteView;
    versions: { current: number; total: number; versions: SiteVersionView[] };
    traffic: SiteTrafficAnswer;
    error?: string;
    ok?: string;
  },
): Html {
  const { site, versions, traffic } = input;
  const requestId = randomUUID();
  return layout(
    { title: site.slug, active: 'sites', ...chrome },
    html`<h1>${site.slug}</h1><p class="lead"><a href="${site.pathUrl}">${site.pathUrl}</a> · serves version ${versions.current} · <a href="/dashboard/sites">all sites</a></p>
${notice('error', input.error)}${notice('ok', input.ok)}
<div class="card" id="traffic"><h2>Traffic, last ${traffic.days.length} days</h2>
<p class="small muted">${formatNumber(traffic.total.requests, 'requests')} requests · ${formatNumber(traffic.total.bytes, 'bytes')} served; previews: ${formatNumber(traffic.total.previewRequests, 'requests')} requests. Counted by each node and added every ${traffic.flushSeconds} s.</p>
<table><thead><tr><th>Day (UTC)</th><th>Requests</th><th>Bytes</th><th>Preview requests</th></tr></thead><tbody>${traffic.days
      .filter((d) => d.requests || d.previewRequests)
      .reverse()
      .map(
        (d) =>
          html`<tr data-day="${d.day}"><td>${d.day}</td><td>${d.requests}</td><td>${formatNumber(d.bytes, 'bytes')}</td><td>${d.previewRequests}</td></tr>`,
      )}</tbody></table></div>
<div class="card" id="versions"><h2>Versions</h2><p class="small muted">${versions.total} kept, newest first. A preview serves exactly that version; rolling back makes it live again as a new version.</p>
<table><thead><tr><th>#</th><th>When</th><th>What changed</th><th>By</th><th>Files</th><th></th></tr></thead><tbody>${versions.versions.map(
      (
        v,
      ) => html`<tr data-version="${v.version}"><td>${v.version}${v.current ? html` <span class="pill ok">live</span>` : ''}</td><td class="small">${v.createdAt.replace('T', ' ').slice(0, 19)}</td>
<td>${v.summary}</td><td class="small">${actorText(v.by)}</td><td class="small">${v.fileCount} · ${formatNumber(v.bytes, 'bytes')}</td>
<td><a href="${v.previewUrl}">Preview</a>${
        v.current
          ? ''
          : html` <form class="inline" method="post" action="/dashboard/sites/${site.id}/rollback">${csrfField(chrome.csrf)}<input type="hidden" name="version" value="${String(v.version)}"><input type="hidden" name="requestId" value="${`${requestId}-${v.version}`}"><button class="secondary" type="submit">Roll back to this</button></form>`
      }</td></tr>`,
    )}</tbody></table></div>`,
  );
}

function actorText(by: SiteVersionView['by']): string {
  if (by.kind === 'wallet') return `wallet ${by.wallet.slice(0, 10)}…`;
  if (by.kind === 'operator') return 'operator';
  return by.credential.kind === 'personal_key' ? `key ${by.credential.id}` : by.credential.kind === 'oauth_token' ? 'an OAuth app' : 'dashboard';
}

export interface FunctionRowView {
  id: string;
  name: string;
  slug: string;
  /** live, draft or cleanup_pending. */
  status: string;
  userAccess: boolean;
  secretNames: string[];
}

export function functionsPage(chrome: Chrome, input: { functions: FunctionRowView[] | null; error?: string; ok?: string }): Html {
  return layout(
    { title: 'Functions', active: 'functions', ...chrome },
    html`<h1>Functions</h1><p class="lead">Server-side functions of your account. Secret values are write-only: set or delete them here, they are never shown.</p>
${notice('error', input.error)}${notice('ok', input.ok)}
${
  input.functions === null
    ? html`<div class="card"><p class="muted">Functions are not available on this server yet.</p></div>`
    : input.functions.length === 0
      ? html`<div class="card"><p class="muted">No functions yet. Create one with <code>POST /api/v1/functions</code>.</p></div>`
      : input.functions.map(
          (f) => html`<div class="card" data-function="${f.id}"><div class="row"><h2 class="flat">${f.name}</h2><code>${f.slug}</code>
<span class="pill ${f.status === 'live' ? 'ok' : f.status === 'draft' ? 'off' : 'bad'}">${f.status === 'draft' ? 'draft only' : f.status.replace('_', ' ')}</span><span class="spacer"></span>
<form class="inline" method="post" action="/dashboard/functions/${f.id}/user-access">${csrfField(chrome.csrf)}<input type="hidden" name="enabled" value="${f.userAccess ? 'false' : 'true'}">
<span class="small muted">svc-user access: <b>${f.userAccess ? 'on' : 'off'}</b></span> <button class="secondary" type="submit">${f.userAccess ? 'Turn off' : 'Turn on'}</button></form></div>
<h3 class="small muted">Secrets</h3>${
            f.secretNames.length
              ? html`<table><tbody>${f.secretNames.map(
                  (n) =>
                    html`<tr><td class="mono">${n}</td><td class="muted small">value hidden</td><td><form class="inline" method="post" action="/dashboard/functions/${f.id}/secrets/delete">${csrfField(chrome.csrf)}<input type="hidden" name="name" value="${n}"><button class="danger" type="submit">Delete</button></form></td></tr>`,
                )}</tbody></table>`
              : html`<p class="small muted">No secrets.</p>`
          }
<form method="post" action="/dashboard/functions/${f.id}/secrets" class="row">${csrfField(chrome.csrf)}<input type="text" name="name" placeholder="NAME" required class="w-name"><input type="password" name="value" placeholder="value" required autocomplete="off" class="w-value"><button class="secondary" type="submit">Set secret</button></form></div>`,
        )
}`,
  );
}

export function appsPage(chrome: Chrome, input: { apps: ConnectedApp[]; ok?: string }): Html {
  return layout(
    { title: 'Connected apps', active: 'apps', ...chrome },
    html`<h1>Connected apps</h1><p class="lead">Applications you approved with OAuth. Disconnecting one revokes every token it holds at once.</p>
${notice('ok', input.ok)}
<div class="card">${
      input.apps.length
        ? html`<table><thead><tr><th>Application</th><th>Scopes</th><th>Approved</th><th>Last used</th><th></th></tr></thead><tbody>${input.apps.map(
            (
              a,
            ) => html`<tr data-app="${a.clientId}"><td><b>${a.name}</b><div class="small muted">${a.redirectHosts.join(', ')}</div></td><td>${a.scopes.map((s) => html`<span class="pill">${s}</span>`)}</td>
<td class="small">${day(a.firstAuthorizedAt)}</td><td class="small">${day(a.lastUsedAt)}</td>
<td><form class="inline" method="post" action="/dashboard/apps/${a.clientId}/revoke">${csrfField(chrome.csrf)}<button class="danger" type="submit">Disconnect</button></form></td></tr>`,
          )}</tbody></table>`
        : html`<p class="muted">No connected apps.</p>`
    }</div>`,
  );
}

export function consentPage(
  chrome: Chrome,
  input: { clientName: string; clientUri: string | null; redirectHost: string; request: AuthorizationRequest; params: Record<string, string> },
): Html {
  return layout(
    { title: `Authorize ${input.clientName}`, narrow: true, ...chrome },
    html`<div class="card consent"><div class="app"><div class="logo">${input.clientName.slice(0, 1).toUpperCase()}</div>
<div><h1 class="flat">${input.clientName}</h1><div class="small muted">wants to access your svc account ${chrome.email}</div></div></div>
<p class="small muted">After you decide you go back to <b>${input.redirectHost}</b>.${input.clientUri ? html` The application says it is <a href="${input.clientUri}" rel="noopener noreferrer">${input.clientUri}</a>.` : ''} svc has not verified it.</p>
<p><b>It will be able to:</b></p><ul>${input.request.scopes.map((s) => html`<li data-scope="${s}"><b>${s}</b>${SCOPE_DESCRIPTIONS[s]}</li>`)}</ul>
<p class="small muted">It cannot create, rotate or revoke your keys, and you can disconnect it at any time under Connected apps.</p>
<form method="post" action="/oauth/authorize">${csrfField(chrome.csrf)}
${Object.entries(input.params).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`)}
<div class="row end"><button class="secondary" type="submit" name="decision" value="deny">Deny</button><button type="submit" name="decision" value="approve" id="approve">Approve</button></div></form></div>`,
  );
}

export function accountPage(chrome: Chrome, input: { sessions: number; error?: string; ok?: string }): Html {
  return layout(
    { title: 'Account', active: 'account', ...chrome },
    html`<h1>Account</h1><p class="lead">${chrome.email}</p>
${notice('error', input.error)}${notice('ok', input.ok)}
<div class="card"><h2>Change password</h2><form method="post" action="/dashboard/account/password">${csrfField(chrome.csrf)}
<label for="current">Current password</label><input id="current" type="password" name="current" autocomplete="current-password" required>
<label for="new-password">New password <span class="muted small">(at least 10 characters)</span></label><input id="new-password" type="password" name="password" autocomplete="new-password" minlength="10" required>
<p class="small muted">Every other signed-in browser is signed out.</p><div class="row"><button type="submit">Change password</button></div></form></div>
<div class="card"><h2>Sessions</h2><p>${input.sessions === 1 ? 'This browser is the only signed-in session.' : `${input.sessions} signed-in sessions, this one included.`}</p>
<form method="post" action="/dashboard/account/sessions/end-others">${csrfField(chrome.csrf)}<button class="secondary" type="submit" ${input.sessions <= 1 ? 'disabled' : ''}>Sign out everywhere else</button></form></div>`,
  );
}

export function errorPage(title: string, message: string, chrome?: Chrome): Html {
  return layout(
    { title, narrow: true, ...(chrome ?? {}) },
    html`<div class="card"><h1>${title}</h1>${notice('error', message)}<p><a href="/dashboard">Back to the dashboard</a></p></div>`,
  );
}
