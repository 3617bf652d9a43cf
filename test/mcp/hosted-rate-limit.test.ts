import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mountHostedMcp } from '../../cli/hosted-mcp.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { call, text } from './helpers.js';

// The per-credential rate limit counts what the caller sends. A hosted tool call is one POST to /mcp;
// the tool's in-process call of the service's route is part of it, not a second request (it used to
// authenticate the credential again and count it twice).
const LIMIT = 8;
let h: Harness;
beforeAll(async () => {
  // A clock that stands still: every request falls in the same one-minute window.
  const at = new Date('2026-11-26T12:00:30Z');
  h = await startHarness('pglite', { SVC_RATE_LIMIT_PER_MINUTE: String(LIMIT) }, { clock: { now: () => at }, mount: (app, deps) => mountHostedMcp(app, deps) });
}, 60_000);
afterAll(async () => h?.close());

describe('hosted MCP and the per-credential rate limit', () => {
  it(`counts a tool call once: ${LIMIT} requests a minute are initialize, its notification and ${LIMIT - 2} tool calls`, async () => {
    const { key } = await h.account();
    const client = new Client({ name: 'rate-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${h.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
    try {
      for (let i = 0; i < LIMIT - 2; i++) {
        const usage = await call(client, 'account_usage', {});
        expect(usage.isError, `call ${i + 1}: ${text(usage)}`).toBeFalsy();
      }
      const over = await call(client, 'account_usage', {}).then(
        (r) => text(r),
        (e: Error) => e.message,
      );
      expect(over).toMatch(/429|rate limit/i);
    } finally {
      await client.close().catch(() => {});
    }
  });
});
