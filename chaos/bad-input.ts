import { sql } from 'drizzle-orm';
import fc from 'fast-check';
import { rowsOf } from '../service/db/client.js';
import type { Harness } from '../test/helpers/harness.js';
import { BrowserClient, signUp } from '../test/oauth/browser-client.js';
import { arbitraryFor, HOSTILE_STRINGS, hostileString, type JsonSchema } from './arbitraries.js';
import { emptyResult, type ScenarioResult } from './report.js';

/** One endpoint to fuzz: where, and the JSON Schemas of its body and query. */
interface Operation {
  method: string;
  /** With `{name}` or `:name` placeholders. */
  path: string;
  body?: JsonSchema;
  query: Record<string, JsonSchema>;
  root: JsonSchema;
  auth: boolean;
}

type OpenApiDoc = {
  paths: Record<
    string,
    Record<string, { parameters?: { in: string; name: string; schema?: JsonSchema }[]; requestBody?: { content?: Record<string, { schema?: JsonSchema }> } }>
  >;
};

function accountApiOperations(doc: OpenApiDoc): Operation[] {
  const ops: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const query = Object.fromEntries((op.parameters ?? []).filter((p) => p.in === 'query').map((p) => [p.name, p.schema ?? {}]));
      const body = op.requestBody?.content?.['application/json']?.schema;
      ops.push({ method: method.toUpperCase(), path: `/api/v1${path}`, body, query, root: doc as unknown as JsonSchema, auth: true });
    }
  }
  return ops;
}

function agentApiOperations(doc: { endpoints: { method: string; path: string; inputSchema: JsonSchema }[] }): Operation[] {
  return doc.endpoints.map((e) => ({
    method: e.method,
    path: e.path,
    body: e.method === 'GET' || e.method === 'DELETE' ? undefined : e.inputSchema,
    query: e.method === 'GET' ? (e.inputSchema.properties ?? {}) : {},
    root: e.inputSchema,
    auth: false,
  }));
}

/** Percent-encodes anything, a lone surrogate included (as the invalid UTF-8 bytes a hostile client would send). */
function encode(s: string): string {
  try {
    return encodeURIComponent(s);
  } catch {
    return s.replace(/[\ud800-\udfff]/g, '').length === s.length ? 'x' : `${encodeURIComponent(s.replace(/[\ud800-\udfff]/g, ''))}%ED%A0%80`;
  }
}

/** Counts of everything a refused request must not change. */
async function footprint(h: Harness): Promise<string> {
  const rows = rowsOf<Record<string, string>>(
    await h.deps.db.execute(sql`select
      (select count(*) from sites) as sites, (select count(*) from site_files) as files,
      (select coalesce(sum(content_version), 0) from sites) as versions,
      (select count(*) from tables) as tables, (select count(*) from table_records) as records,
      (select count(*) from functions) as functions, (select count(*) from datasets) as datasets,
      (select count(*) from x402_payments) as payments, (select count(*) from personal_keys) as keys,
      (select count(*) from publish_requests) as publishes`),
  );
  return JSON.stringify(rows[0]);
}

type Runs = { runsPerOperation: number; seed?: number };
type SendInit = { body?: string; contentType?: string; auth?: boolean; headers?: Record<string, string> };

/** The requests of one run and what they found: every answer checked for a 5xx, a partial write, a redirect off the service. */
class Probe {
  readonly result: ScenarioResult;
  /** Answers 429 (a rate limit or a quota): requests refused before their endpoint's input checks. */
  refusedByLimit = 0;
  readonly #h: Harness;
  readonly #key: string;
  readonly #origin: string;

  constructor(h: Harness, key: string, result: ScenarioResult) {
    this.#h = h;
    this.#key = key;
    this.#origin = new URL(h.url).origin;
    this.result = result;
  }

  note(text: string): void {
    if (this.result.notes.length < 8) this.result.notes.push(text.slice(0, 300));
  }

