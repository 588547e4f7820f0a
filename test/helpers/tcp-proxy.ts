/**
 * A TCP proxy in front of a real service (Postgres here) that a test can cut and restore, to make it
 * really unreachable from a server under test (the machine's Postgres cannot be stopped from a
 * test): cut() destroys every open connection and refuses new ones (closed at once, as a dead
 * database host would), restore() lets connections through again. It listens on an ephemeral port
 * for its whole life; the server under test is given `url`.
 */
import net from 'node:net';

export interface TcpProxy {
  /** The target's URL with the proxy's host and port (e.g. a DATABASE_URL through the proxy). */
  url: string;
  /** Connections are refused (closed at once) until restore(). */
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

/** A proxy to the host and port of `targetUrl` (e.g. postgres://user@127.0.0.1:5432/db). */
export async function startTcpProxy(targetUrl: string): Promise<TcpProxy> {
  const target = new URL(targetUrl);
  const host = target.hostname || '127.0.0.1';
  const port = Number(target.port || 5432);
  let up = true;
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (!up) {
      client.destroy();
      return;
    }
    const upstream = net.connect(port, host);
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
  const url = new URL(targetUrl);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as net.AddressInfo).port);
  return {
    url: url.toString(),
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
