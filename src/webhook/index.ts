/**
 * The external-dns webhook protocol, served two ways:
 * - startCentralWebhook: by `dnsplane serve` on DNSPLANE_WEBHOOK_LISTEN, calling core in-process,
 *   callers authenticated with HTTP Basic `tenant:token`;
 * - startSidecar: by `dnsplane webhook` beside external-dns, calling the centre over Connect.
 */
import type { Client } from '@connectrpc/connect';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import type { CoreContext } from '../core/context.js';
import type { ZoneService } from '../gen/dnsplane/v1/zone_pb.js';
import { connectBackend } from './connect-backend.js';
import { coreBackend } from './core-backend.js';
import { DEFAULT_MAX_BODY_BYTES, webhookHandler, type WebhookHandlerOptions } from './handler.js';
import { startWebhookListener, type ListenerTimeouts, type WebhookListener } from './listener.js';
import type { ConnectionLimits, ProxyTrust } from '../api/front/index.js';
import type { LoginLimiter } from '../core/tenants/login-limiter.js';
import { WebhookMetrics } from './metrics.js';

export { MEDIA_TYPE } from './protocol.js';
export type { WebhookListener } from './listener.js';
export { WebhookMetrics } from './metrics.js';

type Limits = Pick<WebhookHandlerOptions, 'maxBodyBytes' | 'maxEndpoints' | 'deadlineMs'>;

function limits(o: Limits): Limits {
  return { maxBodyBytes: o.maxBodyBytes, maxEndpoints: o.maxEndpoints, deadlineMs: o.deadlineMs };
}

export interface CentralWebhookOptions extends Limits {
  listen: { host: string; port: number };
  log: Logger;
  /** The server's metrics registry: the webhook's series are served with the others on /metrics. */
  registry?: Registry;
  shutdownTimeoutMs?: number;
  /** Failed logins per client address, shared with the API listener (server/server.ts). */
  loginLimiter?: LoginLimiter;
  timeouts?: ListenerTimeouts;
  /** DNSPLANE_MAX_CONNECTIONS and _PER_ADDRESS. */
  limits?: ConnectionLimits;
  /** DNSPLANE_TRUSTED_PROXIES: whose word on the client's address is believed. */
  proxies?: ProxyTrust;
}

export async function startCentralWebhook(ctx: CoreContext, opts: CentralWebhookOptions): Promise<WebhookListener> {
  const log = opts.log.child({ component: 'webhook' });
  const metrics = opts.registry ? new WebhookMetrics(opts.registry) : undefined;
  const handler = webhookHandler({ ...limits(opts), backend: coreBackend(ctx), log, metrics, loginLimiter: opts.loginLimiter });
  return startWebhookListener(opts.listen, handler, {
    log,
    shutdownTimeoutMs: opts.shutdownTimeoutMs,
    timeouts: opts.timeouts,
    limits: opts.limits,
    maxBodyBytes: opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    registry: opts.registry,
    ...(opts.proxies ? { proxies: opts.proxies } : {}),
  });
}

export interface SidecarOptions extends Limits {
  /** A ZoneService client for the central dnsplane, carrying the tenant's token. */
  client: Client<typeof ZoneService>;
  listen: { host: string; port: number };
  log: Logger;
  /** Deadline of each call to the centre. */
  timeoutMs?: number;
  shutdownTimeoutMs?: number;
}

export interface Sidecar extends WebhookListener {
  metrics: WebhookMetrics;
}

export async function startSidecar(opts: SidecarOptions): Promise<Sidecar> {
  const log = opts.log.child({ component: 'webhook-sidecar' });
  const metrics = new WebhookMetrics(new Registry());
  const backend = connectBackend({ client: opts.client, timeoutMs: opts.timeoutMs });
  const handler = webhookHandler({ ...limits(opts), backend, log, metrics, serveMetrics: true });
  const listener = await startWebhookListener(opts.listen, handler, {
    log,
    shutdownTimeoutMs: opts.shutdownTimeoutMs,
    maxBodyBytes: opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    registry: metrics.registry,
  });
  return { ...listener, metrics };
}
