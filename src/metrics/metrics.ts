/**
 * Prometheus metrics (prom-client), served on `/metrics` of the API listener.
 *
 * A leaf module: it imports nothing of dnsplane. server/server.ts builds one Metrics per server, feeds the
 * OVH client's `onCall` hook into ovhCall(), hands the object to core through CoreContext.metrics,
 * and gives it a zone source (generation and record count per zone, read from Postgres at scrape
 * time, so that every replica reports the same truth). seriesOn() (metrics/series.ts) declares a series in
 * one line (name, help, label names, buckets on the given registry); webhook/metrics.ts uses it too.
 * The series this class feeds itself are one table (metrics/table.ts, declared by seriesTable()); the
 * gauges read at scrape time are declared in the constructor, beside their sources.
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
  onePerScrape,
  seriesOn,
  seriesTable,
  type ApplyOutcome,
  type CacheReadResult,
  type DriftStatus,
  type HealthSample,
  type InFlightSample,
  type OvhCallSample,
  type ZoneSample,
} from './series.js';
import { SERIES } from './table.js';

type Labels = Record<string, string>;

/** What the gauges read at each scrape, each from the table or the part that holds it. */
export interface MetricSources {
  /** dnsplane_tenant_last_seen_seconds (server/server.ts: the tenants table). */
  lastSeen: () => Promise<Array<{ tenant: string; seconds: number }>>;
  /** dnsplane_orphaned_record_sets (server/server.ts: store.countOrphanedSets). */
  orphans: () => Promise<Array<{ reason: string; sets: number }>>;
  /** The zone gauges (server/start-core.ts: the zones table). */
  zones: () => Promise<ZoneSample[]>;
  /** dnsplane_target_health and dnsplane_target_set_all_down (server/start-core.ts: the target_health table). */
  health: () => Promise<HealthSample[]>;
  /** The in-flight journal gauges (server/start-core.ts: the journal table). */
  inFlight: () => Promise<InFlightSample[]>;
  /** dnsplane_read_cache_bytes (server/start-core.ts: the ReadCache's stats). */
  readCache: () => { bytes: number; maxBytes: number };
  /** dnsplane_jwks_age_seconds (server/start-core.ts: core/credentials/issuer-keys.ts's stats). */
  jwks: () => Array<{ issuer: string; ageSeconds: number }>;
  /** dnsplane_ovh_account_available (server/start-core.ts: core/accounts/registry.ts's states). */
  accounts: () => Array<{ name: string; status: string }>;
}

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
} from './series.js';

export class Metrics {
  readonly registry = new Registry();
  private readonly s = seriesOn(this.registry);
  /** cacheRead's counts not yet in the series (by result and zone: a bounded set). */
  private readonly cacheReadCounts = new Map<CacheReadResult, Map<string, { labels: { zone: string; result: CacheReadResult }; n: number }>>();
  /** The series this class feeds (metrics/table.ts), declared first, in the table's order. */
  private readonly series = seriesTable(this.registry, SERIES, {
    cacheReads: (c) => {
      for (const byZone of this.cacheReadCounts.values()) {
        for (const p of byZone.values()) {
          if (p.n > 0) c.inc(p.labels, p.n);
          p.n = 0;
        }
      }
    },
  });
  private loopTimer: NodeJS.Timeout | undefined;
  /** Where the gauges read at each scrape come from: server/ hands each in; one not handed in stays empty. */
  readonly sources: Partial<MetricSources> = {};
  /** The zone rows and the in-flight journal rows: each read once per scrape for the two gauges it feeds. */
  private readonly zones = onePerScrape(async (): Promise<ZoneSample[]> => (this.sources.zones ? this.sources.zones() : []));
  private readonly inFlight = onePerScrape(async (): Promise<InFlightSample[]> => (this.sources.inFlight ? this.sources.inFlight() : []));

