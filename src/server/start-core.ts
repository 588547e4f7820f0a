/**
 * The pieces of core that startServer (server/server.ts) assembles before any door opens, each a step it
 * names: the database made ready (migrated, schema and sealed secrets checked), whom OVH calls go to
 * (OVH or the demo simulator), the OVH client behind the account's shared budget, the caches fed by
 * the LISTEN connection, and the CoreContext every door is handed.
 */
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { CoreContext } from '../core/context.js';
import { Lifecycle } from '../core/lifecycle.js';
import { defaultReadCacheBytes, ReadCache } from '../core/reads/read-cache.js';
import { heardZoneChange } from '../core/reads/zone-memory.js';
import { TokenCache } from '../core/tenants/tenants.js';
import { warmTokenCache } from '../core/tenants/token-warmth.js';
import { checkSealedSecrets, type SecretBox } from '../core/keys/secrets.js';
import { TsigKeyCache } from '../core/keys/tsig.js';
import { OvhKeyCache } from '../core/keys/ovh.js';
import { IssuerKeys } from '../core/credentials/issuer-keys.js';
import { Metrics } from '../metrics/metrics.js';
import { PlanLimiter } from '../core/plan-limit.js';
import { OvhApi } from '../ovh/client.js';
import type { OvhCredentials } from '../ovh/client/signed-request.js';
import { accountKey } from '../ovh/client/transport.js';
import { accountLabel } from '../ovh/ratelimit.js';
import type { OvhCallInfo } from '../ovh/client/transport.js';
import { OvhAccounts, type ProveCredentials } from '../core/accounts/registry.js';
import { RoutedOvhApi } from '../core/accounts/router.js';
import { SharedOvhBudget } from '../core/ovh-budget.js';
import type { OvhEndpoint } from '../ovh/endpoint.js';
import type { OvhSimulator } from '../ovhsim/index.js';
import { checkDemoDatabase, secretBoxFor, startDemoSimulator } from '../demo/demo.js';
import * as store from '../store/index.js';
import { messageOf } from '../lib/error-message.js';
import { VisibilityWatch } from '../core/visibility-watch.js';
import type { Prober } from '../core/probe/prober.js';
import type { HealthChecker } from '../core/health/checker.js';

/** How long a replica holds a probe without renewing it: another takes over the probes of one silent this long. */
const PROBE_LEASE_MS = 15_000;

/** How often the LISTEN connection proves it is alive; silent for twice that, tokens go to Postgres. */
const LISTENER_HEARTBEAT_MS = 250;

/** What start-up has opened so far, each released in reverse when a later step fails, or at close. */
export interface Opened {
  simulator?: OvhSimulator;
  /** Autocommitted journal writes made while a zone lock holds a connection of the main pool. */
  journalPool?: ReturnType<typeof store.createSidePool>;
  /** The OVH budget's leases (core/ovh-budget.ts): one connection of its own, never behind a zone lock's. */
  budgetPool?: ReturnType<typeof store.createSidePool>;
  ovhBudget?: SharedOvhBudget;
  /** The OVH accounts beside `default`, each client with its own budget (core/accounts/registry.ts). */
  accounts?: OvhAccounts;
  /** Tenant changes of every replica, for the token cache. */
  listener?: store.Listener;
  prober?: Prober;
  health?: HealthChecker;
}

/** Everything start-up opened, released after a failed start (errors ignored: the first one is thrown). */
export async function releaseOpened(opened: Opened, database: store.Database): Promise<void> {
  await opened.prober?.stop().catch(() => undefined);
  await opened.health?.stop().catch(() => undefined);
  await opened.simulator?.stop().catch(() => undefined);
  await opened.listener?.stop().catch(() => undefined);
  await opened.journalPool?.end().catch(() => undefined);
  opened.ovhBudget?.close();
  opened.accounts?.close();
  await opened.budgetPool?.end().catch(() => undefined);
  await database.close().catch(() => undefined);
}

