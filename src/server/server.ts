/**
 * The composition root: builds store, OVH client (or the in-process simulator) and core, starts the
 * ports (the API: api/port.ts; the webhook; the DNS door) and the background loops, and stops
 * gracefully. Both HTTP ports stand behind the one HTTP front (api/front/).
 */
import pretty from 'pino-pretty';
import pino, { type Logger } from 'pino';
import type { Config } from '../config/config.js';
import { recoverZone } from '../core/apply/index.js';
import { settleAtStart } from '../core/zones/settling.js';
import { startDriftLoop, type DriftLoop } from '../core/drift/drift.js';
import type { CoreContext } from '../core/context.js';
import { tsigKeyring, type TsigKeyring } from '../core/keys/tsig.js';
import { registerZones } from '../core/zones/zones.js';
import { LoginLimiter } from '../core/tenants/login-limiter.js';
import { TrustedProxies } from '../net/address.js';
import type { Metrics } from '../metrics/metrics.js';
import type { OvhSimulator } from '../ovhsim/index.js';
import { DEMO_ZONE, DNS_DOOR_PORT_FILE, onKeptPort } from '../demo/demo.js';
import { coreContextOf, instanceName, metricsOf, ovhClientOf, ovhTargetOf, readyDatabase, releaseOpened, type Opened } from './start-core.js';
import { startDnsDoor, type DnsListener } from '../dnsserver/index.js';
import path from 'node:path';
import { InvalidInputError } from '../dns/errors.js';
import * as store from '../store/index.js';
import { startCentralWebhook, type WebhookListener } from '../webhook/index.js';
import { startDraftSweep } from '../core/ovh-api/staging.js';
import { startApiPort } from '../api/port.js';
import { Prober } from '../core/probe/prober.js';
import { DEFAULT_HEALTH, HealthChecker, leaseFor } from '../core/health/checker.js';
import { coreWithdrawals } from '../core/health/mechanism.js';
import { Liveness, startSilentWatch } from '../core/withdrawals/liveness.js';
import { ServerDirectory } from '../core/probe/servers.js';
import { ORPHAN_SILENT_MS } from '../core/admin/orphans.js';

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
  /** The health checker (core/health/); absent when DNSPLANE_HEALTH_INTERVAL is off. */
  health?: HealthChecker;
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
      paths: [
        'token',
        '*.token',
        'authorization',
        '*.authorization',
        'headers.authorization',
        'applicationSecret',
        '*.applicationSecret',
        'consumerKey',
        '*.consumerKey',
        'password',
        '*.password',
        'secret',
        '*.secret',
      ],
      censor: '[redacted]',
    },
  };
  if (format === 'json') return destination ? pino(options, destination) : pino(options);
  const out = destination ?? process.stdout;
  return pino(
    options,
    pretty({
      destination: out,
      sync: true,
      colorize: Boolean((out as { isTTY?: boolean }).isTTY),
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname,service',
      singleLine: true,
    }),
  );
}

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
  const opened: Opened = {};
  try {
    const { schema, secrets } = await readyDatabase(config, log, database);
    const target = await ovhTargetOf(config, log, database, opened);
    const metrics = metricsOf(config, log, database);
    const instance = instanceName();
    const ovh = ovhClientOf(config, log, database, target, metrics, instance, opened, secrets);
    const ctx = await coreContextOf(config, log, database, ovh, metrics, secrets, instance, opened);
    const lifecycle = ctx.lifecycle;
    ctx.liveness = new Liveness(ctx, { writeEveryMs: config.lastSeenWriteMs });
    metrics.sources.lastSeen = () => store.listTenantsLastSeen(database.pool);
    metrics.sources.orphans = () => store.countOrphanedSets(database.pool, ORPHAN_SILENT_MS);
    await registerZones(ctx);
    await startRecoveryAndChecks(ctx, config, log, opened);
    const labels = { database: database.label, ovh: target.endpoint.label };
    const { http, webhook, dns } = await openDoors(ctx, metrics, config, log, parts, labels, () => [
      ...(schema.state === 'older' ? [schema.message] : []),
      // An OVH account refused, down or disabled: ready (other accounts answer), its zones named unavailable.
      ...(opened.accounts?.readyNotes() ?? []),
    ]);
    // Changes made in OVH outside dnsplane reach the cache within one interval (core/drift/drift.ts).
    const drift: DriftLoop | undefined = config.driftIntervalMs > 0 ? startDriftLoop(ctx, config.driftIntervalMs) : undefined;
    // The served OVH API's staged writes past DNSPLANE_OVH_API_DRAFT_TTL are dropped (core/ovh-api/staging.ts).
    const drafts = startDraftSweep(ctx);
    // Tenants silent past their withdraw_after: their targets of shared sets withdrawn (core/withdrawals/liveness.ts).
    const silent = config.silentCheckMs > 0 ? startSilentWatch(ctx, config.silentCheckMs) : undefined;
    return {
      url: http.url,
      port: http.port,
      ctx,
      metrics,
      database,
      simulator: opened.simulator,
      databaseLabel: labels.database,
      ovhLabel: labels.ovh,
      webhookUrl: webhook?.url,
      ...(dns ? { dns: { host: dns.host, port: dns.port } } : {}),
      ...(opened.health ? { health: opened.health } : {}),
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
        await Promise.all([
          webhook?.close(left()),
          http.close(left()),
          dns?.close(left()),
          drift ? Promise.race([drift.stop(), sleep(left())]) : undefined,
          silent ? Promise.race([silent.stop(), sleep(left())]) : undefined,
        ]);
        if (!(await lifecycle.settled(left()))) {
          log.error("shutdown: work was still running at the deadline; its journal rows stay in flight and the zone's next lock holder rolls them back");
        }
        await opened.prober?.stop();
        await opened.health?.stop();
        await opened.simulator?.stop();
        await opened.listener?.stop();
        await opened.journalPool?.end();
        opened.ovhBudget?.close();
        opened.accounts?.close();
        await opened.budgetPool?.end();
        await database.close();
        metrics.stop();
        log.info({ ms: Math.round(performance.now() - started) }, 'stopped');
      },
    };
  } catch (e) {
    await releaseOpened(opened, database);
    throw e;
  }
}

