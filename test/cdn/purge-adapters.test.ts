import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cloudflareAdapter, fastlyAdapter, purgeAdapterFor, varnishAdapter, webhookAdapter } from '../../service/cdn/purge-adapters.js';
import { loadConfig } from '../../service/config.js';
import { startFakeCdn, type FakeCdn } from './fake-cdn.js';

describe('CDN purge adapters, against a local fake that records calls', () => {
  let fake: FakeCdn;
  let other: FakeCdn;
  beforeAll(async () => {
    fake = await startFakeCdn();
    other = await startFakeCdn();
  });
  afterAll(async () => {
    await fake.close();
    await other.close();
  });
  const reset = () => {
    fake.calls.length = 0;
    other.calls.length = 0;
    fake.answer = () => ({ status: 200, body: '{"success":true}' });
  };

  it('Fastly: POST /service/{id}/purge with the keys and the Fastly-Key', async () => {
    reset();
    await fastlyAdapter(fake.url, 'SVC123', 'tok').purge(['site_a', 'site_a.f01']);
    expect(fake.calls).toHaveLength(1);
    const [call] = fake.calls;
    expect(call).toMatchObject({ method: 'POST', url: '/service/SVC123/purge' });
    expect(call!.headers['fastly-key']).toBe('tok');
    expect(JSON.parse(call!.body)).toEqual({ surrogate_keys: ['site_a', 'site_a.f01'] });
  });

  it('Cloudflare: POST /zones/{id}/purge_cache {tags} with the bearer token; success: false is a failure', async () => {
    reset();
    await cloudflareAdapter(fake.url, 'zone9', 'cf-tok').purge(['site_a']);
    expect(fake.calls[0]).toMatchObject({ method: 'POST', url: '/zones/zone9/purge_cache' });
    expect(fake.calls[0]!.headers.authorization).toBe('Bearer cf-tok');
    expect(JSON.parse(fake.calls[0]!.body)).toEqual({ tags: ['site_a'] });
    fake.answer = () => ({ status: 200, body: '{"success":false,"errors":[{"code":1134,"message":"rate limited"}]}' });
    await expect(cloudflareAdapter(fake.url, 'zone9', 'cf-tok').purge(['site_a'])).rejects.toThrow(/not accepted.*rate limited/);
  });

  it('Varnish: PURGE with xkey-purge to every Varnish server', async () => {
    reset();
    await varnishAdapter([fake.url, other.url]).purge(['site_a', 'site_a.f01']);
    for (const f of [fake, other]) {
      expect(f.calls).toHaveLength(1);
      expect(f.calls[0]).toMatchObject({ method: 'PURGE', url: '/' });
      expect(f.calls[0]!.headers['xkey-purge']).toBe('site_a site_a.f01');
    }
  });

  it('webhook: POST {keys} with the bearer token when set; a non-2xx answer fails', async () => {
    reset();
    await webhookAdapter(`${fake.url}/purge`, 'hook').purge(['k1']);
    expect(fake.calls[0]).toMatchObject({ method: 'POST', url: '/purge', body: '{"keys":["k1"]}' });
    expect(fake.calls[0]!.headers.authorization).toBe('Bearer hook');
    fake.fail(1);
    await expect(webhookAdapter(`${fake.url}/purge`, undefined).purge(['k1'])).rejects.toThrow(/HTTP 503/);
  });

  it('the configuration picks the adapter; a CDN without purge settings is refused at start', () => {
    const fastly = loadConfig({ SVC_CDN_PURGE: 'fastly', SVC_CDN_PURGE_TOKEN: 't', SVC_CDN_ZONE: 's' }).cdn!;
    expect(fastly).toMatchObject({ purge: 'fastly', urls: ['https://api.fastly.com'], maxAgeSeconds: 86_400 });
    expect(purgeAdapterFor(fastly).name).toBe('fastly');
    expect(loadConfig({}).cdn).toBeNull();
    expect(() => loadConfig({ SVC_CDN_MAX_AGE: '60' })).toThrow(/SVC_CDN_MAX_AGE: needs SVC_CDN_PURGE/);
    expect(() => loadConfig({ SVC_CDN_PURGE: 'cloudflare', SVC_CDN_PURGE_TOKEN: 't' })).toThrow(/SVC_CDN_ZONE: required/);
    expect(() => loadConfig({ SVC_CDN_PURGE: 'varnish' })).toThrow(/SVC_CDN_PURGE_URL: required/);
    expect(() => loadConfig({ SVC_CDN_PURGE: 'akamai' })).toThrow(/SVC_CDN_PURGE: varnish, fastly/);
    expect(
      loadConfig({ SVC_CDN_PURGE: 'varnish', SVC_CDN_PURGE_URL: 'http://10.0.0.1:6081, http://10.0.0.2:6081/', SVC_CDN_MAX_AGE: '600' }).cdn,
    ).toMatchObject({
      urls: ['http://10.0.0.1:6081', 'http://10.0.0.2:6081'],
      maxAgeSeconds: 600,
    });
  });
});