  serverError(text: string): void {
    this.result.serverErrors++;
    this.note(text);
  }

  /** True (and counted) when `location` leads off the service. */
  offService(location: string, base: string): boolean {
    let target: URL | undefined;
    try {
      target = new URL(location, base);
    } catch {}
    if (target && target.origin === this.#origin) return false;
    this.result.openRedirects++;
    return true;
  }

  async send(method: string, url: string, init: SendInit): Promise<void> {
    const write = method !== 'GET' && method !== 'HEAD';
    const before = write ? await footprint(this.#h) : '';
    const headers: Record<string, string> = { ...(init.headers ?? {}) };
    if (init.contentType) headers['content-type'] = init.contentType;
    if (init.auth) headers.authorization = `Bearer ${this.#key}`;
    let res: Response;
    try {
      res = await fetch(url, { method, headers, body: init.body, redirect: 'manual' });
    } catch (e) {
      this.serverError(`${method} ${url}: no answer (${(e as Error).message})`);
      return;
    }
    const text = await res.text();
    this.result.tried++;
    if (res.status === 429) this.refusedByLimit++;
    if (res.status >= 500) this.serverError(`${method} ${url.slice(0, 120)} → ${res.status} ${text.slice(0, 120)}`);
    if (write && res.status >= 400 && (await footprint(this.#h)) !== before) {
      this.result.partialWrites++;
      this.note(`${method} ${url.slice(0, 120)} → ${res.status} changed the database`);
    }
    const location = res.headers.get('location');
    if (location && res.status >= 300 && res.status < 400 && this.offService(location, url)) this.note(`${method} ${url.slice(0, 120)} → Location ${location}`);
  }
}

/** An account with a site, a Table and a Function: the real ids half the fuzzed paths use. */
async function fixtures(h: Harness) {
  const { key, accountId } = await h.account();
  const site = (await (await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: 'fuzz-base', html: '<p>fuzz</p>' } })).json()).site;
  const fields = [
    { name: 'title', type: 'text' },
    { name: 'n', type: 'number' },
  ];
  const table = (await (await h.fetch(`/api/v1/sites/${site.id}/tables`, { method: 'POST', key, json: { name: 'Fuzz', schema: { fields } } })).json()).table;
  const fn = (
    await (await h.fetch('/api/v1/functions', { method: 'POST', key, json: { name: 'fuzz', slug: 'fuzz-fn', code: 'export default () => 1' } })).json()
  ).function;
  const real: Record<string, string> = {
    siteId: site.id,
    appId: site.id,
    tableId: table?.id ?? 'tbl_x',
    tableSlug: table?.slug ?? 'fuzz',
    functionId: fn?.id ?? 'fn_x',
    slug: fn?.slug ?? 'fuzz-fn',
    appName: site.slug,
  };
  return { key, accountId, siteSlug: site.slug as string, real };
}

/**
 * Schema-derived bad input to every endpoint (the Account API from its OpenAPI document, the Agent
 * API from its discovery document, the Table API, site serving, the dashboard's `next`, OAuth's
 * authorize), plus NUL bytes, control characters, wrong content types and bodies that are not JSON.
 * Checks: no answer ≥ 500, no refused write that changed anything, no redirect off the service.
 */
export async function badInputScenario(h: Harness, options: Runs): Promise<ScenarioResult> {
  const result = emptyResult('bad input to every endpoint', 'fast-check from the schemas, NUL, control characters, wrong types');
  const f = await fixtures(h);
  const probe = new Probe(h, f.key, result);
  const operations = [
    ...accountApiOperations((await (await fetch(`${h.url}/api/v1/openapi.json`)).json()) as OpenApiDoc),
    ...agentApiOperations(await (await fetch(`${h.url}/api/x402`)).json()),
  ];
  for (const op of operations) await fuzzOperation(probe, h.url, op, f.real, options);
  await fuzzTableApi(probe, `${h.url}/api/data/${f.siteSlug}/${f.real.tableSlug}`, options);
  await fuzzSitePaths(probe, `${h.url}/s/${f.siteSlug}`);
  const browser = new BrowserClient(h.url);
  const email = `fuzz-${f.accountId}@example.com`;
  await signUp(browser, email, 'a long enough password 1');
  const cookie = [...browser.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  await fuzzSignInNext(probe, h.url, email, cookie);
  await fuzzAuthorize(probe, h.url, cookie, options);
  result.info.push(`${probe.refusedByLimit} of ${result.tried} fuzzed requests answered 429 (rate limit or quota)`);
  // The full disk with an account of its own: the fuzz's key may have used its requests of the minute
  // (SVC_RATE_LIMIT_PER_MINUTE) or a quota, and that 429 would refuse the publish before it reaches the disk.
  await fullDisk(probe, h, (await h.account()).key);
  result.load = `${result.tried} requests, ${operations.length} operations`;
  return result;
}

const BODY_ENCODING = fc.constantFrom('json', 'json', 'json', 'json', 'text', 'form', 'broken', 'none');

/** The request body as one of the encodings a confused or hostile client sends. */
function encodedBody(method: string, body: unknown, encoding: string): SendInit {
  if (method === 'GET' || method === 'DELETE') return {};
  const json = body === undefined ? undefined : JSON.stringify(body);
  if (encoding === 'json') return { body: json, contentType: 'application/json' };
  if (encoding === 'text') return { body: json, contentType: 'text/plain' };
  if (encoding === 'form') return { body: 'a=1&b=%00', contentType: 'application/x-www-form-urlencoded' };
  if (encoding === 'broken') return { body: `${json ?? ''}{`, contentType: 'application/json' };
  return { body: json };
}

async function fuzzOperation(probe: Probe, base: string, op: Operation, real: Record<string, string>, options: Runs): Promise<void> {
  const placeholder = /\{(\w+)\}|:(\w+)/g;
  const fillPath = (path: string, values: Record<string, string>) =>
    path.replace(placeholder, (_m, a: string | undefined, b: string | undefined) => encode(values[(a ?? b)!] ?? real[(a ?? b)!] ?? 'x'));
  const params = [...op.path.matchAll(placeholder)].map((m) => (m[1] ?? m[2])!);
  const sample = fc.record({
    // Half the time the real ids (reaching the body checks), else hostile ones.
    path: fc.oneof(fc.constant({} as Record<string, string>), fc.record(Object.fromEntries(params.map((p) => [p, hostileString()])))),
    query: fc.record(Object.fromEntries(Object.entries(op.query).map(([k, s]) => [k, arbitraryFor(s, op.root)])), { requiredKeys: [] }),
    body: op.body ? arbitraryFor(op.body, op.root) : fc.constant(undefined),
    encoding: BODY_ENCODING,
  });
  for (const s of fc.sample(sample, { numRuns: options.runsPerOperation, seed: options.seed })) {
    const url = new URL(`${base}${fillPath(op.path, s.path as Record<string, string>)}`);
    for (const [k, v] of Object.entries(s.query)) url.searchParams.set(k, typeof v === 'string' ? v : JSON.stringify(v));
    const init = encodedBody(op.method, s.body, s.encoding);
    await probe.send(op.method, url.toString(), { ...init, auth: op.auth, headers: op.auth ? {} : { 'x-payment': 'not-a-payment' } });
  }
}

/** The Table API: hostile filters, sorts and pages; hostile records. */
async function fuzzTableApi(probe: Probe, tableUrl: string, options: Runs): Promise<void> {
  const query = fc.dictionary(fc.constantFrom('filter', 'sort', 'limit', 'offset', 'fields', 'q', 'title', 'n[gt]', 'where'), hostileString());
  for (const q of fc.sample(query, { numRuns: options.runsPerOperation * 4, seed: options.seed })) {
    const url = new URL(tableUrl);
    for (const [k, v] of Object.entries(q)) url.searchParams.set(k, v);
    await probe.send('GET', url.toString(), {});
  }
  const record = arbitraryFor({ type: 'object', properties: { fields: { type: 'object', properties: { title: { type: 'string' }, n: { type: 'number' } } } } });
  for (const body of fc.sample(record, { numRuns: options.runsPerOperation * 2, seed: options.seed })) {
    await probe.send('POST', tableUrl, { body: JSON.stringify(body), contentType: 'application/json', auth: true });
  }
}

/** Site serving: hostile paths. */
async function fuzzSitePaths(probe: Probe, siteUrl: string): Promise<void> {
  for (const s of HOSTILE_STRINGS.slice(0, 19)) {
    await probe.send('GET', `${siteUrl}/${encode(s)}`, {});
    await probe.send('GET', `${siteUrl}/index.html${encode(s)}.txt`, {});
  }
}

/** The dashboard's sign-in with a hostile `next`: the redirect after signing in must stay on the service. */
async function fuzzSignInNext(probe: Probe, base: string, email: string, cookie: string): Promise<void> {
  for (const next of HOSTILE_STRINGS) {
    // Signing in with a hostile next: the page may refuse it (a 4xx without a form); a form posts.
    const client = new BrowserClient(base);
    const page = await client.get(`/dashboard/signin?next=${encode(next)}`);
    probe.result.tried++;
    if (page.status >= 500) probe.serverError(`sign-in page with next=${JSON.stringify(next).slice(0, 40)} → ${page.status}`);
    const csrf = /<input[^>]*name="csrf"[^>]*value="([^"]*)"/.exec(await page.text())?.[1];
    if (csrf) {
      const res = await client.post('/dashboard/signin', { csrf, next, email, password: 'a long enough password 1' });
      probe.result.tried++;
      if (res.status === 429) probe.refusedByLimit++;
      if (res.status >= 500) probe.serverError(`sign in with next=${JSON.stringify(next).slice(0, 40)} → ${res.status}`);
      const location = res.headers.get('location');
      if (location && probe.offService(location, base)) probe.note(`sign in with next=${JSON.stringify(next)} → Location ${location}`);
    }
    await probe.send('GET', `${base}/dashboard/signin?next=${encode(next)}`, { headers: { cookie } });
  }
}

