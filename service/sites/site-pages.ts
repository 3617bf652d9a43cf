/** The few HTML pages the service itself shows on site hosts: not found, and the password prompt. */
function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!);
}

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${escapeHtml(title)}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;margin:0;display:grid;place-items:center;min-height:100vh;background:#f6f7f9;color:#1d2330}
main{background:#fff;padding:2rem 2.5rem;border-radius:12px;box-shadow:0 2px 12px #0001;max-width:26rem}h1{font-size:1.25rem;margin:0 0 .5rem}
input{font:inherit;padding:.5rem .75rem;border:1px solid #c8ccd4;border-radius:8px;width:100%;box-sizing:border-box;margin:.5rem 0}
button{font:inherit;padding:.5rem 1rem;border:0;border-radius:8px;background:#2d5bff;color:#fff;cursor:pointer}.err{color:#b42318}small{color:#667}</style></head>
<body><main>${body}</main></body></html>`;
}

export function notFoundPage(message: string): string {
  return page('Not found', `<h1>Not found</h1><p>${escapeHtml(message)}</p><small>svc</small>`);
}

/** What a suspended site answers (451), on both of its addresses: neutral, without the operator's reason. */
export function suspendedPage(slug: string): string {
  return page(
    'Unavailable',
    `<h1>This site is unavailable</h1><p>The site <b>${escapeHtml(slug)}</b> has been suspended by the operator of this service.</p><small>svc</small>`,
  );
}

export function passwordPage(input: { action: string; next: string; slug: string; error?: string }): string {
  return page(
    `${input.slug}: password required`,
    `<h1>This site is private</h1><p>Enter the password for <b>${escapeHtml(input.slug)}</b>.</p>
${input.error ? `<p class="err">${escapeHtml(input.error)}</p>` : ''}
<form method="post" action="${escapeHtml(input.action)}"><input type="hidden" name="next" value="${escapeHtml(input.next)}">
<input type="password" name="password" autocomplete="current-password" autofocus required aria-label="Password"><button type="submit">Open</button></form>`,
  );
}
