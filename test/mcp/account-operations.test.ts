import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCOUNT_OPERATIONS } from '../../shared/account-api/operations.js';
import { startHarness, type Harness } from '../helpers/harness.js';

// The Account API tools are generated from shared/account-api/operations.ts: every entry must be an
// operation the service really serves, with the same method, scope and request fields.
let h: Harness;
beforeAll(async () => {
  h = await startHarness('pglite');
});
afterAll(async () => h?.close());

describe('Account API operations behind the MCP tools', () => {
  it('each matches the OpenAPI document: method, path, scope and request fields', async () => {
    const doc = (await (await h.fetch('/api/v1/openapi.json')).json()) as {
      paths: Record<string, Record<string, { security?: Record<string, string[]>[]; parameters?: { name: string; in: string }[]; requestBody?: unknown }>>;
    };
    for (const op of ACCOUNT_OPERATIONS) {
      const served = doc.paths[op.path]?.[op.method.toLowerCase()];
      expect(served, `${op.tool}: ${op.method} ${op.path}`).toBeDefined();
      const scopes = (served!.security ?? []).flatMap((s) => Object.values(s).flat());
      expect(scopes, op.tool).toContain(op.scope);
      const params = (served!.parameters ?? []).map((p) => `${p.in}:${p.name}`).sort();
      const declared = [...Object.keys(op.params?.shape ?? {}).map((k) => `path:${k}`), ...Object.keys(op.query?.shape ?? {}).map((k) => `query:${k}`)].sort();
      expect(declared, op.tool).toEqual(params);
      expect(Boolean(op.body), `${op.tool} body`).toBe(Boolean(served!.requestBody));
      if (op.body) {
        const body = served!.requestBody as { content: { 'application/json': { schema: unknown } } };
        const properties = Object.keys((resolve(doc, body.content['application/json'].schema) as { properties?: object }).properties ?? {}).sort();
        expect(Object.keys(op.body.shape).sort(), `${op.tool} body fields`).toEqual(properties);
      }
    }
  });
});

function resolve(doc: unknown, schema: unknown): unknown {
  const ref = (schema as { $ref?: string }).$ref;
  if (!ref) return schema;
  return ref
    .slice(2)
    .split('/')
    .reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], doc);
}
