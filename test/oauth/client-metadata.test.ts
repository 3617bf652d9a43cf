import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forgetClientMetadata, isPrivateAddress } from '../../service/oauth/client-metadata.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { BrowserClient, formFields, signUp } from './browser-client.js';

// Client ID Metadata Documents: an HTTPS client_id the server fetches instead of a registration.
// The documents are served by this test on loopback, which only SVC_OAUTH_LOOPBACK_CLIENT_METADATA=1 allows.
const REDIRECT = 'http://127.0.0.1:9/callback';
let dev: Harness;
let strict: Harness;
let docs: http.Server;
let base = '';
const routes = new Map<string, (res: http.ServerResponse) => void>();

beforeAll(async () => {
  docs = http.createServer((req, res) => {
    const route = routes.get(req.url ?? '');
    if (route) route(res);
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => docs.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(docs.address() as AddressInfo).port}`;
  [dev, strict] = await Promise.all([startHarness('pglite', { SVC_OAUTH_LOOPBACK_CLIENT_METADATA: '1', SVC_TRUST_PROXY: '1' }), startHarness('pglite')]);
});
afterAll(async () => {
  await Promise.all([dev?.close(), strict?.close()]);
  docs?.close();
});

function serveJson(path: string, doc: unknown, headers: Record<string, string> = {}) {
  routes.set(path, (res) => res.writeHead(200, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(doc)));
  return `${base}${path}`;
}

function authorizeUrl(h: Harness, clientId: string, challenge: string) {
  const u = new URL(`${h.url}/oauth/authorize`);
  for (const [k, v] of Object.entries({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT,
    scope: 'svc.sites.read',
    resource: `${h.url}/api/v1`,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: 's',
  }))
    u.searchParams.set(k, v);
  return u.toString();
}

async function consentPage(h: Harness, clientId: string, challenge = 'x'.repeat(43)) {
  const browser = new BrowserClient(h.url);
  await signUp(browser, `cimd-${Date.now()}-${Math.random()}@example.com`, 'correct horse battery staple');
  const res = await browser.get(authorizeUrl(h, clientId, challenge));
  return { browser, res, page: await res.text() };
}

describe('Client ID Metadata Documents', () => {
  it('advertises support in the authorization server metadata, beside the registration endpoint older clients use', async () => {
    const meta = await (await fetch(`${dev.url}/.well-known/oauth-authorization-server`)).json();
    // A 2026-07-28 client uses a metadata document when this is true and registers (RFC 7591) only when it is not.
    expect(meta.client_id_metadata_document_supported).toBe(true);
    expect(meta.registration_endpoint).toBe(`${dev.url}/api/oauth/register`);
  });

  it('a client named by its document URL completes PKCE and its token works', async () => {
    const clientId = serveJson('/good.json', {
      client_id: `${base}/good.json`,
      client_name: 'Doc Client',
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: 'none',
    });
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const { browser, res, page } = await consentPage(dev, clientId, challenge);
    expect(res.status).toBe(200);
    expect(page).toContain('Doc Client (127.0.0.1:');
    const back = await browser.post('/oauth/authorize', { ...formFields(page, '/oauth/authorize'), decision: 'approve' });
    const code = new URL(back.headers.get('location')!).searchParams.get('code')!;
    const token = await fetch(`${dev.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: clientId, code_verifier: verifier }),
    });
    expect(token.status).toBe(200);
    const { access_token } = await token.json();
    expect((await fetch(`${dev.url}/api/v1/sites`, { headers: { authorization: `Bearer ${access_token}` } })).status).toBe(200);
  });

  it.each([
    ['names another client_id', () => serveJson('/liar.json', { client_id: 'https://elsewhere.example/c.json', redirect_uris: [REDIRECT] }), /names client_id/],
    [
      'is not JSON',
      () => {
        routes.set('/html', (res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>'));
        return `${base}/html`;
      },
      /not JSON/,
    ],
    [
      'redirects',
      () => {
        routes.set('/moved', (res) => res.writeHead(302, { location: `${base}/good.json` }).end());
        return `${base}/moved`;
      },
      /redirects are not followed/,
    ],
    [
      'is too large',
      () => serveJson('/big.json', { client_id: `${base}/big.json`, redirect_uris: [REDIRECT], padding: 'x'.repeat(70 * 1024) }),
      /larger than 65536 bytes/,
    ],
    [
      'has a redirect_uri that is not https',
      () => serveJson('/badredir.json', { client_id: `${base}/badredir.json`, redirect_uris: ['http://evil.example/cb'] }),
      /must use https/,
    ],
    [
      'sits at the root of its host (the URL has no path)',
      () => {
        routes.set('/', (res) =>
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ client_id: `${base}/`, redirect_uris: [REDIRECT] })),
        );
        return `${base}/`;
      },
      /must have a path/,
    ],
  ])('refuses a document that %s', async (_label, make, message) => {
    forgetClientMetadata();
    const clientId = make();
    const { res, page } = await consentPage(dev, clientId);
    expect(res.status).toBe(400);
    expect(page).toMatch(message);
  });

  it('without the development switch, loopback and private addresses are refused before any request', async () => {
    for (const [clientId, message] of [
      [`${base}/good.json`, /must use https/],
      ['https://127.0.0.1/c.json', /private or reserved address/],
      ['https://10.1.2.3/c.json', /private or reserved address/],
      ['https://[::1]/c.json', /private or reserved address/],
      ['https://169.254.169.254/latest', /private or reserved address/],
    ] as const) {
      const { res, page } = await consentPage(strict, clientId);
      expect(res.status, clientId).toBe(400);
      expect(page, clientId).toMatch(message);
    }
  });

  it('classifies addresses', () => {
    for (const a of [
      '127.0.0.1',
      '10.0.0.1',
      '172.16.5.4',
      '192.168.1.1',
      '100.64.0.1',
      '169.254.169.254',
      '0.0.0.0',
      '::1',
      '::ffff:127.0.0.1',
      'fd00::1',
      'fe80::1',
      'not-an-ip',
    ])
      expect(isPrivateAddress(a), a).toBe(true);
    for (const a of ['93.184.216.34', '1.1.1.1', '2606:4700:4700::1111']) expect(isPrivateAddress(a), a).toBe(false);
  });
});
