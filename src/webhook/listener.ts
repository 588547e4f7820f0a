/**
 * The HTTP/1.1 listener of the webhook protocol (external-dns's client speaks HTTP/1.1), with a
 * graceful close: stop accepting, let in-flight requests finish (up to a bound), then cut the rest.
 */
import http from 'node:http';
import type net from 'node:net';
import type { Logger } from 'pino';

export interface WebhookListener {
  /** http://host:port */
  url: string;
  port: number;
  /** Stops accepting, waits up to maxMs (default: the listener's shutdownTimeoutMs) for requests under way, then cuts the rest. */
  close(maxMs?: number): Promise<void>;
}

/** Bounds on slow clients: headers within headersTimeoutMs, the whole request within requestTimeoutMs. */
export interface ListenerTimeouts {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
}

export async function startWebhookListener(
  listen: { host: string; port: number },
  handler: (req: http.IncomingMessage, res: http.ServerResponse) => void,
  opts: { log: Logger; shutdownTimeoutMs?: number; timeouts?: ListenerTimeouts },
): Promise<WebhookListener> {
  const timeouts = opts.timeouts ?? { headersTimeoutMs: 20_000, requestTimeoutMs: 60_000 };
  let active = 0;
  let idle: (() => void) | undefined;
  // Node checks these every connectionsCheckingInterval: at most a second late. A connection that sends
  // nothing is under headersTimeout too.
  const server = http.createServer({ connectionsCheckingInterval: Math.min(1000, timeouts.headersTimeoutMs) }, (req, res) => {
    active++;
    res.once('close', () => {
      active--;
      if (active === 0) idle?.();
    });
    handler(req, res);
  });
  // Longer than Go's idle-connection timeout (90 s): the server never closes a connection external-dns
  // is about to reuse (a POST lost that way would be a connection error, which makes it exit).
  server.keepAliveTimeout = 120_000;
  server.headersTimeout = timeouts.headersTimeoutMs;
  server.requestTimeout = timeouts.requestTimeoutMs;
  const sockets = new Set<net.Socket>();
  server.on('connection', (s: net.Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as net.AddressInfo).port;
  const host = listen.host.includes(':') ? `[${listen.host}]` : listen.host;
  const url = `http://${host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host}:${port}`;
  opts.log.info({ url }, 'serving the external-dns webhook protocol');
  return {
    url,
    port,
    async close(maxMs?: number) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      if (active > 0) {
        await Promise.race([
          new Promise<void>((resolve) => (idle = resolve)),
          new Promise<void>((resolve) => setTimeout(resolve, maxMs ?? opts.shutdownTimeoutMs ?? 30_000).unref()),
        ]);
      }
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}
