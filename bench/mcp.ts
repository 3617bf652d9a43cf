import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { freePort, spawnService, waitForHttp } from './lib.js';

/**
 * MCP overhead: the same free action (x402.list_pricing, GET /api/x402/pricing) called
 *   1. directly over HTTP with fetch (the reference),
 *   2. as the MCP tool `list_pricing` through the real SDK client over stdio (spawned svc-mcp),
 *   3. the same tool over streamable HTTP (svc-mcp --http).
 * Sequential calls, one at a time, as an agent makes them. Prints p50/p95/mean and the ratio to direct.
 */
const CALLS = 300;
const WARMUP = 20;

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

interface Figures {
  p50: number;
  p95: number;
  mean: number;
  perSec: number;
}

/**
 * Interleaved rounds (direct, stdio, http, direct, …) so machine load and JIT warm-up hit every path
 * alike; figures are over all calls of a path.
 */
async function measureInterleaved(paths: (() => Promise<void>)[], rounds = 6): Promise<Figures[]> {
  for (const fn of paths) for (let i = 0; i < WARMUP; i++) await fn();
  const times: number[][] = paths.map(() => []);
  const busy: number[] = paths.map(() => 0);
  const per = Math.ceil(CALLS / rounds);
  for (let r = 0; r < rounds; r++) {
    for (const [i, fn] of paths.entries()) {
      const start = performance.now();
      for (let k = 0; k < per; k++) {
        const s = performance.now();
        await fn();
        times[i].push(performance.now() - s);
      }
      busy[i] += performance.now() - start;
    }
  }
  return times.map((t, i) => {
    t.sort((a, b) => a - b);
    return { p50: pct(t, 50), p95: pct(t, 95), mean: t.reduce((a, b) => a + b, 0) / t.length, perSec: (t.length / busy[i]) * 1000 };
  });
}

export async function run(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-mcp-'));
  const port = await freePort();
  const svcUrl = `http://127.0.0.1:${port}`;
  const service = spawnService({
    PORT: String(port),
    SVC_DATA_DIR: path.join(dir, 'data'),
    SVC_BASE_URL: svcUrl,
    SVC_LOG_LEVEL: 'silent',
    SVC_RATE_LIMIT_PER_MINUTE: '0',
  });
  const mcpPort = await freePort();
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', SVC_URL: svcUrl, SVC_SPEND_LEDGER: path.join(dir, 'ledger.json') };
  const { spawn } = await import('node:child_process');
  const httpMcp = spawn(process.execPath, ['bin/svc-mcp.mjs', '--http', '--port', String(mcpPort)], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  let stdio: Client | undefined;
  let http: Client | undefined;
  try {
    await waitForHttp(`${svcUrl}/healthz`);
    await waitForHttp(`http://127.0.0.1:${mcpPort}/healthz`);
    const coldStart = performance.now();
    stdio = new Client({ name: 'bench', version: '1' });
    await stdio.connect(new StdioClientTransport({ command: process.execPath, args: ['bin/svc-mcp.mjs'], env, stderr: 'ignore' }));
    const cold = performance.now() - coldStart;
    http = new Client({ name: 'bench', version: '1' });
    await http.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${mcpPort}/mcp`)));

    const [direct, viaStdio, viaHttp] = await measureInterleaved([
      async () => {
        const r = await fetch(`${svcUrl}/api/x402/pricing`);
        if (!r.ok) throw new Error(`pricing ${r.status}`);
        await r.json();
      },
      async () => {
        const r = await stdio!.callTool({ name: 'list_pricing', arguments: {} });
        if (r.isError) throw new Error(JSON.stringify(r.content));
      },
      async () => {
        const r = await http!.callTool({ name: 'list_pricing', arguments: {} });
        if (r.isError) throw new Error(JSON.stringify(r.content));
      },
    ]);
    console.log(
      `list_pricing, ${CALLS} sequential calls per path in 6 interleaved rounds after ${WARMUP} warm-up; load average ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} cores (loopback; svc-mcp stdio start-up incl. tsx: ${cold.toFixed(0)} ms)`,
    );
    console.log(
      `${'path'.padEnd(40)} ${'p50 ms'.padStart(8)} ${'p95 ms'.padStart(8)} ${'mean ms'.padStart(8)} ${'calls/s'.padStart(8)} ${'vs direct'.padStart(10)}`,
    );
    for (const [label, m] of [
      ['direct HTTP GET /api/x402/pricing (ref)', direct],
      ['MCP tool list_pricing over stdio', viaStdio],
      ['MCP tool list_pricing over streamable HTTP', viaHttp],
    ] as const) {
      console.log(
        `${label.padEnd(40)} ${m.p50.toFixed(2).padStart(8)} ${m.p95.toFixed(2).padStart(8)} ${m.mean.toFixed(2).padStart(8)} ${m.perSec.toFixed(0).padStart(8)} ${(m.mean / direct.mean).toFixed(2).padStart(9)}x`,
      );
    }
  } finally {
    await stdio?.close().catch(() => undefined);
    await http?.close().catch(() => undefined);
    httpMcp.kill('SIGTERM');
    service.kill('SIGTERM');
    await new Promise((r) => service.once('exit', r));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
