import { viewDocument } from './view-kit.js';

/**
 * Site preview, for every tool that publishes or changes an app: the live page framed at its path
 * URL (the service's own origin, the only one the view's CSP allows), its address (opened through
 * the host), visibility, files and size when the result has them, what it cost, and a button that
 * publishes/unpublishes through the host: publish_app / unpublish_app for a wallet's app (a paid
 * tool, so its price is on the button), account_update_app (public ↔ private) for an account's.
 * A result with `version` (a number, or a rollback's version object) shows which version is live.
 */
const SCRIPT = `
const WALLET_TOGGLE = { publish: 'publish_app', unpublish: 'unpublish_app' };
let state = null;
function appOf(sc) {
  const a = sc.app || sc.site || sc;
  // A rollback answers {siteId, version: {version, fileCount, bytes, previewUrl…}}: the version it made
  // is the one served, and its preview serves exactly those files.
  const v = a.version !== undefined ? a.version : sc.version;
  const made = v && typeof v === 'object' ? v : null;
  return {
    id: a.appId || a.id || sc.appId || sc.siteId,
    name: a.appName || a.slug || sc.appName,
    url: a.url || sc.url,
    pathUrl: a.pathUrl || sc.pathUrl || (made ? made.previewUrl : undefined),
    visibility: a.visibility,
    // deploy_site answers flat ({appId, url, files…}) once the app is published.
    published: a.published !== undefined ? a.published : sc.url && !sc.app && !sc.site ? true : undefined,
    files: typeof a.fileCount === 'number' ? a.fileCount : typeof sc.files === 'number' ? sc.files : made ? made.fileCount : undefined,
    bytes: typeof a.bytes === 'number' ? a.bytes : typeof sc.bytes === 'number' ? sc.bytes : made ? made.bytes : undefined,
    version: made ? made.version : v,
  };
}
function ownerOf(tool, sc) {
  if (tool) return tool.startsWith('account_') || (tool === 'deploy_site' && !sc.receiptIds) ? 'account' : 'wallet';
  return sc.receiptId || sc.receiptIds ? 'wallet' : 'account';
}
function render(result) {
  if (result.isError) return show(failure(result));
  const sc = result.structuredContent || {};
  const app = appOf(sc);
  // Who owns the app is told by the first result (the host's tool); a toggle's answer keeps it.
  const owner = state && state.app.id === app.id ? state.owner : ownerOf(svc.toolName(), sc);
  // A toggle keeps what the first result knew and the toggle's answer did not say (files, size, cost).
  if (state && state.app.id === app.id) for (const k of ['files', 'bytes', 'url', 'pathUrl', 'version']) if (app[k] === undefined) app[k] = state.app[k];
  const paid = sc.paid !== undefined ? sc.paid : state ? state.paid : undefined;
  state = { app, owner, paid };
  const live = app.published !== false && app.visibility !== 'private';
  const facts = [
    app.visibility && h('span', { class: 'badge', 'data-k': 'visibility' }, app.visibility),
    app.published !== undefined && h('span', { class: 'badge', 'data-k': 'published' }, app.published ? 'published' : 'not published'),
    app.version !== undefined && h('span', { class: 'badge', 'data-k': 'version' }, 'version ' + app.version + ' live'),
    app.files !== undefined && h('span', { 'data-k': 'files' }, app.files + (app.files === 1 ? ' file' : ' files')),
    app.bytes !== undefined && h('span', { 'data-k': 'bytes' }, bytes(app.bytes)),
    paid !== undefined && h('span', { 'data-k': 'paid' }, 'cost ' + usdc(paid)),
  ];
  const button = toggleButton(app, owner);
  show(
    h('div', { class: 'row' }, h('h1', {}, app.name || 'app'), button),
    app.url && h('button', { class: 'link', 'data-k': 'url', onclick: () => svc.openLink(app.url) }, app.url),
    h('div', { class: 'row muted', id: 'facts' }, facts),
    h('p', { class: 'error', id: 'toggle-error', hidden: true }),
    live && app.pathUrl
      ? h('iframe', { src: app.pathUrl, title: 'The live page', sandbox: 'allow-scripts allow-forms allow-popups', style: 'width:100%;height:360px;border:1px solid var(--line);border-radius:var(--radius);background:#fff' })
      : h('p', { class: 'muted' }, app.published === false ? 'Not published: nothing is served at its address.' : 'Private: only its owner or its password opens it, so it is not framed here.'),
  );
  fillFiles(app, owner);
}
// The Agent API's answers say no file count or size: the app's entry in list_apps (a wallet's) or
// account_get_app (an account's) does, asked through the host. Where the host cannot (a wallet that
// signs each call itself), the figures are left out.
async function fillFiles(app, owner) {
  if (app.files !== undefined || !app.id) return;
  try {
    const r = owner === 'wallet' ? await svc.callTool('list_apps', {}) : await svc.callTool('account_get_app', { appId: app.id });
    if (r.isError || !r.structuredContent) return;
    const sc = r.structuredContent;
    const entry = sc.apps ? sc.apps.find((a) => a.appId === app.id) : sc.app || sc.site;
    if (!entry || typeof entry.fileCount !== 'number' || !state || state.app.id !== app.id) return;
    state.app.files = entry.fileCount;
    state.app.bytes = entry.bytes;
    const row = document.getElementById('facts');
    if (row) row.append(h('span', { 'data-k': 'files' }, entry.fileCount + (entry.fileCount === 1 ? ' file' : ' files')), h('span', { 'data-k': 'bytes' }, bytes(entry.bytes)));
  } catch (e) {}
}
function toggleButton(app, owner) {
  if (!app.id) return null;
  let tool, args, label;
  if (owner === 'wallet') {
    if (app.published === undefined) return null;
    tool = app.published ? WALLET_TOGGLE.unpublish : WALLET_TOGGLE.publish;
    args = { appId: app.id };
    label = app.published ? 'Unpublish' : 'Publish';
  } else {
    if (!app.visibility) return null;
    tool = 'account_update_app';
    const to = app.visibility === 'public' ? 'private' : 'public';
    args = { appId: app.id, visibility: to };
    label = 'Make ' + to;
  }
  const b = h('button', { class: 'act', 'data-tool': tool }, label);
  b.addEventListener('click', async () => {
    b.disabled = true;
    const err = document.getElementById('toggle-error');
    try {
      const r = await svc.callTool(tool, args);
      if (r.isError) {
        err.textContent = textOf(r);
        err.hidden = false;
        b.disabled = false;
        return;
      }
      render(r);
    } catch (e) {
      err.textContent = e.message;
      err.hidden = false;
      b.disabled = false;
    }
  });
  return b;
}
svc.on('ui/notifications/tool-input', (p) => {
  const a = p.arguments || {};
  if (!state) show(h('p', { class: 'muted' }, 'Publishing ' + (a.appName || a.appId || 'the app') + '…'), h('div', { class: 'progress' }, h('span')));
});
svc.on('ui/notifications/tool-result', render);
svc.connect('svc-site');
`;

export const SITE_VIEW = viewDocument('Site preview', '', SCRIPT);
