/**
 * The HTTP front of both HTTP ports (the API, DNSPLANE_LISTEN; the external-dns webhook,
 * DNSPLANE_WEBHOOK_LISTEN and the sidecar): one TCP listener whose connections are handed to Node's
 * HTTP/1.1 server, or to its h2c server, and everything a port owes to hostile or slow clients, which
 * Node's servers do not give connections fed to them by hand:
 * - caps.ts: connections per client address and in total, refused at accept;
 * - proxied.ts: behind a trusted proxy (DNSPLANE_TRUSTED_PROXIES), the client a PROXY protocol header
 *   names, and per request the one a forwarded header names (net/forwarded.ts): the address every door
 *   then knows the request by (net/client-address.ts);
 * - the sniff: Node's h2c server cannot fall back to HTTP/1.1, so the first bytes of each connection
 *   pick the server (an HTTP/2 connection starts with "PRI * HTTP/2.0"); a port without h2c hands
 *   every connection to HTTP/1.1;
 * - clocks.ts: headers, whole request and idle bounded per connection by our own clock, whatever the
 *   client sent first, and the lingering close;
 * - a body over the port's limit, when its Content-Length says so, refused before it is sent
 *   (before `100 Continue`, on HTTP/1.1), in the port's own words (`bodyLimit.refuse`);
 * - a graceful close: stop accepting, let requests under way finish (up to a bound), cut the rest.
 */
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { hostOf, TrustedProxies } from '../../net/address.js';
import { markConnectionClient, markRequestClient } from '../../net/client-address.js';
import { clientFromHeader, type ForwardedHeader } from '../../net/forwarded.js';
import { ConnectionCaps, type ConnectionLimits } from './caps.js';
import { Clocks, type Connection, type Timeouts } from './clocks.js';
import { FrontMetrics } from './metrics.js';
import { ProxyNotices, readPreface } from './proxied.js';

export type { ConnectionLimits } from './caps.js';
export type { Timeouts } from './clocks.js';
export { LINGER_MAX_MS, LINGER_QUIET_MS } from './clocks.js';

/** The proxies whose word on the client's address is believed (DNSPLANE_TRUSTED_PROXIES), and the header trusted HTTP proxies write the client into (DNSPLANE_CLIENT_ADDRESS_HEADER). */
export interface ProxyTrust {
  trusted: TrustedProxies;
  header: ForwardedHeader;
}

export type FrontRequest = http.IncomingMessage | http2.Http2ServerRequest;
export type FrontResponse = http.ServerResponse | http2.Http2ServerResponse;

interface Common {
  /** The port's name in metrics and logs: api, webhook. */
  name: string;
  listen: { host: string; port: number };
  timeouts: Timeouts;
  limits: ConnectionLimits;
  /** A request body may not be larger than maxBytes: one whose Content-Length says it is gets `refuse`. */
  bodyLimit?: { maxBytes: number; refuse(req: FrontRequest, res: FrontResponse): void };
  log: Logger;
  /** Where the front's series go (front/metrics.ts); none: not measured. */
  registry?: Registry;
  /** How long close() waits for requests under way by default. */
  shutdownTimeoutMs: number;
  /** Told of every answer sent whole, with the seconds since the request's headers were read (the port's RPC metrics). */
  onAnswered?: (req: FrontRequest, res: FrontResponse, seconds: number) => void;
  /** Whose word on the client's address is believed; none: every peer is its own client. */
  proxies?: ProxyTrust;
}

/** A port that serves HTTP/1.1 and h2c, or HTTP/1.1 alone. */
export type FrontOptions =
  | (Common & { h2c: true; handler: (req: FrontRequest, res: FrontResponse) => void })
  | (Common & { h2c?: false; handler: (req: http.IncomingMessage, res: http.ServerResponse) => void });

export interface Front {
  /** http://host:port (127.0.0.1 when listening on every address). */
  url: string;
  port: number;
  /** Stops accepting, waits up to maxMs for requests under way, then cuts every connection. */
  close(maxMs?: number): Promise<void>;
}

