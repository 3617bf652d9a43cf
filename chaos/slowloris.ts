import net from 'node:net';
import type { ServiceNode } from '../test/helpers/nodes.js';
import { emptyResult, type ScenarioResult } from './report.js';

/**
 * Holds `clients` connections that send their headers one line a second and never finish, for
 * `durationMs`, while ordinary requests spread over that time must still answer (200 within 2 s each).
 * The node must stay up. Held longer than the server's header timeout (66 s, checked every 30 s), the
 * slow connections are closed by the server: the report says how many were still open at the end.
 */
export async function slowlorisScenario(node: ServiceNode, options: { clients: number; normalRequests: number; durationMs: number }): Promise<ScenarioResult> {
  const result = emptyResult(
    'slow clients (slowloris)',
    `${options.clients} connections sending headers a line a second for ${Math.round(options.durationMs / 1000)} s`,
  );
  const { hostname, port } = new URL(node.url);
  const sockets: net.Socket[] = [];
  let closedByServer = 0;
  await Promise.all(
    Array.from(
      { length: options.clients },
      () =>
        new Promise<void>((resolve) => {
          const s = net.connect(Number(port), hostname, () => {
            s.write(`GET /healthz HTTP/1.1\r\nHost: ${hostname}\r\n`);
            resolve();
          });
          s.on('error', () => resolve());
          s.on('close', () => closedByServer++);
          sockets.push(s);
        }),
    ),
  );
  const drip = setInterval(() => {
    for (const s of sockets) if (!s.destroyed) s.write(`X-Slow-${Math.floor(Math.random() * 1e6)}: x\r\n`);
  }, 1000);
  const latencies: number[] = [];
  try {
    for (let i = 0; i < options.normalRequests; i++) {
      const path = ['/healthz', '/readyz', '/api/x402/pricing', '/'][i % 4]!;
      const started = performance.now();
      try {
        const res = await fetch(`${node.url}${path}`, { signal: AbortSignal.timeout(2000) });
        await res.arrayBuffer();
        result.tried++;
        if (res.status !== 200) {
          result.serverErrors++;
          if (result.notes.length < 5) result.notes.push(`${path} → ${res.status} while slow clients were held`);
        }
      } catch (e) {
        result.tried++;
        result.serverErrors++;
        if (result.notes.length < 5) result.notes.push(`${path}: no answer within 2 s (${(e as Error).message})`);
      }
      latencies.push(performance.now() - started);
      await new Promise((r) => setTimeout(r, options.durationMs / options.normalRequests));
    }
  } finally {
    clearInterval(drip);
    for (const s of sockets) s.destroy();
  }
  if (node.child.exitCode !== null || node.child.signalCode !== null) {
    result.serverErrors++;
    result.notes.push(`the node died (exit ${node.child.exitCode ?? node.child.signalCode})`);
  }
  latencies.sort((a, b) => a - b);
  const p = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]?.toFixed(1) ?? '-';
  result.load = `${options.normalRequests} ordinary requests: p50 ${p(0.5)} ms, max ${p(1)} ms`;
  result.info.push(`slow connections still open at the end: ${options.clients - closedByServer} of ${options.clients}`);
  return result;
}
