/**
 * A minimal cookie-keeping HTTP client that behaves like a browser on forms: it keeps the cookies
 * the service sets, sends them back, and does not follow redirects on its own (tests look at them).
 */
export class BrowserClient {
  readonly cookies = new Map<string, string>();
  /**
   * Each client poses as its own address (X-Forwarded-For, honoured when the service runs with
   * SVC_TRUST_PROXY=1), so the per-address sign-in limits see separate people, as in real life.
   */
  readonly address = `10.${rand()}.${rand()}.${rand()}`;
  constructor(readonly base: string) {}

  async request(pathOrUrl: string, init: RequestInit = {}): Promise<Response> {
    const url = pathOrUrl.startsWith('http') ? pathOrUrl : `${this.base}${pathOrUrl}`;
    const headers = new Headers(init.headers);
    headers.set('x-forwarded-for', this.address);
    if (this.cookies.size) headers.set('cookie', [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    const res = await fetch(url, { ...init, headers, redirect: 'manual' });
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      const expired = attrs.some((a) => /^\s*max-age=0\s*$/i.test(a)) || value === '';
      if (expired) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return res;
  }

  get(path: string): Promise<Response> {
    return this.request(path);
  }

  /** Posts a form the way a browser does (same-origin Origin header, urlencoded body). */
  post(path: string, form: Record<string, string | string[]>, headers: Record<string, string> = {}): Promise<Response> {
    const body = new URLSearchParams();
    for (const [k, v] of Object.entries(form)) for (const one of Array.isArray(v) ? v : [v]) body.append(k, one);
    return this.request(path, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: new URL(this.base).origin, ...headers },
    });
  }
}

/** The value of a hidden/text input in a page (first match). */
export function inputValue(html: string, name: string): string {
  const m = new RegExp(`<input[^>]*name="${name}"[^>]*value="([^"]*)"`).exec(html);
  if (!m) throw new Error(`no input ${name} in page`);
  return decodeEntities(m[1]!);
}

/** Every hidden input of the first form posting to `action`. */
/** The hidden fields of the form posting to `action`; every form of ours carries its CSRF token. */
export function formFields(html: string, action: string): { csrf: string; [name: string]: string } {
  const start = html.indexOf(`action="${action}"`);
  if (start < 0) throw new Error(`no form posting to ${action}`);
  const end = html.indexOf('</form>', start);
  const out: Record<string, string> = {};
  for (const m of html.slice(start, end).matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) out[m[1]!] = decodeEntities(m[2]!);
  const { csrf } = out;
  if (csrf === undefined) throw new Error(`the form posting to ${action} has no csrf field`);
  return { ...out, csrf };
}

export function decodeEntities(s: string): string {
  return s
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

/** Signs up through the dashboard's own form; the client then holds a session cookie. */
export async function signUp(client: BrowserClient, email: string, password: string): Promise<Response> {
  const page = await (await client.get('/dashboard/signup')).text();
  return client.post('/dashboard/signup', { csrf: inputValue(page, 'csrf'), next: '/dashboard', email, password });
}

export async function signIn(client: BrowserClient, email: string, password: string, next = '/dashboard'): Promise<Response> {
  const page = await (await client.get(`/dashboard/signin?next=${encodeURIComponent(next)}`)).text();
  return client.post('/dashboard/signin', { csrf: inputValue(page, 'csrf'), next, email, password });
}

function rand(): number {
  return Math.floor(Math.random() * 254) + 1;
}