export async function startFront(opts: FrontOptions): Promise<Front> {
  const caps: ConnectionCaps = new ConnectionCaps(opts.limits, opts.name, opts.log, (reason) => metrics.refused(reason));
  const metrics = new FrontMetrics(opts.registry, opts.name, () => caps.size);
  const clocks = new Clocks(opts.timeouts, (reason) => metrics.closed(reason), opts.onAnswered);
  const handler = opts.handler as (req: FrontRequest, res: FrontResponse) => void;
  const limit = opts.bodyLimit;
  const trusted = opts.proxies?.trusted ?? new TrustedProxies([]);
  const forwarded = opts.proxies?.header ?? 'none';
  const notices = new ProxyNotices(opts.log, opts.name);

  const serve = (req: FrontRequest, res: FrontResponse): void => {
    const conn = clocks.of(req);
    if (!conn || conn.phase === 'linger') {
      // A request read while the connection drains after a refusal: not served.
      res.destroy();
      return;
    }
    clocks.request(conn, req, res);
    // Through a trusted HTTP proxy: the client its header names (the rightmost address not itself trusted).
    if (conn.client !== undefined) {
      const value = req.headers[forwarded];
      markRequestClient(req, clientFromHeader(Array.isArray(value) ? value.join(',') : value, forwarded, conn.client, trusted));
    }
    if (limit && Number(req.headers['content-length'] ?? 0) > limit.maxBytes) limit.refuse(req, res);
    else handler(req, res);
  };
  // Node's own clocks are off (ours are in clocks.ts); keepAliveTimeout stays for its
  // `Keep-Alive: timeout=` hint, which lets a client stop reusing a connection before we close it.
  const h1 = http.createServer({ headersTimeout: 0, requestTimeout: 0 }, serve);
  h1.keepAliveTimeout = opts.timeouts.idleMs;
  // Expect: 100-continue: a body over the limit is refused before the client sends it.
  h1.on('checkContinue', (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (!(limit && Number(req.headers['content-length'] ?? 0) > limit.maxBytes)) res.writeContinue();
    serve(req, res);
  });
  const h2 = opts.h2c ? http2.createServer(serve) : undefined;
  /** The connection being handed to the h2 server, which makes its session at once ('session'). */
  let handing: Connection | undefined;
  h2?.on('session', (session) => handing && clocks.h2(handing, session));

  // noDelay as Node's HTTP servers set it on what they accept (an answer is sent when written, not held
  // for the client's acknowledgement of the last one).
  const front = net.createServer({ noDelay: true }, (socket) => {
    // Gone before it was accepted (reset by its client): nothing to serve, nobody to name.
    if (socket.remoteAddress === undefined) {
      socket.destroy();
      return;
    }
    const peer = hostOf(socket.remoteAddress);
    const viaProxy = trusted.has(peer);
    /** Whose connection it counts as in the caps: a trusted proxy's counts in the total only, until its header names the client. */
    let capsHost = viaProxy ? undefined : peer;
    if (caps.take(capsHost, peer) !== undefined) {
      socket.destroy();
      return;
    }
    const conn = clocks.add(socket);
    socket.once('close', () => caps.release(capsHost));
    readPreface(
      socket,
      viaProxy,
      ({ first, client }) => {
        const from = client ?? peer;
        if (client !== undefined) {
          if (caps.assign(client) !== undefined) {
            socket.destroy();
            return;
          }
          capsHost = client;
          markConnectionClient(socket, client);
        }
        // Forwarded headers are believed when the connection's client is itself a trusted proxy.
        if (forwarded !== 'none' && trusted.has(from)) conn.client = from;
        socket.unshift(first);
        if (h2 && first.subarray(0, 3).toString('latin1') === 'PRI') {
          handing = conn;
          h2.emit('connection', socket);
          handing = undefined;
        } else {
          clocks.h1(conn);
          h1.emit('connection', socket);
        }
        process.nextTick(() => socket.resume());
      },
      (reason, detail) => {
        metrics.refused(reason);
        notices.refused(reason, peer, detail);
        socket.destroy();
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    front.once('error', reject);
    front.listen(opts.listen.port, opts.listen.host, () => {
      front.off('error', reject);
      resolve();
    });
  });
  const port = (front.address() as net.AddressInfo).port;
  const host = opts.listen.host.includes(':') ? `[${opts.listen.host}]` : opts.listen.host;
  return {
    url: `http://${host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host}:${port}`,
    port,
    async close(maxMs = opts.shutdownTimeoutMs) {
      // Stop accepting; close() resolves only once every connection is gone, which is forced below.
      const closed = new Promise<void>((resolve) => front.close(() => resolve()));
      for (const conn of clocks.all) if (!conn.busy) conn.socket.destroy();
      if (clocks.busy) {
        opts.log.info({ port: opts.name }, 'waiting for in-flight requests');
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, maxMs);
          timer.unref();
          clocks.onQuiet = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      for (const conn of clocks.all) conn.socket.destroy();
      clocks.stop();
      caps.stop();
      notices.flush();
      h1.close();
      h2?.close();
      await closed;
    },
  };
}
