import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mountHostedMcp } from '../../cli/hosted-mcp.js';
import { oauthTokens } from '../../service/db/schema/index.js';
import { hashCredential } from '../../service/accounts/personal-keys.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { BrowserClient, formFields, signUp } from '../oauth/browser-client.js';

// The whole sign-in of a remote MCP client, as the MCP authorization spec describes it, driven by the
// official SDK client's own OAuth support: 401 → protected-resource metadata → authorization-server
// metadata → dynamic client registration → PKCE consent (a signed-in user approves over HTTP) →
// token bound to {base}/mcp → tools filtered by scope → a site published and a function invoked.
const REDIRECT = 'http://127.0.0.1:9/callback';
let h: Harness;

beforeAll(async () => {
  h = await startHarness('pglite', { SVC_TRUST_PROXY: '1' }, { mount: (app, deps) => mountHostedMcp(app, deps) });
});
afterAll(async () => h?.close());

/** An OAuthClientProvider that keeps everything in memory and hands the authorization URL to the test. */
class MemoryProvider implements OAuthClientProvider {
  info?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = '';
  authorizationUrl?: URL;
  constructor(readonly scope: string) {}
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'SDK test client',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_method: 'none',
      scope: this.scope,
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
}

/** Signs a new user up and approves the consent page at `url`; returns the code sent back to the client. */
async function approveAs(url: URL): Promise<string> {
  const browser = new BrowserClient(h.url);
  expect((await signUp(browser, `mcp-oauth-${Date.now()}@example.com`, 'correct horse battery staple')).status).toBe(303);
  const consent = await browser.get(url.toString());
  expect(consent.status).toBe(200);
  const page = await consent.text();
  const res = await browser.post('/oauth/authorize', { ...formFields(page, '/oauth/authorize'), decision: 'approve' });
  expect(res.status).toBe(303);
  const back = new URL(res.headers.get('location')!);
  return back.searchParams.get('code')!;
}

async function signedInClient(scope: string): Promise<{ client: Client; provider: MemoryProvider }> {
  const provider = new MemoryProvider(scope);
  const url = new URL(`${h.url}/mcp`);
  const first = new StreamableHTTPClientTransport(url, { authProvider: provider });
  const client = new Client({ name: 'sdk-oauth', version: '1.0.0' });
  await expect(client.connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
  const url0 = provider.authorizationUrl!;
  expect(url0.searchParams.get('resource')).toBe(`${h.url}/mcp`);
  // The SDK asks for every scope the protected-resource metadata lists; this user grants fewer.
  url0.searchParams.set('scope', scope);
  await first.finishAuth(await approveAs(url0));
  const signedIn = new Client({ name: 'sdk-oauth', version: '1.0.0' });
  await signedIn.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }));
  return { client: signedIn, provider };
}

const call = async (client: Client, name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as CallToolResult;
const text = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

describe('hosted MCP endpoint with the SDK client’s OAuth', () => {
  it('signs in (DCR + PKCE, token bound to /mcp), lists tools by scope, publishes a site and a function', async () => {
    const { client, provider } = await signedInClient('svc.publish svc.sites.read svc.functions.read svc.functions.write svc.functions.invoke');
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['account_publish_app', 'account_list_apps', 'function_create', 'function_publish']));
    expect(names).not.toContain('account_delete_app'); // svc.sites.write was not granted
    expect(names).not.toContain('account_usage');

    const published = await call(client, 'account_publish_app', { requestId: 'oauth-1', html: '<h1>signed in</h1>', appName: 'oauth-site' });
    expect(published.isError, text(published)).toBeFalsy();
    const app = (published.structuredContent as { app: { pathUrl: string } }).app;
    expect(await (await fetch(app.pathUrl)).text()).toContain('signed in');

    const created = await call(client, 'function_create', {
      name: 'Echo',
      slug: `echo-${Date.now()}`,
      code: 'export default () => ({ status: 200, body: 1 })',
    });
    expect(created.isError, text(created)).toBeFalsy();
    const fn = (created.structuredContent as { function: { functionId: string } }).function;
    expect((await call(client, 'function_publish', { functionId: fn.functionId })).structuredContent).toMatchObject({ function: { status: 'live' } });
    // Spec §8: OAuth tokens cannot invoke Functions, so a signed-in OAuth client is not offered the tool.
    expect(names).not.toContain('function_invoke');

    // RFC 8707: the token is for {base}/mcp; the Account API refuses it, naming the resource.
    const direct = await fetch(`${h.url}/api/v1/sites`, { headers: { authorization: `Bearer ${provider.saved!.access_token}` } });
    expect(direct.status).toBe(401);
    expect((await direct.json()).error.message).toMatch(/issued for .*\/mcp, not .*\/api\/v1/);
    await client.close();
  });

  it('refuses an expired token with the 401 challenge; the SDK client refreshes it and carries on', async () => {
    const { client, provider } = await signedInClient('svc.sites.read');
    const expired = provider.saved!.access_token;
    await h.deps.db
      .update(oauthTokens)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(oauthTokens.hash, hashCredential(expired)));
    const refused = await fetch(`${h.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${expired}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(refused.status).toBe(401);
    const challenge = refused.headers.get('www-authenticate')!;
    expect(challenge).toContain('error="invalid_token"');
    expect(challenge).toContain('resource_metadata=');
    expect((await refused.json()).error.message).toMatch(/expired/);
    // The SDK answers the 401 with its refresh token and retries: the user signs in once.
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('account_list_apps');
    expect(provider.saved!.access_token).not.toBe(expired);
    await client.close();
  });

  it('refuses at /mcp a token issued for the Account API', async () => {
    // The same flow, asking for the Account API instead: the code is exchanged by hand.
    const provider = new MemoryProvider('svc.sites.read');
    const first = new StreamableHTTPClientTransport(new URL(`${h.url}/mcp`), { authProvider: provider });
    await expect(new Client({ name: 'x', version: '1' }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
    const url = provider.authorizationUrl!;
    url.searchParams.set('resource', `${h.url}/api/v1`);
    const code = await approveAs(url);
    const token = await fetch(`${h.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: REDIRECT,
        client_id: provider.info!.client_id,
        code_verifier: provider.verifier,
      }),
    });
    expect(token.status).toBe(200);
    const { access_token } = await token.json();
    expect((await fetch(`${h.url}/api/v1/sites`, { headers: { authorization: `Bearer ${access_token}` } })).status).toBe(200);
    const refused = await fetch(`${h.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${access_token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toContain('error="invalid_token"');
    expect((await refused.json()).error.message).toMatch(/issued for .*\/api\/v1, not .*\/mcp/);
  });
});
