/**
 * The composition root: builds store, OVH client (or the in-process simulator) and core, starts the
 * ports (the API: api/port.ts; the webhook; the DNS door) and the background loops, and stops
 * gracefully. Both HTTP ports stand behind the one HTTP front (api/front/).
 */
import { hostname } from 'node:os';
import pretty from 'pino-pretty';
import pino, { type Logger } from 'pino';
import type { Config } from './config.js';
import { recoverZone } from './core/apply/index.js';
import { settleAtStart } from './core/settling.js';
import { startDriftLoop, type DriftLoop } from './core/drift.js';
import type { CoreContext } from './core/context.js';
import { Lifecycle } from './core/lifecycle.js';
import { ReadCache } from './core/read-cache.js';
import { heardZoneChange } from './core/zone-memory.js';
import { TokenCache } from './core/tenants.js';
import { checkSealedSecrets } from './core/secrets.js';
import { TsigKeyCache, tsigKeyring, type TsigKeyring } from './core/tsig-keys.js';
import { OvhKeyCache } from './core/ovh-keys.js';
import { registerZones } from './core/zones.js';
import { LoginLimiter } from './core/login-limiter.js';
import { Metrics } from './metrics.js';
import { PlanLimiter } from './core/plan-limit.js';
import { OvhApi } from './ovh/client.js';
import { accountKey } from './ovh/client/transport.js';
import { accountLabel } from './ovh/ratelimit.js';
import { SharedOvhBudget } from './core/ovh-budget.js';
import type { OvhEndpoint } from './ovh/endpoint.js';
import type { OvhCredentials } from './ovh/client/signed-request.js';
import type { OvhSimulator } from './ovhsim/index.js';
import { checkDemoDatabase, DEMO_ZONE, DNS_DOOR_PORT_FILE, onKeptPort, secretBoxFor, startDemoSimulator } from './demo.js';
import { startDnsDoor, type DnsListener } from './dnsserver/index.js';
import path from 'node:path';
import { InvalidInputError } from './dns/errors.js';
import * as store from './store/index.js';
import { startCentralWebhook, type WebhookListener } from './webhook/index.js';
import { startDraftSweep } from './core/staging.js';
import { startApiPort } from './api/port.js';
import { messageOf } from './error-message.js';
import { VisibilityWatch } from './core/visibility-watch.js';
import { Prober } from './core/probe/prober.js';
import { ServerDirectory } from './core/probe/servers.js';

export { DEMO_ZONE };

export interface Server {
  /** http://host:port of the API. */
  url: string;
  port: number;
  ctx: CoreContext;
  /** The Prometheus registry served on /metrics. */
  metrics: Metrics;
  database: store.Database;
  /** The in-process simulator in demo mode. */
  simulator?: OvhSimulator;
  /** Which database, for the banner (store.Database.label: never a password). */
  databaseLabel: string;
  /** Which OVH endpoint (the simulator's in demo mode). */
  ovhLabel: string;
  /** http://host:port of the external-dns webhook listener (DNSPLANE_WEBHOOK_LISTEN); absent when off. */
  webhookUrl?: string;
  /** Where the DNS door listens (DNSPLANE_DNS_LISTEN, UDP and TCP); absent when off. */
  dns?: { host: string; port: number };
  close(): Promise<void>;
}

/** What a caller may hand the server besides its configuration. */
export interface ServerParts {
  /** The TSIG keys the DNS door authenticates with (tests hand in their own). */
  dnsKeyring?: TsigKeyring;
}

/**
 * The logger: JSON lines (the default, for log collectors), or human lines (pino-pretty, in-process and
 * synchronous, so nothing is lost at exit) when `format` is pretty — DNSPLANE_LOG_FORMAT, or a terminal.
 * Redaction applies to both. `destination`: where the lines go (default stdout).
 */
