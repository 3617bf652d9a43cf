import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { loadMcpConfig } from '../../mcp/config.js';
import { PAYING_TOOLS } from '../../mcp/toolsets.js';
import { connectUpstream } from '../../mcp/upstream-client.js';
import { BIN } from './helpers.js';

// The person's spend settings svc-mcp reads at start, and its connection to a hosted /mcp, which a
// paid call's payment rides on: never redirected.
const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

async function listen(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('SVC_MAX_USDC_PER_TOOL names only tools that pay', () => {
  it('an unknown or free tool is refused at start with the tools that pay; the paying ones are taken', () => {
    expect(() => loadMcpConfig({ SVC_MAX_USDC_PER_TOOL: 'deploy_sites=0.05,list_apps=0.01' })).toThrow(
      `invalid MCP server configuration:\n  SVC_MAX_USDC_PER_TOOL: no tool is named deploy_sites; list_apps never pays (it is free). The tools that pay: ${PAYING_TOOLS.join(', ')}.`,
    );
    expect(PAYING_TOOLS).toEqual(expect.arrayContaining(['deploy_site', 'upload_dataset', 'create_app_from_html', 'convert_data_file_to_api']));
    const config = loadMcpConfig({ SVC_MAX_USDC_PER_TOOL: 'deploy_site=0.05,convert_data_file_to_api=0.02', SVC_MAX_PAID_CALLS_PER_HOUR: '30' });
    expect([...(config.wallet.caps.perTool ?? [])]).toEqual([
      ['deploy_site', 50_000n],
      ['convert_data_file_to_api', 20_000n],
    ]);
    expect(config.wallet.caps.callsPerHour).toBe(30);
  });

  it('svc-mcp does not start with one, and says why', async () => {
    const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = execFile(
        process.execPath,
        [BIN],
        { env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', SVC_MAX_USDC_PER_TOOL: 'deploy=0.05' } },
        (_err, _stdout, stderr) => resolve({ code: child.exitCode, stderr }),
      );
    });
    expect(code).toBe(2);
    expect(stderr).toContain('SVC_MAX_USDC_PER_TOOL: no tool is named deploy. The tools that pay: deploy_site,');
  }, 30_000);
});

describe('the connection to a hosted /mcp never follows a redirect', () => {
  it('a front that redirects is refused, naming SVC_URL; nothing reaches where it points', async () => {
    let reached = 0;
    const target = await listen((_req, res) => {
      reached++;
      res.writeHead(500).end();
    });
    const front = await listen((req, res) => res.writeHead(307, { location: `${target}${req.url}` }).end());
    const refused = await connectUpstream(front, undefined).then(
      () => undefined,
      (e: unknown) => e as Error & { code?: string },
    );
    expect(refused?.message).toMatch(/answered with a redirect \(HTTP 307 to http:\/\/127\.0\.0\.1:\d+\/mcp\/x402\?toolsets=all\); svc-mcp never follows one/);
    expect(refused?.message).toContain('Check SVC_URL');
    expect(reached).toBe(0);
  });
});
