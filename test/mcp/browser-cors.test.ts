import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mountHostedMcp } from '../../cli/hosted-mcp.js';
import { startHarness, type Harness } from '../helpers/harness.js';

// An MCP client in a web page of another origin (a web agent, an app hosted anywhere) calling both
// hosted endpoints, in a real browser: the preflights, a signed-in tool call, the 401's challenge.
const CHROMIUM = '/usr/bin/chromium';
const hasChromium = fs.existsSync(CHROMIUM);

describe.skipIf(!hasChromium)('the hosted MCP endpoints from a page of another origin (headless Chromium)', () => {
  let h: Harness;
  let browser: Browser;
  let page: http.Server;
  let pageUrl: string;

  beforeAll(async () => {
    h = await startHarness('pglite', {}, { mount: (app, deps) => mountHostedMcp(app, deps) });
    page = http.createServer((_req, res) => res.end('<!doctype html><title>agent</title>'));
    await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
    pageUrl = `http://127.0.0.1:${(page.address() as AddressInfo).port}/`;
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => (page ? page.close(() => resolve()) : resolve()));
    await h?.close();
  });

  it('calls /mcp/x402 and /mcp with a key, and reads the challenge of /mcp without one', async () => {
    const { key } = await h.account();
    const tab = await (await browser.newContext()).newPage();
    await tab.goto(pageUrl);
    const seen = await tab.evaluate(
      async ({ base, key }) => {
        const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };
        const rpc = (method: string, params = {}) => JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
        const wallet = await fetch(`${base}/mcp/x402`, { method: 'POST', headers, body: rpc('tools/list') });
        const signedIn = await fetch(`${base}/mcp`, {
          method: 'POST',
          headers: { ...headers, authorization: `Bearer ${key}` },
          body: rpc('tools/call', { name: 'account_usage', arguments: {} }),
        });
        const stranger = await fetch(`${base}/mcp`, { method: 'POST', headers, body: rpc('ping') });
        return {
          walletTools: ((await wallet.json()) as { result: { tools: unknown[] } }).result.tools.length,
          usage: ((await signedIn.json()) as { result: { isError?: boolean; structuredContent: Record<string, unknown> } }).result,
          stranger: [stranger.status, stranger.headers.get('www-authenticate')],
        };
      },
      { base: h.url, key },
    );
    expect(seen.walletTools).toBeGreaterThan(10);
    expect(seen.usage.isError).toBeFalsy();
    expect(seen.usage.structuredContent).toHaveProperty('usage');
    expect(seen.stranger[0]).toBe(401);
    expect(seen.stranger[1]).toContain(`resource_metadata="${h.url}/.well-known/oauth-protected-resource/mcp"`);
  });
});