/**
 * The database made ready: migrated; an image older than the schema (a rolling upgrade, or a
 * downgrade) says so — or refuses, when the code that migrated the database marked it too old
 * (store/migrate.ts OLDEST_COMPATIBLE_SCHEMA); secrets at rest (TSIG keys) open with this server's
 * key, refused here before anything is served.
 */
export async function readyDatabase(config: Config, log: Logger, database: store.Database) {
  if (config.ovh.mode === 'simulator') await checkDemoDatabase(database.pool, database.label);
  const applied = await store.migrate(database.pool);
  if (applied.applied.length) log.info({ migrations: applied.applied }, 'database migrated');
  const schema = await store.checkSchema(database.pool);
  if (schema.state === 'refused') throw new Error(schema.message);
  if (schema.state === 'older') log.warn({ known: schema.known, schema: schema.release?.schema, migratedBy: schema.release?.migratedBy }, schema.message);
  const secrets = await secretBoxFor(config, log);
  await checkSealedSecrets(database.pool, secrets);
  return { schema, secrets };
}

export interface OvhTarget {
  endpoint: OvhEndpoint;
  credentials: OvhCredentials;
  extraCaPems: string[];
}

/** Where OVH calls go: the configured endpoint, or the demo's in-process simulator (started here, into opened). */
export async function ovhTargetOf(config: Config, log: Logger, database: store.Database, opened: Opened): Promise<OvhTarget> {
  if (config.ovh.mode === 'simulator') {
    const simulator = (opened.simulator = await startDemoSimulator(config.dataDir, log, config.visibility.simPropagation));
    log.warn({ api: simulator.apiUrl, dnsPort: simulator.dnsPort, database: database.label }, 'demo mode: using the in-process OVH simulator');
    return {
      endpoint: { host: simulator.host, port: simulator.apiPort, basePath: '/1.0', label: `${simulator.apiUrl}/1.0 (in-process simulator)` },
      credentials: simulator.credentials,
      extraCaPems: [simulator.caPem],
    };
  }
  if (config.ovh.mode !== 'remote') throw new Error(`no OVH target in mode ${config.ovh.mode}`);
  const { endpoint, credentials, extraCaPems } = config.ovh;
  log.info({ endpoint: endpoint.label, database: database.label }, 'talking to OVH');
  return { endpoint, credentials, extraCaPems };
}

/** The process's series, with the sources they read from the database. */
export function metricsOf(config: Config, log: Logger, database: store.Database): Metrics {
  const metrics = new Metrics({ dryRun: config.dryRun });
  metrics.sources.zones = async () => (await store.listZones(database.pool)).map((z) => ({ zone: z.name, generation: z.generation, records: z.recordCount }));
  metrics.sources.inFlight = () => store.inFlightSummary(database.pool);
  metrics.sources.health = () => store.healthSamples(database.pool);
  if (config.dryRun) log.warn('DNSPLANE_DRY_RUN is on: applies log and return the OVH calls they would make and send none');
  return metrics;
}

/**
 * The OVH client; DNSPLANE_OVH_RATE is the OVH account's: every replica on this database leases from
 * one budget. The client routes each zone's calls to its account (core/accounts/: `default` is this
 * one; every other account its own client, endpoint, credentials and budget at its own rate).
 */
