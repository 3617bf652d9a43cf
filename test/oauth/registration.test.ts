import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';

describe.each(dbKinds())('OAuth client registration and discovery metadata (%s)', (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(kind);
  });
  afterAll(async () => h?.close());

  const register = (body: unknown) => h.fetch('/api/oauth/register', { method: 'POST', json: body });

  it('registers a public client with the RFC 7591 response shape', async () => {
    const res = await register({
      redirect_uris: ['https://app.example/cb', 'http://localhost:3000/cb'],
      client_name: 'My App',
      scope: 'svc.sites.read',
      extra: 'ignored',
    });
    expect(res.status).toBe(201);
    const body = await res.json();
    expect(body).toEqual({
      client_id: expect.stringMatching(/^client_[0-9a-z]{24}$/),
      client_id_issued_at: expect.any(Number),
      client_name: 'My App',
      redirect_uris: ['https://app.example/cb', 'http://localhost:3000/cb'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      scope: 'svc.sites.read',
    });
    expect(body.client_secret).toBeUndefined();
  });

  it('allows plain http only on loopback hosts, and refuses fragments and credentials', async () => {
    for (const ok of ['http://127.0.0.1:8080/cb', 'http://localhost/cb', 'http://[::1]:5000/cb', 'https://x.example/a?b=c']) {
      expect((await register({ redirect_uris: [ok] })).status, ok).toBe(201);
    }
    for (const bad of [
      'http://app.example/cb',
      'http://192.168.1.5/cb',
      'https://x.example/cb#frag',
      'https://u:p@x.example/cb',
      'javascript:alert(1)',
      'myapp://cb',
      '/relative',
    ]) {
      const res = await register({ redirect_uris: [bad] });
      expect(res.status, bad).toBe(400);
      expect((await res.json()).error, bad).toBe('invalid_redirect_uri');
    }
  });

  it('refuses metadata it cannot honour, in the RFC 7591 error shape', async () => {
    const cases: [unknown, string][] = [
      [{}, 'invalid_redirect_uri'],
      [{ redirect_uris: [] }, 'invalid_redirect_uri'],
      [{ redirect_uris: ['https://a.example/cb'], token_endpoint_auth_method: 'client_secret_basic' }, 'invalid_client_metadata'],
      [{ redirect_uris: ['https://a.example/cb'], grant_types: ['client_credentials'] }, 'invalid_client_metadata'],
      [{ redirect_uris: ['https://a.example/cb'], response_types: ['token'] }, 'invalid_client_metadata'],
      [{ redirect_uris: ['https://a.example/cb'], scope: 'svc.sites.read admin' }, 'invalid_client_metadata'],
      [{ redirect_uris: ['https://a.example/cb'], client_name: 'x'.repeat(101) }, 'invalid_client_metadata'],
    ];
    for (const [body, error] of cases) {
      const res = await register(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      const json = await res.json();
      expect(json.error, JSON.stringify(body)).toBe(error);
      expect(typeof json.error_description).toBe('string');
    }
    const notJson = await h.fetch('/api/oauth/register', {
      method: 'POST',
      body: 'redirect_uris=x',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect((await notJson.json()).error).toBe('invalid_client_metadata');
  });

  it('publishes authorization-server and protected-resource metadata', async () => {
    const as = await (await h.fetch('/.well-known/oauth-authorization-server')).json();
    expect(as).toMatchObject({
      issuer: h.url,
      authorization_endpoint: `${h.url}/oauth/authorize`,
      token_endpoint: `${h.url}/oauth/token`,
      registration_endpoint: `${h.url}/api/oauth/register`,
      code_challenge_methods_supported: ['S256'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      response_types_supported: ['code'],
      token_endpoint_auth_methods_supported: ['none'],
    });
    expect(as.scopes_supported).toContain('svc.functions.invoke');
    for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/api/v1']) {
      const res = await h.fetch(path, { headers: { origin: 'https://someone.example' } });
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
      expect(await res.json()).toMatchObject({ resource: `${h.url}/api/v1`, authorization_servers: [h.url], bearer_methods_supported: ['header'] });
    }
    // A 401 from the Account API points clients at that metadata.
    const unauth = await h.fetch('/api/v1/sites');
    expect(unauth.headers.get('www-authenticate')).toContain(`resource_metadata="${h.url}/.well-known/oauth-protected-resource"`);
  });

  it('the token endpoint answers in RFC 6749 shape', async () => {
    const { client_id } = await (await register({ redirect_uris: ['https://a.example/cb'] })).json();
    const post = (form: Record<string, string>) =>
      h.fetch('/oauth/token', { method: 'POST', body: new URLSearchParams(form), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    const cases: [Record<string, string>, number, string][] = [
      [{ grant_type: 'authorization_code', code: 'x', code_verifier: 'a'.repeat(43), redirect_uri: 'https://a.example/cb' }, 401, 'invalid_client'],
      [{ client_id: 'client_nope', grant_type: 'refresh_token', refresh_token: 'x' }, 401, 'invalid_client'],
      [{ client_id, grant_type: 'password' }, 400, 'unsupported_grant_type'],
      [{ client_id }, 400, 'invalid_request'],
      [{ client_id, grant_type: 'authorization_code', code: 'svc_oac_nope', redirect_uri: 'https://a.example/cb' }, 400, 'invalid_request'],
      [
        { client_id, grant_type: 'authorization_code', code: 'svc_oac_nope', code_verifier: 'short', redirect_uri: 'https://a.example/cb' },
        400,
        'invalid_request',
      ],
      [
        { client_id, grant_type: 'authorization_code', code: 'svc_oac_nope', code_verifier: 'a'.repeat(43), redirect_uri: 'https://a.example/cb' },
        400,
        'invalid_grant',
      ],
      [{ client_id, grant_type: 'refresh_token', refresh_token: 'svc_ort_nope' }, 400, 'invalid_grant'],
      [{ client_id, grant_type: 'refresh_token', refresh_token: 'svc_ort_nope', resource: 'https://elsewhere.example/api/v1' }, 400, 'invalid_target'],
    ];
    for (const [form, status, error] of cases) {
      const res = await post(form);
      expect(res.status, JSON.stringify(form)).toBe(status);
      expect(res.headers.get('cache-control')).toBe('no-store');
      const body = await res.json();
      expect(body.error, JSON.stringify(form)).toBe(error);
      expect(typeof body.error_description).toBe('string');
    }
  });
});
