import type { Server } from 'node:http';

/**
 * An idle kept-alive connection must be closed by the client (or the load balancer in front), not
 * by the server: Node's 5 s default raced clients that reuse a socket just as the server drops it
 * (undici, 4 s idle with a timer of 1 s granularity: "other side closed" / ECONNRESET under load),
 * and load balancers keep idle connections for 60 s (AWS ALB). 65 s outlives both.
 */
export function outliveClientKeepAlive(server: unknown): void {
  const node = server as Server;
  node.keepAliveTimeout = 65_000;
  // Whole header sections still have to arrive within 66 s (Node's default is 60 s).
  node.headersTimeout = 66_000;
}