export function ovhClientOf(
  config: Config,
  log: Logger,
  database: store.Database,
  target: OvhTarget,
  metrics: Metrics,
  instance: string,
  opened: Opened,
  secrets?: SecretBox,
): OvhApi {
  const budgetPool = (opened.budgetPool = store.createSidePool(database.pool, { max: 1, log: (msg, fields) => log.warn(fields ?? {}, msg) }));
  const warn = (msg: string, fields?: Record<string, unknown>) => log.warn(fields ?? {}, msg);
  const budgetOf = (endpoint: OvhEndpoint, credentials: OvhCredentials, rate: number) =>
    new SharedOvhBudget({ pool: budgetPool, account: accountLabel(accountKey(endpoint, credentials)), replica: instance, ratePerSecond: rate, warn });
  const clientOptions = (account: string, endpoint: OvhEndpoint, credentials: OvhCredentials, rate: number, budget: SharedOvhBudget) => ({
    endpoint,
    credentials,
    timeoutMs: config.ovhTimeoutMs,
    ratePerSecond: rate,
    budget,
    maxConcurrent: config.ovhMaxConcurrent,
    warn,
    info: (msg: string, fields?: Record<string, unknown>) => log.info(fields ?? {}, msg),
    onCall: (info: OvhCallInfo) => {
      metrics.ovhCall(info);
      metrics.accountCall(account, info.status);
    },
    readOnly: config.dryRun,
    expandedLists: config.ovhExpandedLists,
  });
  const { endpoint, credentials, extraCaPems } = target;
  opened.ovhBudget = budgetOf(endpoint, credentials, config.ovhRate);
  const registry = (opened.accounts = new OvhAccounts({
    pool: database.pool,
    ...(secrets ? { secrets } : {}),
    warn,
    clientOf: (t) => {
      const rate = t.rate ?? config.ovhRate;
      const budget = budgetOf(t.endpoint, t.credentials, rate);
      return { client: new OvhApi(clientOptions(t.name, t.endpoint, t.credentials, rate, budget)), close: () => budget.close() };
    },
  }));
  metrics.sources.accounts = () => registry.states();
  return new RoutedOvhApi({ ...clientOptions(store.DEFAULT_ACCOUNT, endpoint, credentials, config.ovhRate, opened.ovhBudget), extraCaPems }, registry);
}

/** How `account add` and `rotate` prove credentials: one call (the account's zones), no retries, no budget of the account's yet. */
function proverOf(config: Config): ProveCredentials {
  return (endpoint, credentials) =>
    new OvhApi({ endpoint, credentials, timeoutMs: config.ovhTimeoutMs, ratePerSecond: config.ovhRate, retry: { attempts: 1 } }).listZones();
}

/**
 * The CoreContext, with its caches fed by the LISTEN connection (started here, into opened): tokens,
 * TSIG keys and OVH keys are authenticated from memory while this replica hears every tenant change
 * (NOTIFY dnsplane_tenant), zone generations kept while it hears every NOTIFY dnsplane_zone
 * (core/reads/read-cache.ts ZoneStateSource); a lost or silent listener sends every read to Postgres until
 * it is back. Waits for visibility (core/visibility/visibility.ts) are woken by NOTIFY dnsplane_visibility.
 */
