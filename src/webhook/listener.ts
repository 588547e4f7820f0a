/**
 * The webhook protocol's port (external-dns's client speaks HTTP/1.1), behind the same HTTP front as
 * the API (api/front/): the same clocks on slow clients, connection caps, lingering close and early
 * refusal of a body over the limit (413 before `100 Continue`), and a graceful close.
 */
import type http from 'node:http';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { startFront, type ConnectionLimits, type Front, type ProxyTrust, type Timeouts } from '../api/front/index.js';

export type WebhookListener = Front;
export type ListenerTimeouts = Timeouts;

/**
 * Longer than Go's idle-connection timeout (90 s): the server never closes a connection external-dns
 * is about to reuse (a POST lost that way would be a connection error, which makes it exit).
 */
export const WEBHOOK_MIN_IDLE_MS = 120_000;
/** What the sidecar (which has no settings of its own for these) uses: the server's defaults. */
const DEFAULT_TIMEOUTS: Timeouts = { headersMs: 20_000, requestMs: 60_000, idleMs: WEBHOOK_MIN_IDLE_MS };
const DEFAULT_LIMITS: ConnectionLimits = { perAddress: 128, total: 1024 };

export interface WebhookListenerOptions {
  log: Logger;
  shutdownTimeoutMs?: number;
  timeouts?: Timeouts;
  limits?: ConnectionLimits;
  /** The handler's body limit: a request announcing more is answered 413 before its body is sent. */
  maxBodyBytes: number;
  registry?: Registry;
  /** DNSPLANE_TRUSTED_PROXIES: whose word on the client's address is believed. */
  proxies?: ProxyTrust;
}

export async function startWebhookListener(
  listen: { host: string; port: number },
  handler: (req: http.IncomingMessage, res: http.ServerResponse) => void,
  opts: WebhookListenerOptions,
): Promise<WebhookListener> {
  const timeouts = opts.timeouts ?? DEFAULT_TIMEOUTS;
  const front = await startFront({
    name: 'webhook',
    listen,
    handler,
    timeouts: { ...timeouts, idleMs: Math.max(timeouts.idleMs, WEBHOOK_MIN_IDLE_MS) },
    limits: opts.limits ?? DEFAULT_LIMITS,
    bodyLimit: {
      maxBytes: opts.maxBodyBytes,
      refuse(_req, res) {
        const body = `the body is over ${opts.maxBodyBytes} bytes\n`;
        res.writeHead(413, { 'content-type': 'text/plain; charset=utf-8', 'content-length': String(Buffer.byteLength(body)), connection: 'close' });
        res.end(body);
      },
    },
    log: opts.log,
    registry: opts.registry,
    shutdownTimeoutMs: opts.shutdownTimeoutMs ?? 30_000,
    ...(opts.proxies ? { proxies: opts.proxies } : {}),
  });
  opts.log.info({ url: front.url }, 'serving the external-dns webhook protocol');
  return front;
}
