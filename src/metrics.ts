/**
 * Prometheus metrics (prom-client), served on `/metrics` of the API listener.
 *
 * A leaf module: it imports nothing of dnsplane. server.ts builds one Metrics per server, feeds the
 * OVH client's `onCall` hook into ovhCall(), hands the object to core through CoreContext.metrics,
 * and gives it a zone source (generation and record count per zone, read from Postgres at scrape
 * time, so that every replica reports the same truth).
 *
 * Series (all prefixed dnsplane_):
 * - ovh_requests_total{method,route,status}      every HTTP call to OVH (each attempt counts); status 0
 *                                                 when no answer came (connection error, timeout)
 * - ovh_request_duration_seconds{method,route}   the same calls' durations
 * - ovh_retries_total{method,route}              attempts after the first one
 * - ovh_ratelimit_wait_seconds                   time calls waited for the rate limit (histogram)
 * - ovh_calls_not_sent_total{method,route}       calls a dry-run apply would have made
 * - apply_duration_seconds{zone,outcome}         per zone apply: applied, no_changes, stale, failed,
 *                                                 dry_run or error (thrown: lock timeout, OVH down)
 * - lock_wait_seconds{zone,operation}            waiting for a zone's advisory lock (apply, sync)
 * - cache_reads_total{zone,result}               hit: a Records answer served from the cache;
 *                                                 not_modified: the caller had that generation;
 *                                                 miss: the zone had to be read from OVH first (a cold
 *                                                 sync, whichever call needed it)
 * - zone_generation{zone}, zone_records{zone}    from Postgres at scrape time
 * - drift_checks_total{zone,result}              drift checks: unchanged, changed (records changed
 *                                                 outside dnsplane found), busy, skipped
 * - drift_records_total{zone,change}             those records: added, removed, updated
 * - journal_in_flight{zone}                      in_flight journal rows (from Postgres at scrape
 * - journal_in_flight_oldest_seconds{zone}       time): applies under way, or dead ones whose
 *                                                 rollback waits for the next holder of the zone lock
 * - dry_run                                      1 when DNSPLANE_DRY_RUN is on
 * - plan_duration_seconds                        one Plan in core (routing, diff, operations, storage)
 * - plans_in_progress{tenant}                    Plans computing now, per tenant
 * - plans_refused_total{tenant}                  Plans refused: DNSPLANE_PLAN_CONCURRENCY reached
 * - rpc_duration_seconds{procedure}              server time of each Connect/gRPC call on the API port, from
 *                                                 its first byte to the last byte of the answer (decoding and
 *                                                 encoding included); procedure is the RPC path
 * - event_loop_delay_seconds                     how late a timer armed every 20 ms fires: the time the
 *                                                 event loop was held by synchronous work (a histogram since
 *                                                 start, so several scrapers and rate() work)
 * plus prom-client's default process metrics (process_*, nodejs_*), among them
 * nodejs_eventloop_lag_{min,max,mean,p50,p90,p99}_seconds: perf_hooks' event-loop delay since the
 * previous scrape (reset at each scrape).
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** What the OVH client reports per HTTP call (structurally the client's OvhCallInfo). */
export interface OvhCallSample {
  method: string;
  route: string;
  status: number;
  durationMs: number;
  waitedMs: number;
  attempt: number;
}

export interface ZoneSample {
  zone: string;
  generation: bigint | number;
  records: number;
}

export interface InFlightSample {
  zone: string;
  count: number;
  oldestSeconds: number;
}

export type DriftStatus = 'unchanged' | 'changed' | 'busy' | 'skipped';

