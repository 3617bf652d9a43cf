import fs from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { McpEnvSchema } from '../../mcp/config.js';
import { WalletEnvSchema } from '../../wallet/config.js';

// server.json lists svc-mcp in the official MCP Registry: checked against the registry's own schema
// (2025-12-11, vendored: no network in tests) and kept in step with package.json and the readers of
// the environment (mcp/config.ts, wallet/config.ts).
const root = path.resolve(import.meta.dirname, '../..');
const read = (file: string) => JSON.parse(fs.readFileSync(path.join(root, file), 'utf8'));
const serverJson = read('server.json');
const pkg = read('package.json');
const schema = read('test/fixtures/server.schema.2025-12-11.json');

interface EnvironmentVariable {
  name: string;
  default?: string;
  isSecret?: boolean;
}

function validator() {
  const ajv = new Ajv({ allErrors: true, strict: false });
  (addFormats as unknown as (a: Ajv) => void)(ajv);
  return ajv.compile(schema);
}

describe('server.json (MCP Registry)', () => {
  it("is valid against the registry's schema 2025-12-11, which refuses a broken copy", () => {
    const validate = validator();
    expect(validate(serverJson), JSON.stringify(validate.errors)).toBe(true);
    expect(serverJson.$schema).toBe(schema.$id);
    // The validator bites: each of these is a mistake the registry refuses.
    for (const broken of [
      { ...serverJson, name: 'svc' },
      { ...serverJson, description: 'x'.repeat(101) },
      { ...serverJson, packages: [{ ...serverJson.packages[0], version: 'latest' }] },
      { ...serverJson, remotes: [{ ...serverJson.remotes[0], url: '{host}/mcp' }] },
    ])
      expect(validate(broken)).toBe(false);
  });

  it('names the npm package at its version, and package.json proves it (mcpName)', () => {
    expect(pkg.mcpName).toBe(serverJson.name);
    expect(serverJson.version).toBe(pkg.version);
    const [npm] = serverJson.packages;
    expect(npm).toMatchObject({ registryType: 'npm', identifier: pkg.name, version: pkg.version, transport: { type: 'stdio' } });
    // A registry client runs the package's default bin: `svc-agent-host mcp` is svc-mcp (transport.test.ts runs it).
    expect(Object.keys(pkg.bin)).toContain(pkg.name);
    expect(npm.packageArguments).toEqual([expect.objectContaining({ type: 'positional', value: 'mcp' })]);
  });

  it('lists exactly the environment svc-mcp reads, with the defaults the readers apply, secrets marked', () => {
    const vars: EnvironmentVariable[] = serverJson.packages[0].environmentVariables;
    const read = new Set([...Object.keys(McpEnvSchema.shape), ...Object.keys(WalletEnvSchema.shape)]);
    expect(vars.map((v) => v.name).sort()).toEqual([...read].sort());
    const defaults = { ...WalletEnvSchema.parse({}), ...McpEnvSchema.parse({}) } as Record<string, unknown>;
    for (const v of vars) {
      const applied = defaults[v.name];
      const said = typeof applied === 'string' || typeof applied === 'number' ? String(applied) : undefined;
      expect(v.default, v.name).toBe(said);
    }
    expect(
      vars
        .filter((v) => v.isSecret)
        .map((v) => v.name)
        .sort(),
    ).toEqual(['SVC_API_KEY', 'SVC_TABLE_WRITE_KEY', 'SVC_WALLET_PRIVATE_KEY']);
  });

  it('lists the hosted endpoints as remotes: streamable HTTP, the host a variable, the Authorization header secret', () => {
    expect(serverJson.remotes.map((r: { type: string; url: string }) => [r.type, r.url])).toEqual([
      ['streamable-http', 'https://{host}/mcp'],
      ['streamable-http', 'https://{host}/mcp/x402'],
    ]);
    for (const r of serverJson.remotes) expect(r.variables.host.isRequired).toBe(true);
    expect(serverJson.remotes[0].headers).toEqual([expect.objectContaining({ name: 'Authorization', isSecret: true })]);
    expect(serverJson.remotes[1].headers).toBeUndefined();
  });
});
