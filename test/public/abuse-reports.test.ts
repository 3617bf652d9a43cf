import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdminOperation } from '../../service/admin/operations.js';
import { abuseReports } from '../../service/db/schema/index.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { BrowserClient, inputValue } from '../oauth/browser-client.js';

const AT = new Date('2026-11-28T12:00:10Z');

describe.each(dbKinds())('reports from the public (%s)', (kind) => {
  let h: Harness;
  let slug: string;
  beforeAll(async () => {
    h = await startHarness(
      kind,
      { SVC_TRUST_PROXY: '1', SVC_SECURITY_CONTACT: 'security@example.com', SVC_ADDRESS_LIMITS: 'abuse=3' },
      { clock: { now: () => AT } },
    );
    const { key } = await h.account();
    slug = `reported-${kind}`;
    expect((await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: 'r', html: '<h1>phish</h1>', slug } })).status).toBe(201);
  });
  afterAll(async () => h?.close());

  async function report(client: BrowserClient, fields: Record<string, string>, headers: Record<string, string> = {}) {
    const page = await (await client.get(`/abuse?url=${encodeURIComponent(fields.url ?? '')}`)).text();
    return client.post('/abuse', { csrf: inputValue(page, 'csrf'), category: 'phishing', message: 'asks for bank passwords', ...fields }, headers);
  }

  it('stores a report naming a hosted page (both URL forms) and lists it for the operator, newest first', async () => {
    const client = new BrowserClient(h.url);
    const page = await (await client.get(`/abuse?url=${encodeURIComponent(`http://${slug}.localhost/login`)}`)).text();
    expect(page).toContain(`value="http://${slug}.localhost/login"`);
    const first = await report(client, { url: `http://${slug}.localhost:1234/login.html`, contact: 'me@example.org' });
    expect(first.status).toBe(201);
    const id = /id="report-id">([^<]+)</.exec(await first.text())![1];
    const second = await report(client, { url: `${h.url}/s/${slug}/index.html`, category: 'malware', message: 'a download' });
    expect(second.status).toBe(201);

    const listed = (await runAdminOperation(h.deps, 'abuse.list', { site: slug })) as {
      reports: { id: string; url: string; siteSlug: string; category: string; contact: string | null; address: string }[];
    };
    expect(listed.reports).toHaveLength(2);
    expect(listed.reports.map((r) => r.category).sort()).toEqual(['malware', 'phishing']);
    const stored = listed.reports.find((r) => r.id === id)!;
    expect(stored).toMatchObject({ siteSlug: slug, contact: 'me@example.org', address: client.address, url: `http://${slug}.localhost:1234/login.html` });
  });

  it('refuses what names no hosted page, bad fields, and forms from elsewhere; nothing is stored', async () => {
    const before = (await h.deps.db.select().from(abuseReports)).length;
    const bad = async (fields: Record<string, string>, text: RegExp, status = 400, headers: Record<string, string> = {}) => {
      const res = await report(new BrowserClient(h.url), fields, headers);
      expect(res.status, JSON.stringify(fields)).toBe(status);
      expect(await res.text()).toMatch(text);
    };
    await bad({ url: 'https://example.org/' }, /not a page hosted here/);
    await bad({ url: 'not a url' }, /not a page hosted here/);
    await bad({ url: `http://nosuchsite.localhost/` }, /no site named &quot;nosuchsite&quot;|no site named "nosuchsite"/);
    await bad({ url: `http://${slug}.localhost/`, category: 'bad-vibes' }, /category: one of phishing/);
    await bad({ url: `http://${slug}.localhost/`, message: ' ' }, /message: what is wrong/);
    await bad({ url: `http://${slug}.localhost/` }, /form expired/, 403, { 'sec-fetch-site': 'same-site' });
    const noToken = await new BrowserClient(h.url).post('/abuse', { url: `http://${slug}.localhost/`, category: 'spam', message: 'x' });
    expect(noToken.status).toBe(403);
    expect((await h.deps.db.select().from(abuseReports)).length).toBe(before);
  });

  it('is limited per client address: 429 with Retry-After, while another address is still heard', async () => {
    const client = new BrowserClient(h.url);
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await report(client, { url: `http://${slug}.localhost/`, category: 'spam', message: `again ${i}` })).status);
    expect(statuses).toEqual([201, 201, 201, 429]);
    const refused = await report(client, { url: `http://${slug}.localhost/`, category: 'spam', message: 'more' });
    expect(refused.headers.get('retry-after')).toBe('50');
    expect((await report(new BrowserClient(h.url), { url: `http://${slug}.localhost/`, category: 'spam', message: 'other address' })).status).toBe(201);
  });

  it("serves security.txt with the operator's contact and the report form", async () => {
    const res = await h.fetch('/.well-known/security.txt');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(text).toContain('Contact: mailto:security@example.com\n');
    expect(text).toContain(`Contact: ${h.url}/abuse\n`);
    expect(text).toContain('Expires: 2027-05-27T00:00:00.000Z\n');
    expect(text).toContain(`Canonical: ${h.url}/.well-known/security.txt`);
  });
});

describe('svc-agent-host abuse list', () => {
  it('refuses a bad --limit with exit code 1 and a sentence', async () => {
    const r = await promisify(execFile)(process.execPath, [path.resolve('bin/svc.mjs'), 'abuse', 'list', '--limit', 'lots'], {
      env: { ...process.env, SVC_DATA_DIR: '/nonexistent-svc-dir', SVC_LOG_LEVEL: 'silent' },
    }).catch((e: { code: number; stderr: string }) => e);
    expect('code' in r && r.code).toBe(1);
    expect(r.stderr).toContain('--limit is a whole number from 1 to 10000');
  }, 60_000);
});
