/**
 * What every view shares: the MCP Apps wire protocol (`io.modelcontextprotocol/ui`, protocol
 * 2026-01-26) spoken over postMessage to the host that frames the view, the light/dark styles, and
 * the document around a view's own script. The protocol is the one `App` of
 * @modelcontextprotocol/ext-apps speaks; it is written out here (~2 KB) instead of bundling `App`
 * (its browser bundle carries zod, and the package wants the 2.x SDK and React as peers): each view
 * stays a few kilobytes, one offline document with nothing to load.
 *
 * Views build their DOM with textContent and attributes only (never innerHTML of data): a tool
 * result holds whatever an app, a Table or a data file holds.
 */

/** The MCP Apps protocol version the views ask for in `ui/initialize`. */
export const VIEW_PROTOCOL_VERSION = '2026-01-26';

/**
 * `svc`: the bridge to the host. `svc.on(method, fn)` for host notifications
 * (`ui/notifications/tool-input`, `…/tool-result`, `…/tool-cancelled`); `svc.connect()` sends
 * `ui/initialize`, applies the host's theme and style variables, then `ui/notifications/initialized`;
 * `svc.callTool(name, args)` is `tools/call` through the host; `svc.openLink(url)` is `ui/open-link`.
 * The document's height follows its content (`ui/notifications/size-changed`).
 * `h(tag, attrs, ...children)` builds an element; `usdc`, `bytes` format figures.
 */
const BRIDGE = `
const svc = (() => {
  let next = 1;
  const waiting = new Map();
  const handlers = {};
  const post = (m) => window.parent.postMessage(Object.assign({ jsonrpc: '2.0' }, m), '*');
  const request = (method, params) =>
    new Promise((resolve, reject) => {
      const id = next++;
      waiting.set(id, { resolve, reject });
      post({ id, method, params });
    });
  const root = document.documentElement;
  const context = {};
  function applyContext(c) {
    if (!c) return;
    Object.assign(context, c);
    if (c.theme) root.dataset.theme = c.theme;
    const vars = c.styles && c.styles.variables;
    if (vars) for (const k of Object.keys(vars)) if (vars[k]) root.style.setProperty(k, vars[k]);
  }
  window.addEventListener('message', (e) => {
    if (e.source !== window.parent) return;
    const m = e.data;
    if (!m || m.jsonrpc !== '2.0') return;
    if (m.method === undefined) {
      const w = waiting.get(m.id);
      if (!w) return;
      waiting.delete(m.id);
      if (m.error) w.reject(new Error(m.error.message || 'refused by the host'));
      else w.resolve(m.result);
      return;
    }
    if (m.method === 'ui/notifications/host-context-changed') applyContext(m.params);
    if (m.id !== undefined) post({ id: m.id, result: {} });
    const fn = handlers[m.method];
    if (fn) fn(m.params || {});
  });
  let lastHeight = 0;
  new ResizeObserver(() => {
    const height = Math.ceil(root.getBoundingClientRect().height);
    if (height === lastHeight) return;
    lastHeight = height;
    post({ method: 'ui/notifications/size-changed', params: { height } });
  }).observe(root);
  return {
    context,
    on(method, fn) { handlers[method] = fn; },
    async connect(name) {
      const r = await request('ui/initialize', { appInfo: { name, version: '1' }, appCapabilities: {}, protocolVersion: '${VIEW_PROTOCOL_VERSION}' });
      applyContext(r && r.hostContext);
      post({ method: 'ui/notifications/initialized', params: {} });
      return r;
    },
    async callTool(name, args) { return request('tools/call', { name, arguments: args }); },
    openLink(url) { return request('ui/open-link', { url }).catch(() => window.open(url, '_blank', 'noopener')); },
    toolName() { return context.toolInfo && context.toolInfo.tool ? context.toolInfo.tool.name : undefined; },
  };
})();
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== undefined && c !== null && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}
const textOf = (r) => ((r && r.content) || []).filter((c) => c.type === 'text').map((c) => c.text).join('\\n');
const usdc = (v) => (v === undefined || v === null ? '' : Number(v) === 0 ? 'free' : v + ' USDC');
function bytes(n) {
  if (typeof n !== 'number') return '';
  if (n < 1024) return n + ' B';
  if (n < 1048576) return (n / 1024).toFixed(1) + ' KB';
  return (n / 1048576).toFixed(1) + ' MB';
}
function show(...children) {
  const main = document.getElementById('view');
  main.replaceChildren(...children.flat().filter(Boolean));
}
function failure(r) {
  return h('p', { class: 'error', role: 'alert' }, textOf(r) || 'The tool failed.');
}
`;

