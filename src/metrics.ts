/**
 * Prometheus metrics (prom-client), served on `/metrics` of the API listener.
 *
 * A leaf module: it imports nothing of dnsplane. server.ts builds one Metrics per server, feeds the
 * OVH client's `onCall` hook into ovhCall(), hands the object to core through CoreContext.metrics,
 * and gives it a zone source (generation and record count per zone, read from Postgres at scrape
 * time, so that every replica reports the same truth). seriesOn() (metrics-series.ts) declares a series in
 * one line (name, help, label names, buckets on the given registry); webhook/metrics.ts uses it too.
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
 * - threshold_refusals_total{zone,tenant}        applies refused by the change threshold (core/plan/guard.ts)
 * - failed_logins_total{outcome}                 failed: a missing or bad token; limited: refused with
 *                                                 429 before the token was checked (core/tenants/login-limiter.ts)
 * - dry_run                                      1 when DNSPLANE_DRY_RUN is on
 * - plan_duration_seconds                        one Plan in core (routing, diff, operations, storage)
 * - plans_in_progress{tenant}                    Plans computing now, per tenant
 * - plans_refused_total{tenant}                  Plans refused: DNSPLANE_PLAN_CONCURRENCY reached
 * - rpc_duration_seconds{procedure}              server time of each Connect/gRPC call on the API port, from
 *                                                 its first byte to the last byte of the answer (decoding and
 *                                                 encoding included); procedure is the RPC path
 * - visibility_seconds{zone,server}              publish to the time each authoritative server first answered
 *                                                 everything an apply changed (core/probe/)
 * - visibility_final_total{zone,state}           applies whose visibility became final: visible,
 *                                                 not_visible, unverified, superseded
 * - probe_queries_total{result}                  DNS questions the prober asked: match, old, error
 * - target_health{zone,name,target}              1 while a checked target passes its check, 0 while it
 *                                                 fails (withdrawn or not), from Postgres at scrape time
 *                                                 (core/health/: every replica reports the same)
 * - target_set_all_down{zone,name}               1 while every checked target of a set fails: all stay
 *                                                 published (fail open), the alert DnsplaneAllTargetsDown
 * - health_checks_total{result}                  checks this process made: pass, fail
 * - event_loop_delay_seconds                     how late a timer armed every 20 ms fires: the time the
 *                                                 event loop was held by synchronous work (a histogram since
 *                                                 start, so several scrapers and rate() work)
 * plus prom-client's default process metrics (process_*, nodejs_*), among them
 * nodejs_eventloop_lag_{min,max,mean,p50,p90,p99}_seconds: perf_hooks' event-loop delay since the
 * previous scrape (reset at each scrape).
 */
import { collectDefaultMetrics, Registry } from 'prom-client';
import {
  seriesOn,
  SECONDS,
  type ApplyOutcome,
  type CacheReadResult,
  type DriftStatus,
  type HealthSample,
  type InFlightSample,
  type OvhCallSample,
  type ZoneSample,
} from './metrics-series.js';

// The samples' and outcomes' types, and the series helper, where core and the doors have always found them.
export {
  seriesOn,
  type ApplyOutcome,
  type CacheReadResult,
  type DriftStatus,
  type HealthSample,
  type InFlightSample,
  type OvhCallSample,
  type ZoneSample,
} from './metrics-series.js';

