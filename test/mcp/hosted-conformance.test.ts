import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mountHostedMcp } from '../../cli/hosted-mcp.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { interopBin } from '../interop/clients.js';

// @modelcontextprotocol/conformance 0.1.13 (0.1.16 calls an fs function Node 20 lacks) against the
// hosted endpoint. The tool sends no credential, so a loopback proxy in front adds a personal key, as a
// signed-in client would. dns-rebinding-protection is not run: a public endpoint must accept any Host,
// and its protection is the bearer credential, not the Host header.
// The conformance runner comes from the interop package (test/interop), installed on first use.
const conformance = await interopBin('conformance');
let h: Harness;
let proxy: http.Server;
let proxyUrl = '';

beforeAll(async () => {
  h = await startHarness('pglite', {}, { mount: (app, deps) => mountHostedMcp(app, deps) });
  const { key } = await h.account();
  proxy = http.createServer((req, res) => {
    const upstream = http.request(
      `${h.url}/mcp`,
      { method: req.method, headers: { ...req.headers, host: new URL(h.url).host, authorization: `Bearer ${key}` } },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
  proxyUrl = `http://localhost:${(proxy.address() as AddressInfo).port}/mcp`;
});
afterAll(async () => {
  proxy?.close();
  await h?.close();
});

describe('hosted /mcp passes the MCP conformance server scenarios', () => {
  it.each(['server-initialize', 'ping', 'tools-list'])(
    '%s',
    async (scenario) => {
      const out = await new Promise<{ code: number | null; output: string }>((resolve) => {
        const p = spawn(conformance, ['server', '--url', proxyUrl, '--scenario', scenario], { stdio: ['ignore', 'pipe', 'pipe'] });
        let output = '';
        p.stdout.on('data', (d: Buffer) => (output += d));
        p.stderr.on('data', (d: Buffer) => (output += d));
        p.on('close', (code) => resolve({ code, output }));
      });
      expect(out.output, scenario).toMatch(/Passed: (\d+)\/\1, 0 failed/);
      expect(out.code, out.output).toBe(0);
    },
    120_000,
  );
});
