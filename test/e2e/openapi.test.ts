import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../../shared/scopes.js';
import { startHarness, type Harness } from '../helpers/harness.js';

describe('Account API discovery and OpenAPI 3.1 document', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('pglite');
  });
  afterAll(async () => h?.close());

  it('GET /api/v1 needs no credential and links the other APIs', async () => {
    const res = await h.fetch('/api/v1');
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toMatchObject({ ok: true, name: 'svc', links: { openapi: `${h.url}/api/v1/openapi.json`, agentApi: `${h.url}/api/x402` } });
    expect(body.scopes.map((s: { scope: string }) => s.scope)).toEqual([...SCOPES]);
  });

  it('a path no route answers says where the routes of its API are listed', async () => {
    const message = async (path: string) => {
      const res = await h.fetch(path);
      expect(res.status).toBe(404);
      return ((await res.json()) as { error: { message: string } }).error.message;
    };
    expect(await message('/api/x402/nope')).toBe('no route for GET /api/x402/nope: GET /api/x402 lists every action with its method, path and price');
    expect(await message('/api/v1/nope')).toBe('no route for GET /api/v1/nope: GET /api/v1/openapi.json describes every route');
    expect(await message('/api/nope')).toBe('no route for GET /api/nope');
  });

  it('is a valid OpenAPI 3.1 document (swagger-parser) with paths, scopes and error responses', async () => {
    const res = await h.fetch('/api/v1/openapi.json');
    expect(res.status).toBe(200);
    const doc = await res.json();
    expect(doc.openapi).toBe('3.1.0');
    const api = (await SwaggerParser.validate(structuredClone(doc))) as typeof doc;
    expect(Object.keys(api.paths)).toEqual(expect.arrayContaining(['/usage', '/sites', '/sites/{siteId}', '/sites/{siteId}/content']));
    expect(doc.components.securitySchemes.personalKey).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(Object.keys(doc.components.securitySchemes.oauth2.flows.authorizationCode.scopes)).toEqual([...SCOPES]);
    const publish = doc.paths['/sites'].post;
    expect(publish.security).toEqual([{ personalKey: ['svc.publish'] }, { oauth2: ['svc.publish'] }]);
    expect(Object.keys(publish.responses)).toEqual(expect.arrayContaining(['201', '400', '401', '403', '413', '429']));
    const body = publish.requestBody.content['application/json'].schema;
    const schema = body.$ref ? doc.components.schemas[body.$ref.split('/').pop()] : body;
    expect(schema.required).toEqual(expect.arrayContaining(['requestId', 'html']));
    // A request body names only the fields it declares (the service refuses others), nested ones too;
    // what a response holds stays open.
    expect(schema.additionalProperties).toBe(false);
    expect(doc.components.schemas.InlineSiteFile.additionalProperties).toBe(false);
    const created = publish.responses['201'].content['application/json'].schema;
    const site = created.$ref ? doc.components.schemas[created.$ref.split('/').pop()] : created;
    expect(site.additionalProperties).toBeUndefined();
    expect(doc.components.schemas.Error.properties.error.properties.code.enum).toContain('insufficient_scope');
  });
});
