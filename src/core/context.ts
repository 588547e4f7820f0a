import type pg from 'pg';
import type { Logger } from 'pino';
import type { Metrics } from '../metrics/metrics.js';
import type { Tenant } from '../store/index.js';
import type { OvhApi } from '../ovh/client.js';
import type { Lifecycle } from './lifecycle.js';
import type { PlanLimiter } from './plan-limit.js';
import type { VisibilityWatch } from './visibility-watch.js';

export interface CoreSettings {
  /** Zones to manage; undefined: every zone of the OVH account. */
  zones?: string[];
  lockTimeoutMs: number;
  planTtlMs: number;
  syncConcurrency: number;
  /** Zones read whole from OVH at once by first syncs (DNSPLANE_SYNC_CONCURRENCY); absent: core/zones/first-syncs.ts's default. */
  firstSyncs?: number;
  /** Send CNAME targets relative to these zones (external-dns's --ovh-enable-cname-relative). */
  cnameRelativeZones?: string[];
  /** DNSPLANE_DRY_RUN: applies compute the OVH calls, log and return them, and send none. */
  dryRun?: boolean;
  /** DNSPLANE_MAX_CHANGE_PERCENT (core/plan/guard.ts); a tenant's own limit wins. Default 30. */
  maxChangePercent?: number;
  /** DNSPLANE_APPLY_BATCH: an apply larger than this many operations goes in batches (core/apply/batches.ts); 0: never. Default 100. */
  applyBatch?: number;
  /**
   * DNSPLANE_APPLY_COALESCE (ms): the applies of a zone waiting in this process's queue are taken by the
   * lock holder into one group published by one refresh, until the group has run this long (core/apply/holder.ts);
   * 0 or absent: never (one refresh per apply).
   */
  applyCoalesceMs?: number;
  /** The OVH API served per tenant (src/ovhapi/, core/ovh-api/staging.ts); absent: its defaults. */
  ovhApi?: {
    /** DNSPLANE_OVH_API_ADVERTISE: what `CreateOvhKey` answers as the endpoint; absent: not known. */
    advertise?: string;
    /** DNSPLANE_OVH_API_DRAFT_TTL: a staged write no refresh published within this is dropped. */
    draftTtlMs: number;
    /**
     * The DNS server the served SOA names as `server` (external-dns asks it the SOA serial on port 53
     * and compares): the DNS door as advertised, which answers the same serial; absent (no door, or
     * no address to name): the zone's first name server.
     */
    soaServer?: string;
  };
  /** Visibility (core/visibility/visibility.ts, core/probe/); absent: its defaults (DEFAULT_VISIBILITY). */
  visibility?: VisibilitySettings;
}

/** How each publish is proved on the zone's authoritative servers (core/probe/). */
export interface VisibilitySettings {
  /** DNSPLANE_VISIBLE_TIMEOUT: not answered by every server within this after its refresh: not_visible (or unverified). */
  timeoutMs: number;
  /** How long a replica holds a probe without renewing it; another replica takes over a probe whose lease lapsed. */
  leaseMs: number;
}

export const DEFAULT_VISIBILITY: VisibilitySettings = { timeoutMs: 15 * 60_000, leaseMs: 15_000 };

/**
 * What every use case needs. Built once by server/server.ts. The context stands at the bottom of core:
 * it imports none of core's rooms. A room that keeps something per context adds its own field here by
 * augmentation (`declare module '../context.js'`) beside the class it keeps — reads/read-cache.ts
 * (`reads`), tenants/tenants.ts (`tokens`), keys/secrets.ts (`secrets`), keys/cache.ts (`tsigKeys`,
 * `ovhKeys`), credentials/issuer-keys.ts (`issuerKeys`), accounts/registry.ts (`accounts`) — so
 * that the field's type never makes the context import the room above it.
 */
export interface CoreContext {
  pool: pg.Pool;
  ovh: OvhApi;
  log: Logger;
  settings: CoreSettings;
  /**
   * A small second pool for the autocommitted journal writes an apply makes while its zone-lock
   * transaction holds a connection of `pool` (server/server.ts builds it). Absent: `pool` is used, and enough
   * zone locks held at once could then take every connection and wait forever for one more.
   */
  journalPool?: pg.Pool;
  /** Prometheus metrics (server/server.ts); absent in code paths that do not report any. */
  metrics?: Metrics;
  /** Shutdown state and the work it waits for (server/server.ts); absent: never stopping. */
  lifecycle?: Lifecycle;
  /** This process's identity in the journal's holder column (server/server.ts; a default otherwise). */
  instance?: string;
  /** Tenants' signs of life, written coarsely (core/withdrawals/liveness.ts's Liveness; server/server.ts). Absent: none recorded. */
  liveness?: SignsOfLife;
  /** Bounds the Plans each tenant computes at once (DNSPLANE_PLAN_CONCURRENCY); absent: no bound. */
  planLimiter?: PlanLimiter;
  /** Who waits for which journal rows' visibility, woken by the server's listener; absent: each wait listens on its own. */
  visibility?: VisibilityWatch;
  /**
   * ms since the epoch, for when a TSIG or OVH key's grace ends (core/keys/tsig.ts, core/keys/ovh.ts);
   * absent: Date.now. Tests move it to a grace's end.
   */
  clock?: () => number;
}

/** The context's clock (CoreContext.clock, else Date.now), in ms since the epoch. */
export function nowMs(ctx: Pick<CoreContext, 'clock'>): number {
  return ctx.clock ? ctx.clock() : Date.now();
}

/**
 * Where a tenant's signs of life go (core/withdrawals/liveness.ts's Liveness): named here so that the
 * context does not import what withdraws a silent tenant's targets (and through it the apply path).
 */
export interface SignsOfLife {
  /** The tenant authenticated a call now, from this client address (behind a trusted proxy, the client's); a workload token's tenant carries its subject: core/tenants/caller.ts. */
  seen(tenant: Tenant, from?: string): void;
  /** How often last_seen_at is written per tenant and process: the slack of the silent-tenant check. */
  readonly writeEveryMs: number;
}