/** Light by default, dark when the host says so; the host's own style variables win over both. */
const STYLE = `
:root{color-scheme:light;--bg:var(--color-background-primary,#fff);--bg2:var(--color-background-secondary,#f4f5f7);--fg:var(--color-text-primary,#1b1d21);--fg2:var(--color-text-secondary,#5c6370);--line:var(--color-border-primary,#dde0e5);--accent:var(--color-text-info,#2557d6);--bad:var(--color-text-danger,#c2302b);--good:var(--color-text-success,#1d7a3e);--radius:var(--border-radius-md,8px);font-family:var(--font-sans,system-ui,-apple-system,"Segoe UI",sans-serif);font-size:14px}
:root[data-theme=dark]{color-scheme:dark;--bg:var(--color-background-primary,#1c1e22);--bg2:var(--color-background-secondary,#272a30);--fg:var(--color-text-primary,#e8eaed);--fg2:var(--color-text-secondary,#a0a6b0);--line:var(--color-border-primary,#3a3e46);--accent:var(--color-text-info,#7aa7ff);--bad:var(--color-text-danger,#ff7b72);--good:var(--color-text-success,#5bd48a)}
*{box-sizing:border-box}body{margin:0;background:var(--bg);color:var(--fg)}main{padding:12px;display:flex;flex-direction:column;gap:10px}
h1{font-size:16px;margin:0;word-break:break-all}a,.link{color:var(--accent);cursor:pointer;text-decoration:underline;background:none;border:0;padding:0;font:inherit;word-break:break-all;text-align:left}
.row{display:flex;flex-wrap:wrap;gap:6px 12px;align-items:center}.muted{color:var(--fg2)}.error{color:var(--bad);white-space:pre-wrap;margin:0}
.badge{border:1px solid var(--line);border-radius:999px;padding:1px 8px;font-size:12px;background:var(--bg2)}
button.act{background:var(--bg2);color:var(--fg);border:1px solid var(--line);border-radius:var(--radius);padding:4px 12px;font:inherit;cursor:pointer}button.act:disabled{opacity:.5;cursor:default}
table{border-collapse:collapse;width:100%;font-size:13px}th,td{border-bottom:1px solid var(--line);padding:4px 6px;text-align:left;vertical-align:top;max-width:280px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
th{background:var(--bg2);position:sticky;top:0}.scroll{overflow:auto;max-height:420px;border:1px solid var(--line);border-radius:var(--radius)}
code{font-family:var(--font-mono,ui-monospace,monospace);font-size:12px;background:var(--bg2);padding:1px 4px;border-radius:4px;word-break:break-all}
.bar{height:8px;background:var(--bg2);border-radius:4px;overflow:hidden;border:1px solid var(--line)}.bar>span{display:block;height:100%;background:var(--accent)}.bar.over>span{background:var(--bad)}
.progress{height:6px;background:var(--bg2);border-radius:3px;overflow:hidden}.progress>span{display:block;height:100%;width:30%;background:var(--accent);animation:slide 1.2s infinite ease-in-out}
@keyframes slide{from{margin-left:-30%}to{margin-left:100%}}
`;

/** One view document: the shared styles and bridge, then the view's own styles and script, all inline. */
export function viewDocument(title: string, ownStyle: string, ownScript: string): string {
  // No `</script>` or `</style>` can end the inline blocks early: the view's code is ours and holds none.
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${title}</title><style>${minify(STYLE + ownStyle)}</style></head><body><main id="view"><p class="muted">Waiting for the tool's result…</p></main><script>${BRIDGE}${ownScript}</script></body></html>`;
}

/** Drops the line breaks and indentation of the inline CSS (a view's size is what a host downloads). */
function minify(css: string): string {
  return css.replace(/\n\s*/g, '');
}