export class Metrics {
  readonly registry = new Registry();
  private readonly s = seriesOn(this.registry);
  private readonly ovhRequests = this.s.counter(
    'dnsplane_ovh_requests_total',
    'HTTP calls to the OVH API, each attempt counted, by method, route and status (0: no answer)',
    ['method', 'route', 'status'],
  );
  private readonly ovhDuration = this.s.histogram(
    'dnsplane_ovh_request_duration_seconds',
    'Duration of HTTP calls to the OVH API (rate-limit wait excluded)',
    ['method', 'route'],
    SECONDS,
  );
  private readonly ovhRetries = this.s.counter('dnsplane_ovh_retries_total', 'OVH calls that were attempts after the first (retries)', ['method', 'route']);
  private readonly rateWait = this.s.histogram(
    'dnsplane_ovh_ratelimit_wait_seconds',
    'Time each OVH call waited for the per-application-key rate limit and the concurrency bound',
    [],
    [0, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  );
  private readonly notSent = this.s.counter(
    'dnsplane_ovh_calls_not_sent_total',
    'OVH calls a dry-run apply would have made (DNSPLANE_DRY_RUN), by method and route',
    ['method', 'route'],
  );
  private readonly applyDuration = this.s.histogram(
    'dnsplane_apply_duration_seconds',
    'Duration of one zone apply (lock wait included), by zone and outcome',
    ['zone', 'outcome'],
    SECONDS,
  );
  private readonly applyGroups = this.s.histogram(
    'dnsplane_apply_group_applies',
    'Applies of a zone published by one refresh (a group of coalesced applies: 1 when an apply was alone), by zone',
    ['zone'],
    [1, 2, 3, 5, 10, 20, 50, 100],
  );
  private readonly lockWait = this.s.histogram(
    'dnsplane_lock_wait_seconds',
    "Time spent waiting for a zone's advisory lock, by zone and operation",
    ['zone', 'operation'],
    SECONDS,
  );
  /** cacheRead's counts not yet in cacheReads (by result and zone: a bounded set). */
  private readonly cacheReadCounts = new Map<string, { labels: { zone: string; result: CacheReadResult }; n: number }>();
  private readonly cacheReads = this.s.counter(
    'dnsplane_cache_reads_total',
    'Cache use per zone: hit (Records served from the cache), not_modified (caller up to date), miss (zone read from OVH first)',
    ['zone', 'result'],
    () => {
      for (const p of this.cacheReadCounts.values()) {
        if (p.n > 0) this.cacheReads.inc(p.labels, p.n);
        p.n = 0;
      }
    },
  );
  private readonly zoneStateReads = this.s.counter(
    'dnsplane_zone_state_reads_total',
    "Fresh reads of every zone's generation in Postgres, each shared by the calls that arrived while the previous one ran; none while the LISTEN connection keeps them (core/reads/read-cache.ts ZoneStateSource)",
  );
  private readonly driftChecks = this.s.counter(
    'dnsplane_drift_checks_total',
    'Drift checks by zone and result: unchanged, changed (records changed outside dnsplane were found and read into the cache), busy (zone locked), skipped',
    ['zone', 'result'],
  );
  private readonly driftRecords = this.s.counter(
    'dnsplane_drift_records_total',
    'Records drift checks found changed outside dnsplane, by zone and change (added, removed, updated)',
    ['zone', 'change'],
  );
  private readonly planDuration = this.s.histogram(
    'dnsplane_plan_duration_seconds',
    'Duration of one Plan in core: routing, diff, operations and storage (first sync of a zone included)',
    [],
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  );
  private readonly plansInProgress = this.s.gauge('dnsplane_plans_in_progress', 'Plans computing now, per tenant (at most DNSPLANE_PLAN_CONCURRENCY each)', [
    'tenant',
  ]);
  private readonly plansRefused = this.s.counter(
    'dnsplane_plans_refused_total',
    'Plans refused with RESOURCE_EXHAUSTED because the tenant had DNSPLANE_PLAN_CONCURRENCY in progress',
    ['tenant'],
  );
  private readonly rpcDuration = this.s.histogram(
    'dnsplane_rpc_duration_seconds',
    'Server time of each RPC on the API port, from its first byte to the last byte of the answer, by procedure (the RPC path)',
    ['procedure'],
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  );
  private readonly loopDelay = this.s.histogram(
    'dnsplane_event_loop_delay_seconds',
    'How late a timer armed every 20 ms fired: how long synchronous work held the event loop',
    [],
    [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  );
  private readonly thresholdRefusals = this.s.counter(
    'dnsplane_threshold_refusals_total',
    "Zone applies refused because they would update or delete more than the tenant's change threshold (DNSPLANE_MAX_CHANGE_PERCENT) without force, or change a protected name without a second admin's approval",
    ['zone', 'tenant'],
  );
  private readonly failedLogins = this.s.counter(
    'dnsplane_failed_logins_total',
    'Requests with a missing or bad token (failed), and requests refused with 429 because their address failed too often (limited)',
    ['outcome'],
  );
  private readonly visibilitySeconds = this.s.histogram(
    'dnsplane_visibility_seconds',
    "Seconds from an apply's refresh to the moment an authoritative server of its zone first answered everything it changed, by zone and server",
    ['zone', 'server'],
    [0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 900, 1800],
  );
  private readonly visibilityFinals = this.s.counter(
    'dnsplane_visibility_final_total',
    'Applies whose visibility became final, by zone and state: visible, not_visible (a server still answered older data at DNSPLANE_VISIBLE_TIMEOUT), unverified (no server could be asked), superseded',
    ['zone', 'state'],
  );
  private readonly probeQueries = this.s.counter(
    'dnsplane_probe_queries_total',
    "DNS questions the prober asked the zones' authoritative servers, by result: match (as published), old (other data), error (no answer to trust)",
    ['result'],
  );
  private readonly withdrawals = this.s.counter(
    'dnsplane_target_withdrawals_total',
    'Targets withdrawn from OVH (core/withdrawals/withdrawals.ts), by reason: silent (its tenant silent past withdraw_after), health (its check failed)',
    ['reason'],
  );
  private lastSeenSource: (() => Promise<Array<{ tenant: string; seconds: number }>>) | undefined;
  private loopTimer: NodeJS.Timeout | undefined;
  private zoneSource: (() => Promise<ZoneSample[]>) | undefined;
  private healthSource: (() => Promise<HealthSample[]>) | undefined;
  private readonly healthChecks = this.s.counter(
    'dnsplane_health_checks_total',
    'Health checks of targets this process made (core/health/), by result: pass, fail',
    ['result'],
  );
  private inFlightSource: (() => Promise<InFlightSample[]>) | undefined;
  private readCacheSource: (() => { bytes: number; maxBytes: number }) | undefined;

  constructor(opts: { dryRun?: boolean; defaultMetrics?: boolean; eventLoop?: boolean } = {}) {
    if (opts.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
    if (opts.eventLoop ?? true) this.watchEventLoop();
    this.s.gauge('dnsplane_dry_run', '1 when DNSPLANE_DRY_RUN is on: applies send nothing to OVH').set(opts.dryRun ? 1 : 0);

    this.s.gauge(
      'dnsplane_read_cache_bytes',
      'Bytes the Records cache of this process keeps (kept: bases, answers, encoded bytes, as accounted) and its bound, DNSPLANE_READ_CACHE_BYTES (bound)',
      ['of'],
      async (g) => {
        const s = this.readCacheSource?.();
        if (!s) return;
        g.set({ of: 'kept' }, s.bytes);
        g.set({ of: 'bound' }, s.maxBytes);
      },
    );
    // Read from Postgres at scrape time (reset, then one value per zone): the truth every replica shares.
    const perZone = (name: string, help: string, read: () => Promise<Array<[zone: string, value: number]>>) =>
      this.s.gauge(name, help, ['zone'], async (g) => {
        g.reset();
        for (const [zone, value] of await read()) g.set({ zone }, value);
      });
    this.s.gauge(
      'dnsplane_tenant_last_seen_seconds',
      "Seconds since each tenant's latest authenticated call, as Postgres holds it (written coarsely: up to a minute late); tenants never seen are absent",
      ['tenant'],
      async (g) => {
        const source = this.lastSeenSource;
        if (!source) return;
        g.reset();
        for (const { tenant, seconds } of await source()) g.set({ tenant }, seconds);
      },
    );
    // Health (core/health/): from Postgres at scrape time, so every replica reports the checker's truth.
    const healthRows = () => this.healthSource?.() ?? Promise.resolve([] as HealthSample[]);
    this.s.gauge(
      'dnsplane_target_health',
      'Each checked target of a record set with a health check: 1 while it passes, 0 while it fails (withdrawn, or kept as the last)',
      ['zone', 'name', 'target'],
      async (g) => {
        g.reset();
        for (const r of await healthRows()) g.set({ zone: r.zone, name: r.name, target: r.target }, r.passing ? 1 : 0);
      },
    );
    this.s.gauge(
      'dnsplane_target_set_all_down',
      'Record sets whose every checked target fails: 1 (all stay published: fail open); 0 otherwise',
      ['zone', 'name'],
      async (g) => {
        g.reset();
        const sets = new Map<string, { zone: string; name: string; down: boolean }>();
        for (const r of await healthRows()) {
          const key = `${r.zone} ${r.name}`;
          const s = sets.get(key) ?? { zone: r.zone, name: r.name, down: true };
          s.down &&= !r.passing;
          sets.set(key, s);
        }
        for (const s of sets.values()) g.set({ zone: s.zone, name: s.name }, s.down ? 1 : 0);
      },
    );
    perZone('dnsplane_zone_generation', "Generation of each zone's cache (+1 on every change of its cached content)", async () =>
      (await this.zones()).map((z) => [z.zone, Number(z.generation)]),
    );
    perZone('dnsplane_zone_records', 'OVH records in the cache of each zone', async () => (await this.zones()).map((z) => [z.zone, z.records]));
    perZone(
      'dnsplane_journal_in_flight',
      'Journal rows in_flight per zone: applies under way, or applies that died and whose rollback waits for the next holder of the zone lock',
      async () => (await this.inFlight()).map((j) => [j.zone, j.count]),
    );
    perZone(
      'dnsplane_journal_in_flight_oldest_seconds',
      'Age of the oldest in_flight journal row per zone (an apply takes seconds; minutes means a rollback is left in flight)',
      async () => (await this.inFlight()).map((j) => [j.zone, j.oldestSeconds]),
    );
  }

  /** Where the in-flight journal gauges come from (server.ts: the journal table). */
  setInFlightSource(source: () => Promise<InFlightSample[]>): void {
    this.inFlightSource = source;
  }

  /** Where dnsplane_target_health and dnsplane_target_set_all_down come from (server.ts: the target_health table). */
  setHealthSource(source: () => Promise<HealthSample[]>): void {
    this.healthSource = source;
  }

  /** One health check made (core/health/checker.ts). */
  healthChecked(ok: boolean): void {
    this.healthChecks.inc({ result: ok ? 'pass' : 'fail' });
  }

  /** Where dnsplane_tenant_last_seen_seconds comes from (server.ts: the tenants table). */
  setLastSeenSource(source: () => Promise<Array<{ tenant: string; seconds: number }>>): void {
    this.lastSeenSource = source;
  }

  /** A target left OVH (core/withdrawals/withdrawals.ts). */
  targetWithdrawn(reason: 'silent' | 'health'): void {
    this.withdrawals.inc({ reason });
  }

  /** Where dnsplane_read_cache_bytes comes from (server.ts: the ReadCache's stats). */
  setReadCacheSource(source: () => { bytes: number; maxBytes: number }): void {
    this.readCacheSource = source;
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

  /** One refresh published a group of `applies` applies of the zone (core/apply/publish.ts, coalesced applies). */
  applyGroupPublished(zone: string, applies: number): void {
    this.applyGroups.observe({ zone }, applies);
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

  thresholdRefused(zone: string, tenant: string): void {
    this.thresholdRefusals.inc({ zone, tenant });
  }

  loginFailure(outcome: 'failed' | 'limited'): void {
    this.failedLogins.inc({ outcome });
  }

  cacheRead(zone: string, result: CacheReadResult): void {
    // Counted here and added to the series at each scrape (its collect): a poll costs one increment,
    // not prom-client's hashing of the labels (every poll counts one).
    const key = `${result}\u0000${zone}`;
    const pending = this.cacheReadCounts.get(key);
    if (pending) pending.n++;
    else this.cacheReadCounts.set(key, { labels: { zone, result }, n: 1 });
  }

  zoneStatesRead(): void {
    this.zoneStateReads.inc();
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

  /** A server first answered everything an apply changed, `seconds` after its refresh. */
  serverAnswered(zone: string, server: string, seconds: number): void {
    this.visibilitySeconds.observe({ zone, server }, seconds);
  }

  visibilityFinal(zone: string, state: string): void {
    this.visibilityFinals.inc({ zone, state });
  }

  probeQuery(result: 'match' | 'old' | 'error'): void {
    this.probeQueries.inc({ result });
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
