/**
 * A TCP proxy in front of the test Postgres, to make the database really unreachable from a server
 * under test (the machine's Postgres cannot be stopped from a test): cut() destroys every connection
 * and refuses new ones (connection refused, as during a restart or a failover), restore() accepts
 * again. The server under test gets `url` as its DATABASE_URL.
 */
import net from 'node:net';

export interface PgProxy {
  /** The database URL through the proxy. */
  url: string;
  cut(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startPgProxy(databaseUrl: string): Promise<PgProxy> {
  const target = new URL(databaseUrl);
  const host = target.hostname || '127.0.0.1';
  const port = Number(target.port || 5432);
  const pairs = new Set<net.Socket>();
  let server: net.Server | undefined;
  let listenPort = 0;

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = net.createServer((client) => {
        const upstream = net.connect(port, host);
        pairs.add(client);
        pairs.add(upstream);
        const end = () => {
          client.destroy();
          upstream.destroy();
          pairs.delete(client);
          pairs.delete(upstream);
        };
        client.on('error', end).on('close', end);
        upstream.on('error', end).on('close', end);
        client.pipe(upstream);
        upstream.pipe(client);
      });
      s.once('error', reject);
      s.listen(listenPort, '127.0.0.1', () => {
        listenPort = (s.address() as net.AddressInfo).port;
        server = s;
        resolve();
      });
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      const s = server;
      server = undefined;
      for (const p of pairs) p.destroy();
      pairs.clear();
      if (!s) return resolve();
      s.close(() => resolve());
    });

  await listen();
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String(listenPort);
  return {
    url: url.toString(),
    cut: stop,
    restore: async () => {
      if (!server) await listen();
    },
    close: stop,
  };
}
