import { html, raw } from 'hono/html';

export type Html = ReturnType<typeof html>;

/** Plain CSS, served from /dashboard/assets/style.css (the CSP forbids inline styles). */
export const STYLE_CSS = `
:root { --bg:#f6f7f9; --card:#fff; --ink:#1c2330; --muted:#5d6878; --line:#e2e6ec; --accent:#2f5bea; --accent-ink:#fff; --danger:#c62f3b; --ok:#1d7f4e; --code:#f1f3f6; }
* { box-sizing: border-box; }
body { margin:0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, Ubuntu, sans-serif; background:var(--bg); color:var(--ink); }
a { color:var(--accent); text-decoration:none; } a:hover { text-decoration:underline; }
header.top { background:var(--card); border-bottom:1px solid var(--line); }
header.top .bar { max-width:980px; margin:0 auto; padding:12px 20px; display:flex; align-items:center; gap:20px; }
.brand { font-weight:700; font-size:18px; color:var(--ink); letter-spacing:-.02em; }
.brand span { color:var(--accent); }
nav.main { display:flex; gap:4px; flex-wrap:wrap; flex:1; }
nav.main a { padding:6px 10px; border-radius:6px; color:var(--muted); }
nav.main a.on { background:var(--code); color:var(--ink); font-weight:600; }
nav.main a:hover { text-decoration:none; background:var(--code); }
.who { color:var(--muted); font-size:13px; display:flex; gap:10px; align-items:center; }
main { max-width:980px; margin:0 auto; padding:28px 20px 60px; }
main.narrow { max-width:460px; padding-top:60px; }
h1 { font-size:24px; margin:0 0 6px; letter-spacing:-.01em; } h2 { font-size:17px; margin:0 0 12px; }
p.lead { color:var(--muted); margin:0 0 22px; }
.card { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:20px; margin-bottom:18px; box-shadow:0 1px 2px rgba(20,30,50,.04); }
.grid { display:grid; grid-template-columns:repeat(auto-fill,minmax(200px,1fr)); gap:14px; }
.stat .n { font-size:22px; font-weight:650; } .stat .l { color:var(--muted); font-size:13px; }
progress { width:100%; height:6px; margin-top:8px; appearance:none; border:0; border-radius:3px; background:var(--code); overflow:hidden; } progress::-webkit-progress-bar { background:var(--code); } progress::-webkit-progress-value { background:var(--accent); } progress::-moz-progress-bar { background:var(--accent); }
.mt { margin-top:18px; } .flat { margin:0; } input.w-name { max-width:220px; } input.w-value { max-width:320px; } a.card { color:inherit; display:block; } a.card:hover { text-decoration:none; border-color:#c9d3e6; }
table { width:100%; border-collapse:collapse; } th, td { text-align:left; padding:9px 8px; border-bottom:1px solid var(--line); vertical-align:top; }
th { font-size:12px; text-transform:uppercase; letter-spacing:.04em; color:var(--muted); font-weight:600; }
tr:last-child td { border-bottom:0; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size:13px; }
code { background:var(--code); padding:1px 5px; border-radius:4px; }
label { display:block; font-weight:600; font-size:14px; margin:14px 0 6px; }
input[type=text], input[type=email], input[type=password], textarea, select { width:100%; padding:9px 11px; border:1px solid var(--line); border-radius:7px; font:inherit; background:#fff; }
input:focus, textarea:focus { outline:2px solid rgba(47,91,234,.25); border-color:var(--accent); }
.checks { display:grid; grid-template-columns:repeat(auto-fill,minmax(260px,1fr)); gap:6px 16px; margin-top:6px; }
.checks label { font-weight:400; margin:0; display:flex; gap:8px; align-items:flex-start; }
.checks small { color:var(--muted); display:block; }
button, .button { display:inline-block; border:0; border-radius:7px; padding:9px 16px; font:inherit; font-weight:600; cursor:pointer; background:var(--accent); color:var(--accent-ink); }
button.secondary { background:var(--code); color:var(--ink); } button.danger { background:#fff; color:var(--danger); border:1px solid #efc5c9; padding:5px 11px; font-size:13px; }
button.link { background:none; color:var(--muted); padding:0; font-weight:400; }
.row { display:flex; gap:10px; align-items:center; flex-wrap:wrap; } .row.end { justify-content:flex-end; } .spacer { flex:1; }
form.inline { display:inline; }
.notice { padding:12px 14px; border-radius:8px; margin-bottom:18px; background:#eef3ff; border:1px solid #cfdcff; }
.notice.error { background:#fff1f2; border-color:#f3c3c8; color:#8a1c26; } .notice.ok { background:#ecf8f1; border-color:#bfe5cf; color:#14573a; }
.secret { display:block; padding:12px; background:#0f1726; color:#d8f5e3; border-radius:8px; word-break:break-all; font-size:14px; margin:10px 0; user-select:all; }
.muted { color:var(--muted); } .small { font-size:13px; }
.pill { display:inline-block; padding:1px 8px; border-radius:999px; background:var(--code); font-size:12px; margin:1px 2px 1px 0; }
.pill.ok { background:#e3f5eb; color:var(--ok); } .pill.off { background:#f2f2f2; color:#777; } .pill.bad { background:#fde8ea; color:var(--danger); }
.consent .app { display:flex; align-items:center; gap:12px; margin-bottom:14px; }
.consent .logo { width:42px; height:42px; border-radius:10px; background:var(--accent); color:#fff; display:flex; align-items:center; justify-content:center; font-weight:700; font-size:19px; }
.consent ul { padding-left:0; list-style:none; margin:10px 0 18px; } .consent li { padding:8px 0; border-bottom:1px solid var(--line); } .consent li:last-child { border:0; }
.consent li b { display:block; font-family: ui-monospace, Menlo, monospace; font-size:13px; font-weight:600; }
footer { text-align:center; color:var(--muted); font-size:12px; padding:20px; }
`;