export async function coreContextOf(
  config: Config,
  log: Logger,
  database: store.Database,
  ovh: OvhApi,
  metrics: Metrics,
  secrets: SecretBox | undefined,
  instance: string,
  opened: Opened,
): Promise<CoreContext & { lifecycle: Lifecycle }> {
  opened.journalPool = store.createSidePool(database.pool, { max: 2, log: (msg, fields) => log.warn(fields ?? {}, msg) });
  const listening = () => opened.listener?.live() ?? false;
  const tokens = new TokenCache(listening);
  const tsigKeys = new TsigKeyCache(listening);
  const ovhKeys = new OvhKeyCache(listening);
  const caches = [tokens, tsigKeys, ovhKeys];
  // Every valid token known ahead of the calls (core/tenants/token-warmth.ts): all of them once
  // listening, again after a gap, a tenant's own again when it changes. A failure leaves the calls to
  // fill the cache, as without it.
  const warm = (name?: string): void =>
    void warmTokenCache(database.pool, tokens, name).catch((e: unknown) =>
      log.warn({ err: messageOf(e), tenant: name }, "could not read the tenants' tokens ahead of their calls"),
    );
  const reads = new ReadCache(database.pool, {
    maxBytes: config.readCacheBytes ?? defaultReadCacheBytes(),
    onZoneStatesRead: () => metrics.zoneStatesRead(),
    listening,
  });
  const visibility = new VisibilityWatch();
  opened.listener = await store.listen(
    database.pool,
    {
      tenant: (name) => {
        for (const c of caches) c.forget(name);
        warm(name);
      },
      visibility: (id) => visibility.notify(id),
      probe: () => opened.prober?.heard(),
      // An OVH account added, rotated, disabled, enabled or removed on any replica: its client rebuilt here.
      account: (name) =>
        void opened.accounts?.reload(name).catch((e: unknown) => log.warn({ err: messageOf(e), account: name }, 'could not read the OVH account again')),
      // The read cache's base and the apply path's view of a zone catch up on what a generation changed
      // (core/reads/heard-changes.ts): re-reading that, not the zone.
      zone: (zone, generation, changed) => {
        reads.heard(zone, generation, changed);
        heardZoneChange(database.pool, zone, generation, changed);
      },
    },
    {
      heartbeatMs: LISTENER_HEARTBEAT_MS,
      onLost: () => {
        for (const c of caches) c.clear();
        reads.zoneStates.forget();
        log.warn('lost the LISTEN connection: tokens, TSIG keys, OVH keys and zone generations are checked in Postgres until it is back');
      },
      onReconnect: () => {
        for (const c of caches) c.clear();
        reads.zoneStates.forget();
        visibility.wakeAll();
        opened.prober?.heard();
        warm();
        void opened.accounts?.load().catch((e: unknown) => log.warn({ err: messageOf(e) }, 'could not read the OVH accounts again'));
        log.info('LISTEN connection back');
      },
      onError: (err) => log.debug({ err: messageOf(err) }, 'LISTEN connection error'),
    },
  );
  warm();
  await opened.accounts?.load();
  metrics.sources.readCache = () => reads.stats();
  const issuerKeys = new IssuerKeys({ ...config.jwks, log, onFetch: (issuer, result) => metrics.jwksFetched(issuer, result) });
  metrics.sources.jwks = () => issuerKeys.stats();
  return {
    lifecycle: new Lifecycle(),
    instance,
    pool: database.pool,
    journalPool: opened.journalPool,
    ovh,
    log,
    settings: {
      zones: config.zones,
      lockTimeoutMs: config.lockTimeoutMs,
      planTtlMs: config.planTtlMs,
      syncConcurrency: config.syncConcurrency,
      firstSyncs: config.firstSyncs,
      cnameRelativeZones: config.cnameRelativeZones,
      dryRun: config.dryRun,
      maxChangePercent: config.maxChangePercent,
      applyBatch: config.applyBatch,
      applyCoalesceMs: config.applyCoalesceMs,
      ovhApi: { advertise: config.ovhApi.advertise, draftTtlMs: config.ovhApi.draftTtlMs, ...soaServerOf(config) },
      visibility: { timeoutMs: config.visibility.timeoutMs, leaseMs: PROBE_LEASE_MS },
    },
    metrics,
    reads,
    tokens,
    secrets,
    tsigKeys,
    ovhKeys,
    issuerKeys,
    visibility,
    planLimiter: new PlanLimiter(config.planConcurrency, {
      running: (tenant, delta) => metrics.planRunning(tenant, delta),
      refused: (tenant) => metrics.planRefused(tenant),
    }),
    ...(opened.accounts ? { accounts: { registry: opened.accounts, prove: proverOf(config) } } : {}),
  };
}

/** A name for this replica in leases and journal rows: host, pid and a random part. */
export function instanceName(): string {
  return `${hostname()} pid ${process.pid} ${Math.random().toString(36).slice(2, 10)}`;
}

/**
 * The served OVH API's SOA `server`: the DNS door, where it is advertised (DNSPLANE_DNS_ADVERTISE, else
 * DNSPLANE_DNS_LISTEN when it names an address), so that external-dns's serial check asks a server
 * answering the serial the API serves (both the zone's generation); nothing when the door is off or
 * listens on every address with nothing advertised (then the zone's first name server is named).
 */
function soaServerOf(config: Config): { soaServer?: string } {
  const host = config.dnsListen ? config.dnsAdvertise?.host : undefined;
  if (host === undefined || host === '' || host === '0.0.0.0' || host === '::' || host === '[::]') return {};
  return { soaServer: host.includes(':') && !host.startsWith('[') ? `[${host}]` : host };
}