  constructor(opts: { dryRun?: boolean; defaultMetrics?: boolean; eventLoop?: boolean } = {}) {
    if (opts.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
    if (opts.eventLoop ?? true) this.watchEventLoop();
    this.s.gauge('dnsplane_dry_run', '1 when DNSPLANE_DRY_RUN is on: applies send nothing to OVH').set(opts.dryRun ? 1 : 0);

    this.s.gauge(
      'dnsplane_read_cache_bytes',
      'Bytes the Records cache of this process keeps (kept: bases, answers, encoded bytes, as accounted) and its bound, DNSPLANE_READ_CACHE_BYTES (bound)',
      ['of'],
      async (g) => {
        const s = this.sources.readCache?.();
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
    // Gauges set at scrape time from a source server/ hands in (reset first: one value per row; none without a source).
    const sourced = <R>(
      name: string,
      help: string,
      labels: string[],
      source: () => (() => R[] | Promise<R[]>) | undefined,
      row: (r: R) => [Labels, number],
      zeros: Labels[] = [],
    ) =>
      this.s.gauge(name, help, labels, async (g) => {
        const read = source();
        if (!read) return;
        g.reset();
        for (const z of zeros) g.set(z, 0);
        for (const r of await read()) g.set(...row(r));
      });
    sourced(
      'dnsplane_tenant_last_seen_seconds',
      "Seconds since each tenant's latest authenticated call, as Postgres holds it (written coarsely: up to a minute late); tenants never seen are absent",
      ['tenant'],
      () => this.sources.lastSeen,
      ({ tenant, seconds }) => [{ tenant }, seconds],
    );
    sourced(
      'dnsplane_orphaned_record_sets',
      'Record sets nobody will write again, as Postgres holds them (core/admin/orphans.ts), by reason: disabled (owned by a disabled tenant), silent (its owner made no call for 30 days)',
      ['reason'],
      () => this.sources.orphans,
      ({ reason, sets }) => [{ reason }, sets],
      [{ reason: 'disabled' }, { reason: 'silent' }],
    );
    sourced(
      'dnsplane_jwks_age_seconds',
      "Seconds since each trusted issuer's keys were last fetched successfully by this process (fetched again every DNSPLANE_JWKS_REFRESH while in use; not used past DNSPLANE_JWKS_MAX_AGE)",
      ['issuer'],
      () => this.sources.jwks,
      ({ issuer, ageSeconds }) => [{ issuer }, ageSeconds],
    );
    sourced(
      'dnsplane_ovh_account_available',
      'Each OVH account this replica calls: 1 while its calls are answered, 0 while it is refused (403), down, disabled or unreadable (the status label says which; its zones are unavailable)',
      ['account', 'status'],
      () => this.sources.accounts,
      (a) => [{ account: a.name, status: a.status }, a.status === 'ok' ? 1 : 0],
    );
    // Health (core/health/): from Postgres at scrape time, so every replica reports the checker's truth;
    // read once per scrape for both gauges (a scrape starts every collect in one turn).
    const healthRows = onePerScrape(() => this.sources.health?.() ?? Promise.resolve([] as HealthSample[]));
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

  /** One health check made (core/health/checker.ts). */
  healthChecked(ok: boolean): void {
    this.series.healthChecks.inc({ result: ok ? 'pass' : 'fail' });
  }

  /** A workload token verified, or the rule that refused it (core/credentials/workload-tokens.ts). */
  workloadToken(result: string): void {
    this.series.workloadTokens.inc({ result });
  }

  /** A fetch of a trusted issuer's keys (core/credentials/issuer-keys.ts). */
  jwksFetched(issuer: string, result: 'ok' | 'failed'): void {
    this.series.jwksFetches.inc({ issuer, result });
  }

  /** Writes counted against a tenant's write quota (core/tenants/write-quota.ts). */
  tenantWrites(tenant: string, n: number): void {
    this.series.tenantWrites.inc({ tenant }, n);
  }

  /** An apply refused by its tenant's write quota (core/tenants/write-quota.ts). */
  tenantWriteQuotaRefused(tenant: string): void {
    this.series.tenantWriteRefusals.inc({ tenant });
  }

  /** A target left OVH (core/withdrawals/withdrawals.ts). */
  targetWithdrawn(reason: 'silent' | 'health' | 'drained'): void {
    this.series.withdrawals.inc({ reason });
  }

  /** The OVH client's onCall hook. */
  ovhCall(c: OvhCallSample): void {
    const route = { method: c.method, route: c.route };
    this.series.ovhRequests.inc({ ...route, status: String(c.status) });
    this.series.ovhDuration.observe(route, c.durationMs / 1000);
    this.series.rateWait.observe(c.waitedMs / 1000);
    if (c.attempt > 0) this.series.ovhRetries.inc(route);
  }

  /** One OVH call of an account (every attempt), by its HTTP status. */
  accountCall(account: string, status: number): void {
    this.series.accountCalls.inc({ account, status: String(status) });
  }

  ovhCallNotSent(method: string, route: string): void {
    this.series.notSent.inc({ method, route });
  }

  applyDone(zone: string, outcome: ApplyOutcome, seconds: number): void {
    this.series.applyDuration.observe({ zone, outcome }, seconds);
  }

  /** One refresh published a group of `applies` applies of the zone (core/apply/publish.ts, coalesced applies). */
  applyGroupPublished(zone: string, applies: number): void {
    this.series.applyGroups.observe({ zone }, applies);
  }

  lockWaited(zone: string, operation: 'apply' | 'sync', seconds: number): void {
    this.series.lockWait.observe({ zone, operation }, seconds);
  }

  driftChecked(zone: string, result: DriftStatus, records: { added: number; removed: number; updated: number }): void {
    this.series.driftChecks.inc({ zone, result });
    for (const change of ['added', 'removed', 'updated'] as const) {
      if (records[change] > 0) this.series.driftRecords.inc({ zone, change }, records[change]);
    }
  }

  thresholdRefused(zone: string, tenant: string): void {
    this.series.thresholdRefusals.inc({ zone, tenant });
  }

  loginFailure(outcome: 'failed' | 'limited'): void {
    this.series.failedLogins.inc({ outcome });
  }

  cacheRead(zone: string, result: CacheReadResult): void {
    // Counted here and added to the series at each scrape (its collect): a poll costs one increment,
    // not prom-client's hashing of the labels (every poll counts one), nor a key made of both labels
    // (a zone's name is a string whose hash is kept: found without hashing it again).
    let byZone = this.cacheReadCounts.get(result);
    if (byZone === undefined) this.cacheReadCounts.set(result, (byZone = new Map()));
    const pending = byZone.get(zone);
    if (pending) pending.n++;
    else byZone.set(zone, { labels: { zone, result }, n: 1 });
  }

  zoneStatesRead(): void {
    this.series.zoneStateReads.inc();
  }

  planDone(seconds: number): void {
    this.series.planDuration.observe(seconds);
  }

  planRunning(tenant: string, delta: 1 | -1): void {
    this.series.plansInProgress.inc({ tenant }, delta);
  }

  planRefused(tenant: string): void {
    this.series.plansRefused.inc({ tenant });
  }

  /** A server first answered everything an apply changed, `seconds` after its refresh. */
  serverAnswered(zone: string, server: string, seconds: number): void {
    this.series.visibilitySeconds.observe({ zone, server }, seconds);
  }

  visibilityFinal(zone: string, state: string): void {
    this.series.visibilityFinals.inc({ zone, state });
  }

  probeQuery(result: 'match' | 'old' | 'error'): void {
    this.series.probeQueries.inc({ result });
  }

  rpcDone(procedure: string, seconds: number): void {
    this.series.rpcDuration.observe(procedure, seconds);
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
      this.series.loopDelay.observe(Math.max(0, now - armed - every) / 1000);
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
}
