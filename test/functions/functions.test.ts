import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdminOperation } from '../../service/admin/operations.js';
import { deleteFunctionSecret, setAllowUserInvoke, setFunctionSecret } from '../../service/functions/functions.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';

type Acct = { accountId: string; key: string; email: string };

describe.each(dbKinds())('Functions on the Account API (%s)', (kind) => {
  let h: Harness;
  beforeAll(async () => {
    // Small limits so the runaway cases end quickly; the service defaults are larger.
    h = await startHarness(kind, { SVC_FUNCTION_CPU_MS: '250', SVC_FUNCTION_TIMEOUT_MS: '3000', SVC_FUNCTION_MEMORY_MB: '16' });
  });
  afterAll(async () => h?.close());

  let slugN = 0;
  const slug = () => `fn-${kind}-${++slugN}-${Date.now() % 100000}`;

  async function create(a: Acct, code: string, extra: Record<string, unknown> = {}) {
    const s = slug();
    const res = await h.fetch('/api/v1/functions', { method: 'POST', key: a.key, json: { name: `F ${s}`, slug: s, code, ...extra } });
    expect(res.status, await res.clone().text()).toBe(201);
    return (await res.json()).function as { id: string; slug: string; status: string; draftVersion: number };
  }
  async function live(a: Acct, code: string, extra: Record<string, unknown> = {}) {
    const fn = await create(a, code, extra);
    const pub = await h.fetch(`/api/v1/functions/${fn.id}/publish`, { method: 'POST', key: a.key });
    expect(pub.status).toBe(200);
    return fn;
  }
  const invoke = (a: Acct, s: string, json: unknown = { method: 'GET', path: '/' }) =>
    h.fetch(`/api/v1/functions/invoke/${s}`, { method: 'POST', key: a.key, json });

  const HEALTHY = 'export default () => "still serving"';
  async function stillServing(a: Acct, s: string) {
    const res = await invoke(a, s);
    expect(res.status).toBe(200);
    expect((await res.json()).response.body).toBe('still serving');
  }

  it('create → draft → publish → invoke → delete, with versions and status', async () => {
    const a = await h.account();
    const fn = await create(a, 'export default () => "v1"');
    expect(fn).toMatchObject({ status: 'draft', draftVersion: 1 });
    expect((await invoke(a, fn.slug)).status).toBe(404); // never published

    const pub = await (await h.fetch(`/api/v1/functions/${fn.id}/publish`, { method: 'POST', key: a.key })).json();
    expect(pub.function).toMatchObject({ status: 'live', liveVersion: 1, hasUnpublishedChanges: false });
    const res = await invoke(a, fn.slug);
    expect(await res.json()).toMatchObject({
      ok: true,
      function: { id: fn.id, slug: fn.slug, version: 1 },
      response: { status: 200, bodyType: 'text', body: 'v1', truncated: false, bytes: 2 },
    });

    const draft = await h.fetch(`/api/v1/functions/${fn.id}/draft`, { method: 'PUT', key: a.key, json: { code: 'export default () => "v2"' } });
    expect(draft.status).toBe(200);
    expect((await draft.json()).function).toMatchObject({ code: 'export default () => "v2"', draftVersion: 2, liveVersion: 1, hasUnpublishedChanges: true });
    expect((await (await invoke(a, fn.slug)).json()).response.body).toBe('v1'); // the live version until publish
    await h.fetch(`/api/v1/functions/${fn.id}/publish`, { method: 'POST', key: a.key });
    expect((await (await invoke(a, fn.slug)).json()).response.body).toBe('v2');

    const list = await (await h.fetch('/api/v1/functions', { key: a.key })).json();
    expect(list.total).toBe(1);
    expect(list.functions[0]).toMatchObject({ id: fn.id, status: 'live', secretNames: [] });

    const del = await h.fetch(`/api/v1/functions/${fn.id}`, { method: 'DELETE', key: a.key });
    expect(await del.json()).toEqual({ ok: true, deleted: { id: fn.id, slug: fn.slug } });
    expect((await h.fetch(`/api/v1/functions/${fn.id}`, { key: a.key })).status).toBe(404);
    expect((await invoke(a, fn.slug)).status).toBe(404);
  });

  // A model holds a function's slug as often as its id: every management route takes either.
  it("every management route takes the Function's slug where it takes its id", async () => {
    const a = await h.account();
    const fn = await create(a, 'export default () => "v1"');
    const bySlug = (method: string, rest: string, json?: unknown) => h.fetch(`/api/v1/functions/${fn.slug}${rest}`, { method, key: a.key, json });
    expect((await (await bySlug('GET', '')).json()).function).toMatchObject({ id: fn.id, slug: fn.slug });
    expect((await bySlug('PUT', '/draft', { code: 'export default () => "v2"' })).status).toBe(200);
    expect((await (await bySlug('POST', '/publish')).json()).function).toMatchObject({ status: 'live', liveVersion: 2 });
    expect((await (await invoke(a, fn.slug)).json()).response.body).toBe('v2');
    expect((await (await bySlug('PUT', '/access', { allowUserInvoke: true })).json()).function.allowUserInvoke).toBe(true);
    // Written in upper case, as a host name may be.
    expect((await h.fetch(`/api/v1/functions/${fn.slug.toUpperCase()}`, { key: a.key })).status).toBe(200);
    expect(await (await bySlug('DELETE', '')).json()).toEqual({ ok: true, deleted: { id: fn.id, slug: fn.slug } });
    expect((await bySlug('GET', '')).status).toBe(404);
  });

  it('checks scopes, slugs and code on the way in', async () => {
    const reader = await h.account(['svc.functions.read']);
    const r = await h.fetch('/api/v1/functions', { method: 'POST', key: reader.key, json: { name: 'x', slug: slug(), code: HEALTHY } });
    expect(r.status).toBe(403);
    expect((await r.json()).error.code).toBe('insufficient_scope');

    const a = await h.account(['svc.functions.read', 'svc.functions.write']);
    const fn = await live(a, HEALTHY);
    const noInvoke = await invoke(a, fn.slug);
    expect(noInvoke.status).toBe(403);

    const taken = await h.fetch('/api/v1/functions', { method: 'POST', key: a.key, json: { name: 'x', slug: fn.slug, code: HEALTHY } });
    expect(taken.status).toBe(409);
    expect((await taken.json()).error.code).toBe('slug_taken');

    const broken = await h.fetch('/api/v1/functions', { method: 'POST', key: a.key, json: { name: 'x', slug: slug(), code: 'export default () => {' } });
    expect(broken.status).toBe(400);
    const body = await broken.json();
    expect(body.error.details.issues[0].field).toBe('code');
    // Where the parser stopped: the end of the code (something left open), or a line and column.
    expect(body.error.message).toBe(
      "code does not compile: SyntaxError: unexpected token in expression: '' at the end of the code (line 1): a bracket, brace or string is not closed",
    );
    const midway = await h.fetch('/api/v1/functions', {
      method: 'POST',
      key: a.key,
      json: { name: 'x', slug: slug(), code: 'export default 1;\nconst x = ;\n' },
    });
    expect((await midway.json()).error.message).toBe("code does not compile: SyntaxError: unexpected token in expression: ';' at line 2, column 11");

    const badSlug = await h.fetch('/api/v1/functions', { method: 'POST', key: a.key, json: { name: 'x', slug: 'Not A Slug!', code: HEALTHY } });
    expect(badSlug.status).toBe(400);
    expect((await badSlug.json()).error.details.issues.map((i: { field: string }) => i.field)).toContain('slug');
  });

  it("another account's Function is a 404 for every management operation", async () => {
    const alice = await h.account();
    const bob = await h.account();
    const fn = await live(alice, HEALTHY, { allowUserInvoke: true });
    // By id and by slug alike.
    for (const ref of [fn.id, fn.slug])
      for (const [method, p, json] of [
        ['GET', `/api/v1/functions/${ref}`, undefined],
        ['DELETE', `/api/v1/functions/${ref}`, undefined],
        ['PUT', `/api/v1/functions/${ref}/draft`, { code: 'export default () => "pwned"' }],
        ['POST', `/api/v1/functions/${ref}/publish`, undefined],
        ['PUT', `/api/v1/functions/${ref}/access`, { allowUserInvoke: false }],
      ] as const) {
        const r = await h.fetch(p, { method, key: bob.key, json });
        expect(r.status, `${method} ${p}`).toBe(404);
        expect((await r.json()).error.message).toBe(`function ${ref} not found`);
      }
    expect((await (await h.fetch('/api/v1/functions', { key: bob.key })).json()).total).toBe(0);
    // Invoke grants no management rights, and the Function is untouched.
    await stillServing(bob, fn.slug);
    expect((await (await h.fetch(`/api/v1/functions/${fn.id}`, { key: alice.key })).json()).function.code).toBe(HEALTHY);
  });

  it('hands the handler {method, path, query, rawQuery, headers, body} and maps its return value', async () => {
    const a = await h.account();
    const echo = await live(a, 'export default async function (request) { return { status: 201, headers: { "x-echo": "yes" }, body: request } }');
    const res = await invoke(a, echo.slug, {
      method: 'POST',
      path: '/items/7',
      query: '?a=1&b=2&b=3',
      headers: { 'Content-Type': 'application/json', Accept: 'text/plain' },
      body: { hello: 'world' },
    });
    expect(res.status).toBe(200);
    const out = await res.json();
    expect(out.response).toMatchObject({ status: 201, headers: { 'x-echo': 'yes' }, bodyType: 'json', truncated: false });
    expect(out.response.body).toEqual({
      method: 'POST',
      path: '/items/7',
      query: { a: '1', b: ['2', '3'] },
      rawQuery: 'a=1&b=2&b=3',
      headers: { 'content-type': 'application/json', accept: 'text/plain' },
      body: { hello: 'world' },
    });

    const json = await live(a, 'export default () => [1, { two: 2 }]');
    expect((await (await invoke(a, json.slug)).json()).response).toMatchObject({ status: 200, bodyType: 'json', body: [1, { two: 2 }] });
    const empty = await live(a, 'export default () => {}');
    expect((await (await invoke(a, empty.slug)).json()).response).toMatchObject({ status: 204, bodyType: 'empty', body: null });
    const badStatus = await live(a, 'export default () => ({ status: 99 })');
    const bad = await invoke(a, badStatus.slug);
    expect(bad.status).toBe(502);
    expect((await bad.json()).error.details.reason).toBe('invalid_return');

    const notForwardable = await invoke(a, echo.slug, { method: 'GET', path: '/', headers: { Authorization: 'Bearer x', Cookie: 'a=b' } });
    expect(notForwardable.status).toBe(400);
    const fields = (await notForwardable.json()).error.details.issues.map((i: { field: string }) => i.field);
    expect(fields).toEqual(['headers.Authorization', 'headers.Cookie']);
    const relative = await invoke(a, echo.slug, { method: 'GET', path: 'no-slash' });
    expect(relative.status).toBe(400);
    const verb = await invoke(a, echo.slug, { method: 'TRACE', path: '/' });
    expect(verb.status).toBe(400);
  });

  it('contains escapes and runaway code, and keeps serving everyone after each', async () => {
    const a = await h.account();
    const healthy = await live(a, HEALTHY);
    const cases: [string, string, string, RegExp?][] = [
      ['infinite loop', 'export default () => { while (true) {} }', 'timeout'],
      ['loop after an await', 'export default async () => { await SVC_MEMORY.caller.get("k"); for (;;) {} }', 'timeout'],
      // Inside long builtins and near the heap limit QuickJS does not poll its interrupt: then the pool's
      // CPU watchdog stops the worker at the CPU budget (plus grace), not at the wall-clock deadline.
      [
        'memory bomb',
        'export default () => { const a = []; for (;;) a.push(new Array(1e5).fill(a.length)) }',
        'out_of_memory|timeout',
        /out of memory|past its 250 ms CPU budget/,
      ],
      [
        'string bomb',
        "export default () => { const a = []; for (;;) a.push('x'.repeat(1e6) + a.length) }",
        'out_of_memory|timeout',
        /out of memory|past its 250 ms CPU budget/,
      ],
      ['huge allocation', 'export default () => new Array(1e9).fill(0)', 'out_of_memory'],
      ['deep recursion', 'export default () => { const f = (n) => f(n + 1) + 1; return f(0) }', 'stack_overflow'],
      ['nested JSON', "export default () => JSON.parse('['.repeat(1e5))", 'stack_overflow'],
      ['never-resolving promise', 'export default () => new Promise(() => {})', 'never_resolved'],
      ['throw', 'export default () => { throw new TypeError("bad input") }', 'threw', /TypeError: bad input/],
      ['constructor trick', "export default () => [].constructor.constructor('return process')()", 'threw', /'process' is not defined/],
      ['require', "export default () => require('fs')", 'threw', /'require' is not defined/],
      ['import node:fs', "import fs from 'node:fs'; export default () => fs", 'threw', /could not load module/],
      ['no default export', 'export const x = 1', 'no_default_export'],
    ];
    for (const [name, code, reason, message] of cases) {
      const fn = await live(a, code);
      const res = await invoke(a, fn.slug);
      const body = await res.json();
      expect(res.status, name).toBe(502);
      expect(body.error.code, name).toBe('function_failed');
      expect(reason.split('|'), `${name}: ${body.error.message}`).toContain(body.error.details.reason);
      if (message) expect(body.error.message, name).toMatch(message);
      await stillServing(a, healthy.slug);
    }
    expect((await fetch(`${h.url}/healthz`)).status).toBe(200);
  });

  it('sees no host: no process/require/fetch, host prototypes unpolluted, a fresh context every call', async () => {
    const a = await h.account();
    const probe = await live(
      a,
      `export default async (req) => {
        const seen = {
          process: typeof process, require: typeof require, fetch: typeof fetch, module: typeof module,
          viaFunction: Function('return typeof process')(),
          leftover: typeof globalThis.leak, polluted: ({}).polluted ?? null,
        };
        globalThis.leak = 1;
        Object.prototype.polluted = 'yes';
        Array.prototype.push = () => 'hijacked';
        req.__proto__.polluted = 'yes';
        JSON.parse = () => 'hijacked';
        return seen;
      }`,
    );
    for (let i = 0; i < 2; i++) {
      const out = await (await invoke(a, probe.slug, { method: 'POST', path: '/', body: { x: 1 } })).json();
      expect(out.response.body).toEqual({
        process: 'undefined',
        require: 'undefined',
        fetch: 'undefined',
        module: 'undefined',
        viaFunction: 'undefined',
        leftover: 'undefined',
        polluted: null,
      });
    }
    // The host (this very process runs the service) is untouched.
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect([].push.toString()).toContain('[native code]');
    expect(JSON.parse('{"a":1}')).toEqual({ a: 1 });

    const readonly = await live(a, 'export default () => { SVC_CALLER = "someone-else"; return SVC_CALLER }');
    const r = await (await invoke(a, readonly.slug)).json();
    expect(r.error.details.reason).toBe('threw');
    expect(r.error.message).toMatch(/read-only/);
  });

  it('SVC_CALLER and SVC_MEMORY.caller are per (account, Function) and persist', async () => {
    const alice = await h.account();
    const bob = await h.account();
    const code = `export default async () => {
      const n = ((await SVC_MEMORY.caller.get('count')) ?? 0) + 1;
      await SVC_MEMORY.caller.set('count', n);
      await SVC_MEMORY.caller.set('tmp', { big: 'x' });
      const removed = await SVC_MEMORY.caller.delete('tmp');
      return { n, caller: SVC_CALLER, removed, tmp: await SVC_MEMORY.caller.get('tmp') };
    }`;
    const counter = await live(alice, code, { allowUserInvoke: true });
    const other = await live(alice, code, { allowUserInvoke: true });
    const call = async (who: Acct, s: string, body?: unknown) =>
      (await (await invoke(who, s, { method: 'POST', path: '/', body, headers: { 'user-agent': 'SVC_CALLER=forged' } })).json()).response.body;

    const a1 = await call(alice, counter.slug);
    const a2 = await call(alice, counter.slug, { SVC_CALLER: 'forged' });
    const b1 = await call(bob, counter.slug);
    const a3 = await call(alice, counter.slug);
    const aOther = await call(alice, other.slug);
    expect([a1.n, a2.n, b1.n, a3.n, aOther.n]).toEqual([1, 2, 1, 3, 1]);
    expect(a1).toMatchObject({ removed: true, tmp: null });
    expect(a1.caller).toMatch(/^caller_[\w-]{32}$/);
    expect(a2.caller).toBe(a1.caller);
    expect(b1.caller).not.toBe(a1.caller);
    expect(aOther.caller).not.toBe(a1.caller); // per Function: two Functions cannot correlate a caller

    // Size limits are enforced and reported to the function.
    const big = await live(
      alice,
      `export default async () => {
      try { await SVC_MEMORY.caller.set('big', 'x'.repeat(20000)); return 'stored' } catch (e) { return e.message }
    }`,
    );
    expect((await call(alice, big.slug)).toString()).toMatch(/limit is 16384/);
    const many = await live(
      alice,
      `export default async () => {
      try { for (let i = 0; i < 10; i++) await SVC_MEMORY.caller.set('k' + i, 'y'.repeat(9000)); return 'stored' } catch (e) { return e.message }
    }`,
    );
    expect(await call(alice, many.slug)).toMatch(/would exceed 65536 bytes/);
  });

  it('enforces 128 KiB on the invoke request and cuts responses over 256 KiB', async () => {
    const a = await h.account();
    const size = await live(a, 'export default (req) => String(req.body.length)');
    const ok = await invoke(a, size.slug, { method: 'POST', path: '/', body: 'x'.repeat(120 * 1024) });
    expect(ok.status).toBe(200);
    expect((await ok.json()).response.body).toBe(String(120 * 1024));
    const tooBig = await invoke(a, size.slug, { method: 'POST', path: '/', body: 'x'.repeat(128 * 1024) });
    expect(tooBig.status).toBe(413);
    expect((await tooBig.json()).error.code).toBe('payload_too_large');

    const huge = await live(a, 'export default () => "é".repeat(200 * 1024)');
    const out = (await (await invoke(a, huge.slug)).json()).response;
    expect(out).toMatchObject({ truncated: true, bytes: 400 * 1024, bodyType: 'text' });
    expect(Buffer.byteLength(out.body)).toBe(256 * 1024);
    const hugeJson = await live(a, 'export default () => ({ body: { rows: Array.from({ length: 40000 }, (_, i) => ({ i })) } })');
    const j = (await (await invoke(a, hugeJson.slug)).json()).response;
    expect(j.truncated).toBe(true);
    expect(j.bodyType).toBe('text');
    expect(j.body.startsWith('{"rows":[{"i":0},')).toBe(true);
    expect(Buffer.byteLength(j.body)).toBe(256 * 1024);
    const exact = await live(a, `export default () => "y".repeat(${256 * 1024})`);
    expect((await (await invoke(a, exact.slug)).json()).response).toMatchObject({ truncated: false, bytes: 256 * 1024 });
  });

  it('secrets: names shown, values never; draft and publish refused with 409 while secrets exist; the function reads them', async () => {
    const a = await h.account();
    const fn = await live(a, 'export default () => ({ token: SVC_SECRETS.API_TOKEN ?? null, names: Object.keys(SVC_SECRETS) })');
    const set = (await runAdminOperation(h.deps, 'function.secret.set', { email: a.email, function: fn.slug, name: 'API_TOKEN', value: 's3cr3t-value' })) as {
      secretNames: string[];
    };
    expect(set.secretNames).toEqual(['API_TOKEN']);

    const got = await h.fetch(`/api/v1/functions/${fn.id}`, { key: a.key });
    const text = await got.text();
    expect(JSON.parse(text).function.secretNames).toEqual(['API_TOKEN']);
    expect(text).not.toContain('s3cr3t-value');
    expect(await (await h.fetch('/api/v1/functions', { key: a.key })).text()).not.toContain('s3cr3t-value');
    expect(JSON.stringify(await runAdminOperation(h.deps, 'function.secret.list', { email: a.email, function: fn.id }))).not.toContain('s3cr3t-value');

    const draft = await h.fetch(`/api/v1/functions/${fn.id}/draft`, { method: 'PUT', key: a.key, json: { code: HEALTHY } });
    expect(draft.status).toBe(409);
    expect((await draft.json()).error.code).toBe('function_has_secrets');
    const pub = await h.fetch(`/api/v1/functions/${fn.id}/publish`, { method: 'POST', key: a.key });
    expect(pub.status).toBe(409);
    expect((await pub.json()).error.code).toBe('function_has_secrets');
    // Nothing changed.
    const after = (await (await h.fetch(`/api/v1/functions/${fn.id}`, { key: a.key })).json()).function;
    expect(after).toMatchObject({ draftVersion: 1, liveVersion: 1 });

    const out = (await (await invoke(a, fn.slug)).json()).response.body;
    expect(out).toEqual({ token: 's3cr3t-value', names: ['API_TOKEN'] });

    // Without secrets the Account API may change it again.
    await deleteFunctionSecret(h.deps, a.accountId, fn.id, 'API_TOKEN');
    expect((await h.fetch(`/api/v1/functions/${fn.id}/draft`, { method: 'PUT', key: a.key, json: { code: HEALTHY } })).status).toBe(200);

    await expect(setFunctionSecret(h.deps, a.accountId, fn.id, 'lower-case', 'v')).rejects.toMatchObject({ code: 'validation_failed' });
    const bob = await h.account();
    await expect(setFunctionSecret(h.deps, bob.accountId, fn.id, 'X', 'v')).rejects.toMatchObject({ code: 'not_found' });
  });

  it('cross-account invoke needs live + allowUserInvoke; otherwise 404', async () => {
    const alice = await h.account();
    const bob = await h.account();
    const closed = await live(alice, HEALTHY);
    expect((await invoke(bob, closed.slug)).status).toBe(404);
    await stillServing(alice, closed.slug); // the owner may always invoke their live Function

    await setAllowUserInvoke(h.deps, alice.accountId, closed.id, true);
    await stillServing(bob, closed.slug);
    await runAdminOperation(h.deps, 'function.access', { email: alice.email, function: closed.slug, allowUserInvoke: false });
    expect((await invoke(bob, closed.slug)).status).toBe(404);

    const unpublished = await create(alice, HEALTHY, { allowUserInvoke: true });
    expect((await invoke(bob, unpublished.slug)).status).toBe(404);
    expect((await invoke(alice, unpublished.slug)).status).toBe(404);
    expect((await invoke(bob, 'no-such-function')).status).toBe(404);

    const open = await live(alice, HEALTHY, { allowUserInvoke: true });
    await stillServing(bob, open.slug);
    await h.fetch(`/api/v1/functions/${open.id}`, { method: 'DELETE', key: alice.key });
    const gone = await invoke(bob, open.slug);
    expect(gone.status).toBe(404);
    expect((await gone.json()).error.code).toBe('not_found');
  });

  it('counts invocations in usage', async () => {
    const a = await h.account();
    const fn = await live(a, HEALTHY);
    await stillServing(a, fn.slug);
    await stillServing(a, fn.slug);
    const usage = await (await h.fetch('/api/v1/usage', { key: a.key })).json();
    expect(usage.usage.functions).toMatchObject({ used: 1, limit: 100 });
    expect(usage.usage.functionInvocations).toMatchObject({ used: 2, limit: 100000 });
  });
});