/** OAuth's authorize endpoint with hostile clients, redirect URIs and states. */
async function fuzzAuthorize(probe: Probe, base: string, cookie: string, options: Runs): Promise<void> {
  const query = fc.record({
    client_id: hostileString(),
    redirect_uri: fc.constantFrom(...HOSTILE_STRINGS),
    response_type: fc.constantFrom('code', 'token', ''),
    state: hostileString(),
  });
  for (const q of fc.sample(query, { numRuns: options.runsPerOperation * 2, seed: options.seed })) {
    const url = new URL(`${base}/api/oauth/authorize`);
    for (const [k, v] of Object.entries(q)) url.searchParams.set(k, v);
    await probe.send('GET', url.toString(), { headers: { cookie } });
  }
}

/** A full disk: 507, and the files written before it removed. */
async function fullDisk(probe: Probe, h: Harness, key: string): Promise<void> {
  const blobs = h.deps.blobs;
  const blobCount = (await blobs.list('sites/')).length;
  const realPut = blobs.put.bind(blobs);
  let puts = 0;
  blobs.put = async (k, body, type) => {
    if (++puts >= 2) throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
    return realPut(k, body, type);
  };
  try {
    const files = [{ path: 'a.css', content: 'a{}' }];
    const res = await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: 'fuzz-full-disk', html: '<p>full</p>', files } });
    probe.result.tried++;
    if (res.status !== 507) probe.serverError(`full disk → ${res.status}, not 507: ${(await res.text()).slice(0, 200)}`);
  } finally {
    delete (blobs as { put?: unknown }).put;
  }
  if ((await blobs.list('sites/')).length !== blobCount) {
    probe.result.partialWrites++;
    probe.note('full disk left blobs behind');
  }
}
