/**
 * The DNS door (a front door beside api/ and webhook/, DESIGN.md "Front doors are adapters"): DNS
 * itself on DNSPLANE_DNS_LISTEN, UDP and TCP on one port — UPDATE signed with TSIG (RFC 2136, 8945),
 * queries for the managed zones, zone transfers (RFC 5936) — turned into the same core calls as the
 * other doors: a key authenticates a tenant, reads come from the cache, an UPDATE is one apply.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { CoreContext } from '../core/context.js';
import { dnsDoor } from './door.js';
import type { TsigKeyring } from '../core/keys/tsig.js';
import { Notices, SourceLimiter } from './limits.js';
import { listenDns, type DnsListener } from './listener.js';
import { dnsMetricsOn } from './metrics.js';
import { Refusals } from './refusal.js';
import { NO_WAIT, type UpdateWait } from './update.js';
import { TenantRateLimiter } from '../lib/token-bucket.js';

export type { DnsListener } from './listener.js';

export interface DnsDoorOptions {
  listen: { host: string; port: number };
  log: Logger;
  keyring: TsigKeyring;
  /** The server's registry: the door's series are served with the others on /metrics. */
  registry?: Registry;
  /** Unsigned messages per second a source may send (DNSPLANE_DNS_RATE), and its burst (twice that by default). */
  unsignedRate?: { perSecond: number; burst?: number };
  /** How long an UPDATE's NOERROR may wait for its change to be visible (update.ts UpdateWait); absent: not at all. */
  updateWait?: UpdateWait;
  /** UPDATEs one tenant may send per second (DNSPLANE_DNS_UPDATE_RATE), and at once; absent: unlimited. */
  updateRate?: { perSecond: number; burst: number };
}

export const DEFAULT_UNSIGNED_RATE = 50;

export async function startDnsDoor(ctx: CoreContext, opts: DnsDoorOptions): Promise<DnsListener> {
  const log = opts.log.child({ component: 'dns' });
  const metrics = opts.registry ? dnsMetricsOn(opts.registry) : undefined;
  const notices = new Notices(log);
  const perSecond = opts.unsignedRate?.perSecond ?? DEFAULT_UNSIGNED_RATE;
  const limiter = new SourceLimiter(perSecond, opts.unsignedRate?.burst ?? perSecond * 2);
  const refusals = new Refusals(ctx, log, notices, metrics);
  const updateRate = opts.updateRate && new TenantRateLimiter(opts.updateRate.perSecond, opts.updateRate.burst);
  const handle = dnsDoor({
    ctx,
    log,
    keyring: opts.keyring,
    limiter,
    notices,
    refusals,
    metrics,
    updateWait: opts.updateWait ?? NO_WAIT,
    ...(updateRate ? { updateRate } : {}),
  });
  // A port that cannot be bound leaves nothing behind (the demo tries another one).
  const listener = await listenDns(opts.listen, handle, { log, metrics }).catch((e: unknown) => {
    notices.close();
    throw e;
  });
  return {
    ...listener,
    async close(maxMs?: number) {
      await listener.close(maxMs);
      notices.close();
    },
  };
}
