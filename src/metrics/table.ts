/**
 * The series Metrics (metrics/metrics.ts) keeps and feeds itself, as one table: each its name, help, label
 * names, kind and, for a histogram, buckets; seriesTable() (metrics/series.ts) declares them in this
 * order, the order /metrics lists them in. The gauges read at scrape time from a source (zones,
 * journal, health, last seen, the read cache) are declared by Metrics' constructor, beside their
 * sources. Names, help texts and label sets are what deploy/'s alerts and dashboard query: a change
 * here is a change of the served metrics. A leaf module: it imports nothing of dnsplane (seriesTable's
 * signature checks each entry against SeriesSpec).
 */

/** The buckets of the durations that take from milliseconds to a minute. */
const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export const SERIES = {
  ovhRequests: {
    kind: 'counter',
    name: 'dnsplane_ovh_requests_total',
    help: 'HTTP calls to the OVH API, each attempt counted, by method, route and status (0: no answer)',
    labels: ['method', 'route', 'status'],
  },
  ovhDuration: {
    kind: 'histogram',
    name: 'dnsplane_ovh_request_duration_seconds',
    help: 'Duration of HTTP calls to the OVH API (rate-limit wait excluded)',
    labels: ['method', 'route'],
    buckets: SECONDS,
  },
  ovhRetries: {
    kind: 'counter',
    name: 'dnsplane_ovh_retries_total',
    help: 'OVH calls that were attempts after the first (retries)',
    labels: ['method', 'route'],
  },
  rateWait: {
    kind: 'histogram',
    name: 'dnsplane_ovh_ratelimit_wait_seconds',
    help: 'Time each OVH call waited for the per-application-key rate limit and the concurrency bound',
    labels: [],
    buckets: [0, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  },
  accountCalls: {
    kind: 'counter',
    name: 'dnsplane_ovh_account_calls_total',
    help: 'OVH calls (each attempt) by OVH account (`default`: the OVH_* variables) and HTTP status (0: no answer)',
    labels: ['account', 'status'],
  },
  notSent: {
    kind: 'counter',
    name: 'dnsplane_ovh_calls_not_sent_total',
    help: 'OVH calls a dry-run apply would have made (DNSPLANE_DRY_RUN), by method and route',
    labels: ['method', 'route'],
  },
  applyDuration: {
    kind: 'histogram',
    name: 'dnsplane_apply_duration_seconds',
    help: 'Duration of one zone apply (lock wait included), by zone and outcome',
    labels: ['zone', 'outcome'],
    buckets: SECONDS,
  },
  applyGroups: {
    kind: 'histogram',
    name: 'dnsplane_apply_group_applies',
    help: 'Applies of a zone published by one refresh (a group of coalesced applies: 1 when an apply was alone), by zone',
    labels: ['zone'],
    buckets: [1, 2, 3, 5, 10, 20, 50, 100],
  },
  lockWait: {
    kind: 'histogram',
    name: 'dnsplane_lock_wait_seconds',
    help: "Time spent waiting for a zone's advisory lock, by zone and operation",
    labels: ['zone', 'operation'],
    buckets: SECONDS,
  },
  /** Counted by Metrics.cacheRead and added at each scrape (its collect). */
  cacheReads: {
    kind: 'counter',
    name: 'dnsplane_cache_reads_total',
    help: 'Cache use per zone: hit (Records served from the cache), not_modified (caller up to date), miss (zone read from OVH first)',
    labels: ['zone', 'result'],
  },
  zoneStateReads: {
    kind: 'counter',
    name: 'dnsplane_zone_state_reads_total',
    help: "Fresh reads of every zone's generation in Postgres, each shared by the calls that arrived while the previous one ran; none while the LISTEN connection keeps them (core/reads/read-cache.ts ZoneStateSource)",
    labels: [],
  },
  driftChecks: {
    kind: 'counter',
    name: 'dnsplane_drift_checks_total',
    help: 'Drift checks by zone and result: unchanged, changed (records changed outside dnsplane were found and read into the cache), busy (zone locked), skipped',
    labels: ['zone', 'result'],
  },
  driftRecords: {
    kind: 'counter',
    name: 'dnsplane_drift_records_total',
    help: 'Records drift checks found changed outside dnsplane, by zone and change (added, removed, updated)',
    labels: ['zone', 'change'],
  },
  planDuration: {
    kind: 'histogram',
    name: 'dnsplane_plan_duration_seconds',
    help: 'Duration of one Plan in core: routing, diff, operations and storage (first sync of a zone included)',
    labels: [],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  },
  plansInProgress: {
    kind: 'gauge',
    name: 'dnsplane_plans_in_progress',
    help: 'Plans computing now, per tenant (at most DNSPLANE_PLAN_CONCURRENCY each)',
    labels: ['tenant'],
  },
  plansRefused: {
    kind: 'counter',
    name: 'dnsplane_plans_refused_total',
    help: 'Plans refused with RESOURCE_EXHAUSTED because the tenant had DNSPLANE_PLAN_CONCURRENCY in progress',
    labels: ['tenant'],
  },
  rpcDuration: {
    kind: 'keyedHistogram',
    name: 'dnsplane_rpc_duration_seconds',
    help: 'Server time of each RPC on the API port, from its first byte to the last byte of the answer, by procedure (the RPC path)',
    labels: ['procedure'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  },
  loopDelay: {
    kind: 'histogram',
    name: 'dnsplane_event_loop_delay_seconds',
    help: 'How late a timer armed every 20 ms fired: how long synchronous work held the event loop',
    labels: [],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  },
  thresholdRefusals: {
    kind: 'counter',
    name: 'dnsplane_threshold_refusals_total',
    help: "Zone applies refused because they would update or delete more than the tenant's change threshold (DNSPLANE_MAX_CHANGE_PERCENT) without force, or change a protected name without a second admin's approval",
    labels: ['zone', 'tenant'],
  },
  failedLogins: {
    kind: 'counter',
    name: 'dnsplane_failed_logins_total',
    help: 'Requests with a missing or bad token (failed), and requests refused with 429 because their address failed too often (limited)',
    labels: ['outcome'],
  },
  workloadTokens: {
    kind: 'counter',
    name: 'dnsplane_workload_tokens_total',
    help: 'Workload tokens (JWTs of trusted issuers) verified, by result: verified, or the rule that refused one (expired, not_yet_valid, too_long_lived, audience, unknown_issuer, subject, algorithm, unknown_key, signature, claims, malformed, disabled), or error (keys not to be had); a token is verified once, then kept until its exp',
    labels: ['result'],
  },
  jwksFetches: {
    kind: 'counter',
    name: 'dnsplane_jwks_fetches_total',
    help: "Fetches of a trusted issuer's keys (its discovery document and JWKS), by issuer and result: ok, failed (its cached keys go on working until DNSPLANE_JWKS_MAX_AGE)",
    labels: ['issuer', 'result'],
  },
  visibilitySeconds: {
    kind: 'histogram',
    name: 'dnsplane_visibility_seconds',
    help: "Seconds from an apply's refresh to the moment an authoritative server of its zone first answered everything it changed, by zone and server",
    labels: ['zone', 'server'],
    buckets: [0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 900, 1800],
  },
  visibilityFinals: {
    kind: 'counter',
    name: 'dnsplane_visibility_final_total',
    help: 'Applies whose visibility became final, by zone and state: visible, not_visible (a server still answered older data at DNSPLANE_VISIBLE_TIMEOUT), unverified (no server could be asked), superseded',
    labels: ['zone', 'state'],
  },
  probeQueries: {
    kind: 'counter',
    name: 'dnsplane_probe_queries_total',
    help: "DNS questions the prober asked the zones' authoritative servers, by result: match (as published), old (other data), error (no answer to trust)",
    labels: ['result'],
  },
  withdrawals: {
    kind: 'counter',
    name: 'dnsplane_target_withdrawals_total',
    help: 'Targets withdrawn from OVH (core/withdrawals/withdrawals.ts), by reason: silent (its tenant silent past withdraw_after), health (its check failed), drained (dnsplane tenant drain)',
    labels: ['reason'],
  },
  healthChecks: {
    kind: 'counter',
    name: 'dnsplane_health_checks_total',
    help: 'Health checks of targets this process made (core/health/), by result: pass, fail',
    labels: ['result'],
  },
  // A cluster's life (issue 46).
  tenantWrites: {
    kind: 'counter',
    name: 'dnsplane_tenant_writes_total',
    help: "OVH writes (creates and updates, not deletions) this process counted against tenants' write quotas (core/tenants/write-quota.ts), by tenant",
    labels: ['tenant'],
  },
  tenantWriteRefusals: {
    kind: 'counter',
    name: 'dnsplane_tenant_write_quota_refusals_total',
    help: "Applies this process refused because the tenant's write quota did not hold their writes (nothing sent), by tenant",
    labels: ['tenant'],
  },
} as const;