export type ApplyOutcome = 'applied' | 'no_changes' | 'stale' | 'failed' | 'dry_run' | 'refused' | 'error';
export type CacheReadResult = 'hit' | 'not_modified' | 'miss';

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export class Metrics {
  readonly registry = new Registry();
  private readonly ovhRequests: Counter<'method' | 'route' | 'status'>;
  private readonly ovhDuration: Histogram<'method' | 'route'>;
  private readonly ovhRetries: Counter<'method' | 'route'>;
  private readonly rateWait: Histogram;
  private readonly notSent: Counter<'method' | 'route'>;
  private readonly applyDuration: Histogram<'zone' | 'outcome'>;
  private readonly lockWait: Histogram<'zone' | 'operation'>;
  private readonly cacheReads: Counter<'zone' | 'result'>;
  private readonly driftChecks: Counter<'zone' | 'result'>;
  private readonly driftRecords: Counter<'zone' | 'change'>;
  private readonly planDuration: Histogram;
  private readonly plansInProgress: Gauge<'tenant'>;
  private readonly plansRefused: Counter<'tenant'>;
  private readonly rpcDuration: Histogram<'procedure'>;
  private readonly loopDelay: Histogram;
  private loopTimer: NodeJS.Timeout | undefined;
  private zoneSource: (() => Promise<ZoneSample[]>) | undefined;
  private inFlightSource: (() => Promise<InFlightSample[]>) | undefined;

  constructor(opts: { dryRun?: boolean; defaultMetrics?: boolean; eventLoop?: boolean } = {}) {
    const registers = [this.registry];
    if (opts.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
    this.ovhRequests = new Counter({
      name: 'dnsplane_ovh_requests_total',
      help: 'HTTP calls to the OVH API, each attempt counted, by method, route and status (0: no answer)',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.ovhDuration = new Histogram({
      name: 'dnsplane_ovh_request_duration_seconds',
      help: 'Duration of HTTP calls to the OVH API (rate-limit wait excluded)',
      labelNames: ['method', 'route'],
      buckets: SECONDS,
      registers,
    });
    this.ovhRetries = new Counter({
      name: 'dnsplane_ovh_retries_total',
      help: 'OVH calls that were attempts after the first (retries)',
      labelNames: ['method', 'route'],
      registers,
    });
    this.rateWait = new Histogram({
      name: 'dnsplane_ovh_ratelimit_wait_seconds',
      help: 'Time each OVH call waited for the per-application-key rate limit and the concurrency bound',
      buckets: [0, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    this.notSent = new Counter({
      name: 'dnsplane_ovh_calls_not_sent_total',
      help: 'OVH calls a dry-run apply would have made (DNSPLANE_DRY_RUN), by method and route',
      labelNames: ['method', 'route'],
      registers,
    });
    this.applyDuration = new Histogram({
      name: 'dnsplane_apply_duration_seconds',
      help: 'Duration of one zone apply (lock wait included), by zone and outcome',
      labelNames: ['zone', 'outcome'],
      buckets: SECONDS,
      registers,
    });
    this.lockWait = new Histogram({
      name: 'dnsplane_lock_wait_seconds',
      help: "Time spent waiting for a zone's advisory lock, by zone and operation",
      labelNames: ['zone', 'operation'],
      buckets: SECONDS,
      registers,
    });
    this.cacheReads = new Counter({
      name: 'dnsplane_cache_reads_total',
      help: 'Cache use per zone: hit (Records served from the cache), not_modified (caller up to date), miss (zone read from OVH first)',
      labelNames: ['zone', 'result'],
      registers,
    });
    this.driftChecks = new Counter({
      name: 'dnsplane_drift_checks_total',
      help: 'Drift checks by zone and result: unchanged, changed (records changed outside dnsplane were found and read into the cache), busy (zone locked), skipped',
      labelNames: ['zone', 'result'],
      registers,
    });
    this.driftRecords = new Counter({
      name: 'dnsplane_drift_records_total',
      help: 'Records drift checks found changed outside dnsplane, by zone and change (added, removed, updated)',
      labelNames: ['zone', 'change'],
      registers,
    });
    this.planDuration = new Histogram({
      name: 'dnsplane_plan_duration_seconds',
      help: 'Duration of one Plan in core: routing, diff, operations and storage (first sync of a zone included)',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.plansInProgress = new Gauge({
      name: 'dnsplane_plans_in_progress',
      help: 'Plans computing now, per tenant (at most DNSPLANE_PLAN_CONCURRENCY each)',
      labelNames: ['tenant'],
      registers,
    });
    this.plansRefused = new Counter({
      name: 'dnsplane_plans_refused_total',
      help: 'Plans refused with RESOURCE_EXHAUSTED because the tenant had DNSPLANE_PLAN_CONCURRENCY in progress',
      labelNames: ['tenant'],
      registers,
    });
    this.rpcDuration = new Histogram({
      name: 'dnsplane_rpc_duration_seconds',
      help: 'Server time of each RPC on the API port, from its first byte to the last byte of the answer, by procedure (the RPC path)',
      labelNames: ['procedure'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    this.loopDelay = new Histogram({
      name: 'dnsplane_event_loop_delay_seconds',
      help: 'How late a timer armed every 20 ms fired: how long synchronous work held the event loop',
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    if (opts.eventLoop ?? true) this.watchEventLoop();
    const dryRun = new Gauge({ name: 'dnsplane_dry_run', help: '1 when DNSPLANE_DRY_RUN is on: applies send nothing to OVH', registers });
    dryRun.set(opts.dryRun ? 1 : 0);

    // Read from Postgres at scrape time: the truth every replica shares.
    const self = this;
    new Gauge({
      name: 'dnsplane_zone_generation',
      help: "Generation of each zone's cache (+1 on every change of its cached content)",
      labelNames: ['zone'],
      registers,
      async collect() {
        this.reset();
        for (const z of await self.zones()) this.set({ zone: z.zone }, Number(z.generation));
      },
    });
    new Gauge({
      name: 'dnsplane_zone_records',
      help: 'OVH records in the cache of each zone',
      labelNames: ['zone'],
      registers,
      async collect() {
        this.reset();
        for (const z of await self.zones()) this.set({ zone: z.zone }, z.records);
      },
    });
    new Gauge({
      name: 'dnsplane_journal_in_flight',
      help: 'Journal rows in_flight per zone: applies under way, or applies that died and whose rollback waits for the next holder of the zone lock',
      labelNames: ['zone'],
      registers,
      async collect() {
        this.reset();
        for (const j of await self.inFlight()) this.set({ zone: j.zone }, j.count);
      },
    });
    new Gauge({
      name: 'dnsplane_journal_in_flight_oldest_seconds',
      help: 'Age of the oldest in_flight journal row per zone (an apply takes seconds; minutes means a rollback is left in flight)',
      labelNames: ['zone'],
      registers,
      async collect() {
        this.reset();
        for (const j of await self.inFlight()) this.set({ zone: j.zone }, j.oldestSeconds);
      },
    });
  }

  /** Where the in-flight journal gauges come from (server.ts: the journal table). */
  setInFlightSource(source: () => Promise<InFlightSample[]>): void {
    this.inFlightSource = source;
  }

  /** Where the zone gauges come from (server.ts: the zones table). */
  setZoneSource(source: () => Promise<ZoneSample[]>): void {
    this.zoneSource = source;
  }

  /** The OVH client's onCall hook. */
  ovhCall(c: OvhCallSample): void {
    const route = { method: c.method, route: c.route };
    this.ovhRequests.inc({ ...route, status: String(c.status) });
    this.ovhDuration.observe(route, c.durationMs / 1000);
    this.rateWait.observe(c.waitedMs / 1000);
    if (c.attempt > 0) this.ovhRetries.inc(route);
  }

  ovhCallNotSent(method: string, route: string): void {
    this.notSent.inc({ method, route });
  }

  applyDone(zone: string, outcome: ApplyOutcome, seconds: number): void {
    this.applyDuration.observe({ zone, outcome }, seconds);
  }

  lockWaited(zone: string, operation: 'apply' | 'sync', seconds: number): void {
    this.lockWait.observe({ zone, operation }, seconds);
  }

  driftChecked(zone: string, result: DriftStatus, records: { added: number; removed: number; updated: number }): void {
    this.driftChecks.inc({ zone, result });
    for (const change of ['added', 'removed', 'updated'] as const) {
      if (records[change] > 0) this.driftRecords.inc({ zone, change }, records[change]);
    }
  }

  cacheRead(zone: string, result: CacheReadResult): void {
    this.cacheReads.inc({ zone, result });
  }

  planDone(seconds: number): void {
    this.planDuration.observe(seconds);
  }

  planRunning(tenant: string, delta: 1 | -1): void {
    this.plansInProgress.inc({ tenant }, delta);
  }

  planRefused(tenant: string): void {
    this.plansRefused.inc({ tenant });
  }

  rpcDone(procedure: string, seconds: number): void {
    this.rpcDuration.observe({ procedure }, seconds);
  }

  /** Stops the event-loop timer (server close). */
  stop(): void {
    if (this.loopTimer) clearTimeout(this.loopTimer);
    this.loopTimer = undefined;
  }

  private watchEventLoop(): void {
    const every = 20;
    let armed = performance.now();
    const tick = () => {
      const now = performance.now();
      this.loopDelay.observe(Math.max(0, now - armed - every) / 1000);
      armed = now;
      this.loopTimer = setTimeout(tick, every);
      this.loopTimer.unref();
    };
    this.loopTimer = setTimeout(tick, every);
    this.loopTimer.unref();
  }

  /** The text exposition format. */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  private async zones(): Promise<ZoneSample[]> {
    return this.zoneSource ? this.zoneSource() : [];
  }

  private async inFlight(): Promise<InFlightSample[]> {
    return this.inFlightSource ? this.inFlightSource() : [];
  }
}
