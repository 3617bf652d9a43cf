import net from 'node:net';

/**
 * A loopback TCP proxy to stand between the service and its database: `cut()` drops every open
 * connection and refuses new ones (the database "goes away"), `restore()` listens again on the same port.
 */
export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1') {
  const open = new Set<net.Socket>();
  const track = (s: net.Socket) => {
    open.add(s);
    s.on('close', () => open.delete(s));
    s.on('error', () => s.destroy());
  };
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, targetHost);
    track(client);
    track(upstream);
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  const listen = (port: number) => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  await listen(0);
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    cut(): Promise<void> {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of open) s.destroy();
      return closed;
    },
    restore: () => listen(port),
    async close() {
      for (const s of open) s.destroy();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