/**
 * What runs beside the doors from the start: applies that died in flight rolled back in the
 * background (core/zones/settling.ts), the prober, and the health checker (started into opened).
 */
async function startRecoveryAndChecks(ctx: CoreContext, config: Config, log: Logger, opened: Opened): Promise<void> {
  // Applies that died in flight are rolled back in the background (core/zones/settling.ts): each waits out
  // its dead holder's lease (up to ~30 s) holding its zone's lock, and nothing else waits for it.
  const settling = await settleAtStart(ctx, recoverZone);
  if (settling.zones.length > 0) {
    log.warn({ zones: settling.zones }, 'zones with applies that died in flight: settling them in the background; only these zones wait');
    void settling.done.then((recovered) => log.warn({ zones: settling.zones, recovered }, 'recovered applies that died in flight'));
  }
  // Each publish proved on the zone's authoritative servers (core/probe/): DNSPLANE_AUTHORITATIVE_SERVERS,
  // else each zone's name servers from OVH (the demo's simulator's by their ports).
  const simulator = opened.simulator;
  const known = simulator ? new Map(simulator.dnsServers.map((s) => [s.name, { host: s.host, port: s.port }])) : undefined;
  opened.prober = await Prober.start(ctx, {
    directory: new ServerDirectory(ctx, { fixed: config.visibility.authoritativeServers, known }),
    maxQueries: config.visibility.probeQueries,
    backoff: config.visibility.backoff,
    listener: 'outside',
  });

  // Health checks per target (core/health/, docs/failover.md): withdrawals through core/withdrawals/withdrawals.ts.
  if (config.health.intervalMs > 0) {
    opened.health = HealthChecker.start(ctx, {
      settings: { ...DEFAULT_HEALTH, ...config.health, leaseMs: leaseFor(config.health.intervalMs) },
      withdrawals: coreWithdrawals(ctx),
    });
  }
}

/**
 * The doors: the API port (Connect, gRPC, gRPC-Web, the console, the served OVH API), the central
 * webhook and the DNS door, each when configured; one that fails to open closes those already open.
 */
async function openDoors(
  ctx: CoreContext,
  metrics: Metrics,
  config: Config,
  log: Logger,
  parts: ServerParts,
  labels: { database: string; ovh: string },
  readyNotes: (() => string[]) | undefined,
) {
  // One limiter for both listeners: a client address's failed logins count wherever they happen.
  const limiter = new LoginLimiter({
    ...config.login,
    log: (fields, msg) => log.warn(fields, msg),
    onFailure: (kind) => metrics.loginFailure(kind),
  });
  const proxies = { trusted: new TrustedProxies(config.http.trustedProxies), header: config.http.clientAddressHeader };
  if (!proxies.trusted.empty)
    log.info(
      { trustedProxies: config.http.trustedProxies, header: proxies.header },
      'client addresses: from the PROXY protocol or the header of these proxies',
    );
  const http = await startApiPort(ctx, {
    listen: config.listen,
    proxies,
    corsOrigins: config.corsOrigins,
    timeouts: httpTimeouts(config),
    limits: config.http.limits,
    shutdownTimeoutMs: config.shutdownTimeoutMs,
    ovhApiRate: { perSecond: config.ovhApi.rate, burst: config.ovhApi.burst },
    labels,
    loginLimiter: limiter,
    log,
    readyNotes,
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
      proxies,
    }).catch(async (e: unknown) => {
      await http.close();
      throw e;
    });
  }
  let dns: DnsListener | undefined;
  if (config.dnsListen) {
    const door = (listen: { host: string; port: number }) =>
      startDnsDoor(ctx, {
        listen,
        log,
        keyring: parts.dnsKeyring ?? tsigKeyring(ctx),
        registry: metrics.registry,
        unsignedRate: { perSecond: config.dnsRate },
        updateRate: config.dnsUpdateRate,
        updateWait: { maxMs: config.dnsUpdateWaitMs, clientTimeoutMs: config.dnsClientTimeoutMs },
      });
    const dnsListen = config.dnsListen;
    dns = await (dnsListen === 'demo'
      ? onKeptPort(
          path.join(config.dataDir, DNS_DOOR_PORT_FILE),
          (port) => door({ host: '127.0.0.1', port }),
          (d) => d.port,
          log,
          'the DNS door port',
        )
      : door(dnsListen)
    ).catch(async (e: unknown) => {
      await Promise.all([http.close(), webhook?.close()]);
      throw e;
    });
    log.info({ host: dns.host, port: dns.port }, 'DNS door: UPDATE with TSIG, queries and AXFR over UDP and TCP');
  }
  return { http, webhook, dns };
}

function sleep(ms: number): Promise<void> {
  return new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
}

/** DNSPLANE_HEADERS_TIMEOUT, _REQUEST_TIMEOUT and _IDLE_TIMEOUT, as the HTTP front takes them. */
function httpTimeouts(config: Config) {
  return { headersMs: config.http.headersTimeoutMs, requestMs: config.http.requestTimeoutMs, idleMs: config.http.idleTimeoutMs };
}
