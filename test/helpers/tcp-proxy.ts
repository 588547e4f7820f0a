/**
 * A TCP proxy in front of a real service (Postgres here) that a test can cut and restore: cut()
 * destroys every open connection and refuses new ones (as a dead database host would), restore()
 * lets connections through again. It listens on an ephemeral port for its whole life.
 */
import net from 'node:net';

export interface TcpProxy {
  port: number;
  /** Connections are refused (closed at once) until restore(). */
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let up = true;
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (!up) {
      client.destroy();
      return;
    }
    const upstream = net.connect(target.port, target.host);
    open.add(client);
    open.add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    cut() {
      up = false;
      for (const s of open) s.destroy();
      open.clear();
    },
    restore() {
      up = true;
    },
    async close() {
      up = false;
      for (const s of open) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