export interface LayoutOptions {
  title: string;
  email?: string;
  csrf?: string;
  active?: string;
  narrow?: boolean;
}

const NAV: [string, string][] = [
  ['overview', '/dashboard'],
  ['keys', '/dashboard/keys'],
  ['sites', '/dashboard/sites'],
  ['functions', '/dashboard/functions'],
  ['apps', '/dashboard/apps'],
  ['usage', '/dashboard/usage'],
  ['account', '/dashboard/account'],
];
const NAV_LABEL: Record<string, string> = {
  overview: 'Overview',
  keys: 'API keys',
  sites: 'Sites & tables',
  functions: 'Functions',
  apps: 'Connected apps',
  usage: 'Usage',
  account: 'Account',
};

export function layout(opts: LayoutOptions, body: Html): Html {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${opts.title} · svc</title><link rel="icon" href="data:,"><link rel="stylesheet" href="/dashboard/assets/style.css"></head>
<body>
<header class="top"><div class="bar"><a class="brand" href="/dashboard">svc<span>.</span></a>
${
  opts.email
    ? html`<nav class="main">${NAV.map(([k, href]) => html`<a href="${href}" class="${opts.active === k ? 'on' : ''}">${NAV_LABEL[k]}</a>`)}</nav>
<div class="who"><span>${opts.email}</span><form class="inline" method="post" action="/dashboard/signout"><input type="hidden" name="csrf" value="${opts.csrf ?? ''}"><button class="link" type="submit">Sign out</button></form></div>`
    : html`<nav class="main"></nav>`
}
</div></header>
<main class="${opts.narrow ? 'narrow' : ''}">${body}</main>
<footer>svc · <a href="/api/v1">Account API</a> · <a href="/api/v1/openapi.json">OpenAPI</a></footer>
</body></html>`;
}

export function notice(kind: 'ok' | 'error' | 'info', text: string | undefined): Html | '' {
  if (!text) return '';
  return html`<div class="notice ${kind === 'info' ? '' : kind}" role="${kind === 'error' ? 'alert' : 'status'}">${text}</div>`;
}

export function csrfField(token: string): Html {
  return html`<input type="hidden" name="csrf" value="${token}">`;
}

export { html, raw };