export function createLogger(level: string, format: 'json' | 'pretty' = 'json', destination?: pino.DestinationStream & { isTTY?: boolean }): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { service: 'dnsplane' },
    // Belt and braces: nothing should log these, and if something does they are masked.
    redact: {
      paths: ['token', '*.token', 'authorization', '*.authorization', 'headers.authorization', 'applicationSecret', '*.applicationSecret', 'consumerKey', '*.consumerKey', 'password', '*.password', 'secret', '*.secret'],
      censor: '[redacted]',
    },
  };
  if (format === 'json') return destination ? pino(options, destination) : pino(options);
  const out = destination ?? process.stdout;
  return pino(options, pretty({ destination: out, sync: true, colorize: Boolean((out as { isTTY?: boolean }).isTTY), translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,service', singleLine: true }));
}

/** How long a replica holds a probe without renewing it: another takes over the probes of one silent this long. */
const PROBE_LEASE_MS = 15_000;

/** How often the LISTEN connection proves it is alive; silent for twice that, tokens go to Postgres. */
const LISTENER_HEARTBEAT_MS = 250;

export async function startServer(config: Config, log: Logger = createLogger(config.logLevel), parts: ServerParts = {}): Promise<Server> {
  // No OVH credentials and no demo asked for: refuse before the database is even opened.
  if (config.ovh.mode === 'unconfigured') throw new InvalidInputError(config.ovh.field, config.ovh.rule);
  const database = await store.openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    log: (msg, fields) => log.info(fields ?? {}, msg),
    // Embedded: CLI commands (tenant, migrate) work beside this server through the connection file.
    publishConnection: true,
  });
  let simulator: OvhSimulator | undefined;
  /** Autocommitted journal writes made while a zone lock holds a connection of the main pool. */
  let journalPool: ReturnType<typeof store.createSidePool> | undefined;
  /** The OVH budget's leases (core/ovh-budget.ts): one connection of its own, never behind a zone lock's. */
  let budgetPool: ReturnType<typeof store.createSidePool> | undefined;
  let ovhBudget: SharedOvhBudget | undefined;
  /** Tenant changes of every replica, for the token cache. */
  let listener: store.Listener | undefined;
  let prober: Prober | undefined;
  try {
    if (config.ovh.mode === 'simulator') await checkDemoDatabase(database.pool, database.label);
    const applied = await store.migrate(database.pool);
    if (applied.applied.length) log.info({ migrations: applied.applied }, 'database migrated');
    // An image older than the schema (a rolling upgrade, or a downgrade) says so — or refuses, when
    // the code that migrated the database marked it too old (store/migrate.ts OLDEST_COMPATIBLE_SCHEMA).
    const schema = await store.checkSchema(database.pool);
    if (schema.state === 'refused') throw new Error(schema.message);
    if (schema.state === 'older') log.warn({ known: schema.known, schema: schema.release?.schema, migratedBy: schema.release?.migratedBy }, schema.message);
    // Secrets at rest (TSIG keys) must open with this server's key: refused here, before anything is served.
    const secrets = await secretBoxFor(config, log);
    await checkSealedSecrets(database.pool, secrets);

    let endpoint: OvhEndpoint;
    let credentials: OvhCredentials;
    let extraCaPems: string[];
    if (config.ovh.mode === 'simulator') {
      simulator = await startDemoSimulator(config.dataDir, log, config.visibility.simPropagation);
      endpoint = { host: simulator.host, port: simulator.apiPort, basePath: '/1.0', label: `${simulator.apiUrl}/1.0 (in-process simulator)` };
      credentials = simulator.credentials;
      extraCaPems = [simulator.caPem];
      log.warn({ api: simulator.apiUrl, dnsPort: simulator.dnsPort, database: database.label }, 'demo mode: using the in-process OVH simulator');
    } else {
      ({ endpoint, credentials, extraCaPems } = config.ovh);
      log.info({ endpoint: endpoint.label, database: database.label }, 'talking to OVH');
    }

    const metrics = new Metrics({ dryRun: config.dryRun });
    metrics.setZoneSource(async () =>
      (await store.listZones(database.pool)).map((z) => ({ zone: z.name, generation: z.generation, records: z.recordCount })),
    );
    metrics.setInFlightSource(() => store.inFlightSummary(database.pool));
    if (config.dryRun) log.warn('DNSPLANE_DRY_RUN is on: applies log and return the OVH calls they would make and send none');
    const instance = `${hostname()} pid ${process.pid} ${Math.random().toString(36).slice(2, 10)}`;
    // DNSPLANE_OVH_RATE is the OVH account's: every replica on this database leases from one budget.
    budgetPool = store.createSidePool(database.pool, { max: 1, log: (msg, fields) => log.warn(fields ?? {}, msg) });
    ovhBudget = new SharedOvhBudget({ pool: budgetPool, account: accountLabel(accountKey(endpoint, credentials)), replica: instance, ratePerSecond: config.ovhRate, warn: (msg, fields) => log.warn(fields ?? {}, msg) });
    const ovh = new OvhApi({
      endpoint,
      credentials,
      extraCaPems,
      timeoutMs: config.ovhTimeoutMs,
      ratePerSecond: config.ovhRate,
      budget: ovhBudget,
      maxConcurrent: config.ovhMaxConcurrent,
      warn: (msg, fields) => log.warn(fields ?? {}, msg),
      info: (msg, fields) => log.info(fields ?? {}, msg),
      onCall: (info) => metrics.ovhCall(info),
      readOnly: config.dryRun,
      expandedLists: config.ovhExpandedLists,
    });
    journalPool = store.createSidePool(database.pool, { max: 2, log: (msg, fields) => log.warn(fields ?? {}, msg) });
    const lifecycle = new Lifecycle();
    // Tokens are authenticated from memory while this replica hears every tenant change (NOTIFY
    // dnsplane_tenant); a lost or silent listener sends every call to Postgres until it is back.
    const tokens = new TokenCache(() => listener?.live() ?? false);
    const tsigKeys = new TsigKeyCache(() => listener?.live() ?? false);
    const ovhKeys = new OvhKeyCache(() => listener?.live() ?? false);
    const caches = [tokens, tsigKeys, ovhKeys];
    // Waits for visibility (core/visibility.ts) are woken by NOTIFY dnsplane_visibility.
    const visibility = new VisibilityWatch();
    listener = await store.listen(
      database.pool,
      {
        tenant: (name) => {
          for (const c of caches) c.forget(name);
        },
        visibility: (id) => visibility.notify(id),
        probe: () => prober?.heard(),
        // The apply path's view of a zone catches up on what another replica's apply changed (core/zone-memory.ts).
        zone: (zone, generation, changed) => heardZoneChange(database.pool, zone, generation, changed),
      },
      {
        heartbeatMs: LISTENER_HEARTBEAT_MS,
        onLost: () => {
          for (const c of caches) c.clear();
          log.warn('lost the LISTEN connection: tokens, TSIG keys and OVH keys are checked in Postgres until it is back');
        },
        onReconnect: () => {
          for (const c of caches) c.clear();
          visibility.wakeAll();
          prober?.heard();
          log.info('LISTEN connection back');
        },
        onError: (err) => log.debug({ err: messageOf(err) }, 'LISTEN connection error'),
      },
    );
    const reads = new ReadCache(database.pool, { maxBytes: config.readCacheBytes, onZoneStatesRead: () => metrics.zoneStatesRead() });
    metrics.setReadCacheSource(() => reads.stats());
    const ctx: CoreContext = {
      lifecycle,
      instance,
      pool: database.pool,
      journalPool,
      ovh,
      log,
      settings: {
        zones: config.zones,
        lockTimeoutMs: config.lockTimeoutMs,
        planTtlMs: config.planTtlMs,
        syncConcurrency: config.syncConcurrency,
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
      visibility,
      planLimiter: new PlanLimiter(config.planConcurrency, {
        running: (tenant, delta) => metrics.planRunning(tenant, delta),
        refused: (tenant) => metrics.planRefused(tenant),
      }),
    };
    await registerZones(ctx);
    // Applies that died in flight are rolled back in the background (core/settling.ts): each waits out
    // its dead holder's lease (up to ~30 s) holding its zone's lock, and nothing else waits for it.
    const settling = await settleAtStart(ctx, recoverZone);
    if (settling.zones.length > 0) {
      log.warn({ zones: settling.zones }, 'zones with applies that died in flight: settling them in the background; only these zones wait');
      void settling.done.then((recovered) => log.warn({ zones: settling.zones, recovered }, 'recovered applies that died in flight'));
    }
    // Each publish proved on the zone's authoritative servers (core/probe/): DNSPLANE_AUTHORITATIVE_SERVERS,
    // else each zone's name servers from OVH (the demo's simulator's by their ports).
    const known = simulator ? new Map(simulator.dnsServers.map((s) => [s.name, { host: s.host, port: s.port }])) : undefined;
    prober = await Prober.start(ctx, {
      directory: new ServerDirectory(ctx, { fixed: config.visibility.authoritativeServers, known }),
      maxQueries: config.visibility.probeQueries,
      backoff: config.visibility.backoff,
      listener: 'outside',
    });

    // One limiter for both listeners: a client address's failed logins count wherever they happen.
    const limiter = new LoginLimiter({
      ...config.login,
      log: (fields, msg) => log.warn(fields, msg),
      onFailure: (kind) => metrics.loginFailure(kind),
    });
    const labels = { database: database.label, ovh: endpoint.label };
    const http = await startApiPort(ctx, {
      listen: config.listen,
      corsOrigins: config.corsOrigins,
      timeouts: httpTimeouts(config),
      limits: config.http.limits,
      shutdownTimeoutMs: config.shutdownTimeoutMs,
      ovhApiRate: { perSecond: config.ovhApi.rate, burst: config.ovhApi.burst },
      labels,
      loginLimiter: limiter,
      log,
      readyNotes: schema.state === 'older' ? () => [schema.message] : undefined,
    });
    log.info({ url: http.url, console: `${http.url}/ui/`, ...labels }, 'dnsplane is serving Connect, gRPC and gRPC-Web, and the admin console at /ui/');
    let webhook: WebhookListener | undefined;
    if (config.webhookListen) {
      webhook = await startCentralWebhook(ctx, {
        listen: config.webhookListen,
        log,
        registry: metrics.registry,
        shutdownTimeoutMs: config.shutdownTimeoutMs,
        loginLimiter: limiter,
        timeouts: httpTimeouts(config),
        limits: config.http.limits,
      }).catch(async (e: unknown) => {
        await http.close();
        throw e;
      });
    }
    let dns: DnsListener | undefined;
    if (config.dnsListen) {
      const door = (listen: { host: string; port: number }) =>
        startDnsDoor(ctx, { listen, log, keyring: parts.dnsKeyring ?? tsigKeyring(ctx), registry: metrics.registry, unsignedRate: { perSecond: config.dnsRate }, updateWait: { maxMs: config.dnsUpdateWaitMs, clientTimeoutMs: config.dnsClientTimeoutMs } });
      const dnsListen = config.dnsListen;
      dns = await (dnsListen === 'demo' ? onKeptPort(path.join(config.dataDir, DNS_DOOR_PORT_FILE), (port) => door({ host: '127.0.0.1', port }), (d) => d.port, log, 'the DNS door port') : door(dnsListen)).catch(async (e: unknown) => {
        await Promise.all([http.close(), webhook?.close()]);
        throw e;
      });
      log.info({ host: dns.host, port: dns.port }, 'DNS door: UPDATE with TSIG, queries and AXFR over UDP and TCP');
    }
    // Changes made in OVH outside dnsplane reach the cache within one interval (core/drift.ts).
    const drift: DriftLoop | undefined = config.driftIntervalMs > 0 ? startDriftLoop(ctx, config.driftIntervalMs) : undefined;
    // The served OVH API's staged writes past DNSPLANE_OVH_API_DRAFT_TTL are dropped (core/staging.ts).
    const drafts = startDraftSweep(ctx);
    return {
      url: http.url,
      port: http.port,
      ctx,
      metrics,
      database,
      simulator,
      databaseLabel: labels.database,
      ovhLabel: labels.ovh,
      webhookUrl: webhook?.url,
      ...(dns ? { dns: { host: dns.host, port: dns.port } } : {}),
      /**
       * Bounded shutdown within DNSPLANE_SHUTDOWN_TIMEOUT (core/lifecycle.ts): stop accepting; applies
       * under way finish, or stop in time to roll back and answer Unavailable; wait for every tracked
       * task (applies, background recoveries) before the pools end, so nothing uses a pool after it.
       */
      async close() {
        const started = performance.now();
        const budget = config.shutdownTimeoutMs * 0.9;
        const left = () => Math.max(0, budget - (performance.now() - started));
        lifecycle.beginShutdown(config.shutdownTimeoutMs);
        drafts.stop();
        await Promise.all([webhook?.close(left()), http.close(left()), dns?.close(left()), drift ? Promise.race([drift.stop(), sleep(left())]) : undefined]);
        if (!(await lifecycle.settled(left()))) {
          log.error('shutdown: work was still running at the deadline; its journal rows stay in flight and the zone\'s next lock holder rolls them back');
        }
        await prober?.stop();
        await simulator?.stop();
        await listener?.stop();
        await journalPool?.end();
        ovhBudget?.close();
        await budgetPool?.end();
        await database.close();
        metrics.stop();
        log.info({ ms: Math.round(performance.now() - started) }, 'stopped');
      },
    };
  } catch (e) {
    await prober?.stop().catch(() => undefined);
    await simulator?.stop().catch(() => undefined);
    await listener?.stop().catch(() => undefined);
    await journalPool?.end().catch(() => undefined);
    ovhBudget?.close();
    await budgetPool?.end().catch(() => undefined);
    await database.close().catch(() => undefined);
    throw e;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
}

/** DNSPLANE_HEADERS_TIMEOUT, _REQUEST_TIMEOUT and _IDLE_TIMEOUT, as the HTTP front takes them. */
function httpTimeouts(config: Config) {
  return { headersMs: config.http.headersTimeoutMs, requestMs: config.http.requestTimeoutMs, idleMs: config.http.idleTimeoutMs };
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
