import type { Server, ServerResponse } from 'node:http';

/**
 * Listens; rejects with the error instead of leaving it unhandled. A taken port says which one and
 * what to do (`portVariable` names the setting that chooses it).
 */
export function listen(server: Server, port: number, host: string, portVariable = 'PORT'): Promise<void> {
  return new Promise((resolve, reject) => {
    const refuse = (e: NodeJS.ErrnoException) =>
      reject(
        e.code === 'EADDRINUSE'
          ? new Error(
              `port ${port} on ${host} is taken by another process (EADDRINUSE): stop that process or choose another port with ${portVariable}${portVariable.startsWith('-') ? ' ' : '='}…`,
            )
          : e,
      );
    server.once('error', refuse);
    server.listen(port, host, () => {
      server.off('error', refuse);
      resolve();
    });
  });
}

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

export interface Drainable {
  /** Requests received whose response has not finished. */
  inFlight(): number;
  /**
   * Stops accepting connections, lets the requests in flight finish (answers sent from now on close
   * their connection, idle kept-alive connections are closed), and after `timeoutMs` closes what is
   * left. Resolves with the number of requests that were cut off.
   */
  drain(timeoutMs: number): Promise<number>;
}

/** Counts a server's requests in flight so a stop can drain them instead of cutting them off. */
export function drainable(server: unknown): Drainable {
  const node = server as Server;
  const inFlight = new Set<ServerResponse>();
  let draining = false;
  const closeAfterAnswer = (res: ServerResponse) => {
    if (!res.headersSent) res.setHeader('connection', 'close');
  };
  // One shared listener per response (not a closure with `once`'s wrapper): this runs for every request.
  const forget = function (this: ServerResponse) {
    inFlight.delete(this);
  };
  node.on('request', (_req, res: ServerResponse) => {
    // Answered already, synchronously by the listener before this one (the service's fast paths,
    // which answer nothing while it stops): never in flight, and a listener less on the hot path.
    if (res.writableEnded) return;
    inFlight.add(res);
    if (draining) closeAfterAnswer(res);
    res.on('close', forget);
  });
  return {
    inFlight: () => inFlight.size,
    async drain(timeoutMs) {
      draining = true;
      for (const res of inFlight) closeAfterAnswer(res);
      const closed = new Promise<void>((resolve) => node.close(() => resolve()));
      const deadline = Date.now() + timeoutMs;
      while (inFlight.size > 0 && Date.now() < deadline) {
        node.closeIdleConnections();
        await new Promise((r) => setTimeout(r, 50));
      }
      const cut = inFlight.size;
      node.closeAllConnections();
      await closed;
      return cut;
    },
  };
}
