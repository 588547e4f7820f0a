/**
 * The composition root: builds store, OVH client (or the in-process simulator), core and the API,
 * serves Connect, gRPC and gRPC-Web on one port over HTTP/1.1 and h2c, and stops gracefully.
 */
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import { hostname } from 'node:os';
import pino, { type Logger } from 'pino';
import type { Config } from './config.js';
import { recoverAll } from './core/apply/index.js';
import { startDriftLoop, type DriftLoop } from './core/drift.js';
import type { CoreContext } from './core/context.js';
import { Lifecycle } from './core/lifecycle.js';
import { ReadCache } from './core/read-cache.js';
import { TokenCache } from './core/tenants.js';
import { checkSealedSecrets } from './core/secrets.js';
import { TsigKeyCache, tsigKeyring, type TsigKeyring } from './core/tsig-keys.js';
import { OvhKeyCache } from './core/ovh-keys.js';
import { registerZones } from './core/zones.js';
import { ZoneService } from './gen/dnsplane/v1/zone_pb.js';
import { NsmService } from './gen/dnsplane/v1/nsm_pb.js';
import { authInterceptor } from './api/auth.js';
import { apiHandler, corsHeaders } from './api/http.js';
import { isRecordsJson, recordsJsonRoute } from './api/records-json.js';
import { isPlanJson, planJsonRoute } from './api/plan-json.js';
import { zoneService } from './api/zone-service.js';
import { adminService } from './api/admin-service.js';
import { AdminService } from './gen/dnsplane/v1/admin_pb.js';
import type { ConnectRouter, ServiceImpl } from '@connectrpc/connect';
import type { DescService } from '@bufbuild/protobuf';
import { strictInterceptor, strictJsonOptions } from './api/strict.js';
import { preAuthenticated, rpcGate } from './api/gate.js';
import { LoginLimiter } from './core/login-limiter.js';
import { nsmService } from './api/nsm-service.js';
import { Metrics } from './metrics.js';
import { PlanLimiter } from './core/plan-limit.js';
import { OvhApi } from './ovh/client.js';
import type { OvhEndpoint } from './ovh/endpoint.js';
import type { OvhSimulator } from './ovhsim/index.js';
import { checkDemoDatabase, DEMO_ZONE, DNS_DOOR_PORT_FILE, onKeptPort, secretBoxFor, startDemoSimulator } from './demo.js';
import { startDnsDoor, type DnsListener } from './dnsserver/index.js';
import path from 'node:path';
import { InvalidInputError } from './dns/errors.js';
import * as store from './store/index.js';
import { startCentralWebhook, type WebhookListener } from './webhook/index.js';
import { consoleHandler } from './ui/static.js';
import { isOvhApiPath, ovhApiHandler } from './ovhapi/index.js';
import { startDraftSweep } from './core/staging.js';
import { VisibilityWatch } from './core/visibility.js';
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

export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'dnsplane' },
    // Belt and braces: nothing should log these, and if something does they are masked.
    redact: {
      paths: ['token', '*.token', 'authorization', '*.authorization', 'headers.authorization', 'applicationSecret', '*.applicationSecret', 'consumerKey', '*.consumerKey', 'password', '*.password', 'secret', '*.secret'],
      censor: '[redacted]',
    },
  });
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
  /** Tenant changes of every replica, for the token cache. */
  let listener: store.Listener | undefined;
  let prober: Prober | undefined;
  try {
    if (config.ovh.mode === 'simulator') await checkDemoDatabase(database.pool, database.label);
    const applied = await store.migrate(database.pool);
    if (applied.applied.length) log.info({ migrations: applied.applied }, 'database migrated');
    // Secrets at rest (TSIG keys) must open with this server's key: refused here, before anything is served.
    const secrets = await secretBoxFor(config, log);
    await checkSealedSecrets(database.pool, secrets);

    let endpoint: OvhEndpoint;
    let credentials;
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
    const ovh = new OvhApi({
      endpoint,
      credentials,
      extraCaPems,
      timeoutMs: config.ovhTimeoutMs,
      ratePerSecond: config.ovhRate,
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
      { tenant: (name) => caches.forEach((c) => c.forget(name)), visibility: (id) => visibility.notify(id), probe: () => prober?.heard() },
      {
        heartbeatMs: LISTENER_HEARTBEAT_MS,
        onLost: () => {
          caches.forEach((c) => c.clear());
          log.warn('lost the LISTEN connection: tokens, TSIG keys and OVH keys are checked in Postgres until it is back');
        },
        onReconnect: () => {
          caches.forEach((c) => c.clear());
          visibility.wakeAll();
          prober?.heard();
          log.info('LISTEN connection back');
        },
        onError: (err) => log.debug({ err: err instanceof Error ? err.message : String(err) }, 'LISTEN connection error'),
      },
    );
    const ctx: CoreContext = {
      lifecycle,
      instance: `${hostname()} pid ${process.pid} ${Math.random().toString(36).slice(2, 10)}`,
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
        ovhApi: { advertise: config.ovhApi.advertise, draftTtlMs: config.ovhApi.draftTtlMs },
        visibility: { timeoutMs: config.visibility.timeoutMs, leaseMs: PROBE_LEASE_MS },
      },
      metrics,
      reads: new ReadCache(database.pool, { onZoneStatesRead: () => metrics.zoneStatesRead() }),
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
    const recovered = await recoverAll(ctx);
    if (recovered) log.warn({ recovered }, 'recovered applies that died in flight');
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
    const http = await listen(ctx, config, log, labels, limiter);
    log.info({ url: http.url, console: `${http.url}/ui/`, ...labels }, 'dnsplane is serving Connect, gRPC and gRPC-Web, and the admin console at /ui/');
    let webhook: WebhookListener | undefined;
    if (config.webhookListen) {
      webhook = await startCentralWebhook(ctx, {
        listen: config.webhookListen,
        log,
        registry: metrics.registry,
        shutdownTimeoutMs: config.shutdownTimeoutMs,
        loginLimiter: limiter,
        timeouts: { headersTimeoutMs: config.http.headersTimeoutMs, requestTimeoutMs: config.http.requestTimeoutMs },
      }).catch(async (e: unknown) => {
        await http.close();
        throw e;
      });
    }
    let dns: DnsListener | undefined;
    if (config.dnsListen) {
      const door = (listen: { host: string; port: number }) =>
        startDnsDoor(ctx, { listen, log, keyring: parts.dnsKeyring ?? tsigKeyring(ctx), registry: metrics.registry, unsignedRate: { perSecond: config.dnsRate }, updateWaitMs: config.dnsUpdateWaitMs });
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
    await database.close().catch(() => undefined);
    throw e;
  }
}

interface Listener {
  url: string;
  port: number;
  /** Stops accepting, waits up to maxMs for requests under way, then cuts every connection. */
  close(maxMs?: number): Promise<void>;
}

/** /readyz gives the database this long to answer. */
const READY_PING_MS = 1_500;

function sleep(ms: number): Promise<void> {
  return new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
}

function withTimeout<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message)), ms)))]).finally(() => clearTimeout(timer));
}

const SERVICES = [ZoneService, NsmService, AdminService];
/** The RPC paths the API serves (`/dnsplane.v1.ZoneService/Plan`, …): the only values of the procedure label. */
const PROCEDURES = new Set(SERVICES.flatMap((s) => s.methods.map((m) => `/${s.typeName}/${m.name}`)));

/**
 * Every Connect service the API serves, all behind authInterceptor. Tests build a router with this to
 * enumerate every RPC (test/e2e/authz.test.ts): a service added here is covered there.
 */
export function registerServices(router: ConnectRouter, ctx: CoreContext): ConnectRouter {
  strictService(router, ZoneService, zoneService(ctx));
  strictService(router, NsmService, nsmService(ctx));
  strictService(router, AdminService, adminService(ctx));
  return router;
}

/** Each method with its input schema's strict JSON reader (api/strict.ts). */
function strictService<S extends DescService>(router: ConnectRouter, service: S, impl: ServiceImpl<S>): void {
  for (const method of service.methods) {
    const fn = (impl as Record<string, unknown>)[method.localName];
    router.rpc(method, fn as Parameters<ConnectRouter['rpc']>[1], strictJsonOptions(method.input));
  }
}

async function listen(ctx: CoreContext, config: Config, log: Logger, labels: { database: string; ovh: string }, limiter: LoginLimiter): Promise<Listener> {
  const readMaxBytes = 8 * 1024 * 1024;
  // Records in Connect JSON over HTTP/1.1 is answered from encoded bytes, Plan read and answered in
  // slices; all else goes to Connect.
  const recordsJson = recordsJsonRoute(ctx, log, readMaxBytes);
  const planJson = planJsonRoute(ctx, log, readMaxBytes);
  let ready = true;
  let lastReady: boolean | undefined;
  const stopping = new AbortController();
  /** undefined when ready, else why not: /readyz and grpc.health.v1 answer from this. */
  const readiness = async (): Promise<string | undefined> => {
    if (!ready) return 'shutting down';
    // A fresh answer each time: not ready while the database is unreachable, ready as soon as it answers.
    return withTimeout(store.ping(ctx.pool), READY_PING_MS, `no answer within ${READY_PING_MS} ms`).then(
      () => undefined,
      (e: unknown) => `database unavailable: ${e instanceof Error ? e.message : String(e)}`,
    );
  };
  const rpc = apiHandler({
    routes: (router) => registerServices(router, ctx),
    interceptors: [authInterceptor(ctx, log), strictInterceptor()],
    readMaxBytes,
    corsOrigins: config.corsOrigins,
    health: { readiness, stopping: stopping.signal },
    log,
    contextValues: preAuthenticated,
  });
  // The admin console (src/ui): static files at /ui/, which call the API above from the browser.
  const ui = consoleHandler();
  const gate = rpcGate(ctx, limiter, log);
  const cors = corsHeaders(config.corsOrigins);
  const { headersTimeoutMs, requestTimeoutMs, idleTimeoutMs } = config.http;
  let active = 0;
  let idle: (() => void) | undefined;
  /** A request in flight until its answer closes: the shutdown waits for them. */
  const inFlight = (res: http.ServerResponse | http2.Http2ServerResponse) => {
    active++;
    res.once('close', () => {
      active--;
      if (active === 0) idle?.();
    });
  };
  const ovhApi = ovhApiHandler(ctx, { log, loginLimiter: limiter, rate: { perSecond: config.ovhApi.rate, burst: config.ovhApi.burst } });

  const handler = (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse) => {
    const url = req.url ?? '/';
    if (url === '/healthz') return plain(res, 200, 'ok\n');
    if (url === '/ui' || url.startsWith('/ui/') || url.startsWith('/ui?')) return ui(req, res);
    if (url === '/metrics' && ctx.metrics) {
      const metrics = ctx.metrics;
      metrics.render().then(
        ({ contentType, body }) => {
          (res as http.ServerResponse).writeHead(200, { 'content-type': contentType });
          (res as http.ServerResponse).end(body);
        },
        (e: unknown) => {
          log.error({ err: e instanceof Error ? e.message : String(e) }, 'metrics collection failed');
          plain(res, 500, 'metrics collection failed\n');
        },
      );
      return;
    }
    if (url === '/readyz') {
      readiness().then((reason) => {
        // Logged when the answer changes (not at every probe), with which database and OVH endpoint.
        if (reason === undefined && lastReady !== true) log.info(labels, '/readyz: ready');
        if (reason !== undefined && lastReady !== false) log.warn({ ...labels, reason }, `/readyz: ${reason}`);
        lastReady = reason === undefined;
        if (reason === undefined) plain(res, 200, 'ready\n');
        else plain(res, 503, `${reason}\n`);
      });
      return;
    }
    inFlight(res);
    // The OVH API served per tenant (src/ovhapi/): its own signature, answers and metrics.
    if (isOvhApiPath(url)) return ovhApi(req, res);
    const started = performance.now();
    const path = url.split('?', 1)[0]!;
    // Our RPCs: the only values of the procedure label, and the only paths that need a token (an
    // unknown path gets its 404 from the router).
    const ours = PROCEDURES.has(path);
    const procedure = ours ? path : 'unknown';
    res.once('finish', () => ctx.metrics?.rpcDone(procedure, (performance.now() - started) / 1000));
    if ('stream' in req) boundH2Request(req, requestTimeoutMs);
    // Records and Plan in Connect JSON over HTTP/1.1 have their own routes; all else goes to Connect.
    const route = () => {
      if (req instanceof http.IncomingMessage) {
        if (isRecordsJson(req)) return recordsJson(req, res as http.ServerResponse);
        if (isPlanJson(req)) return planJson(req, res as http.ServerResponse);
      }
      return rpc(req, res);
    };
    // Our RPCs pass the gate (limiter, token) before their body is read; health, reflection, CORS
    // preflights and unknown paths need no token.
    if (req.method !== 'OPTIONS' && ours) {
      cors(req, res);
      gate(req, res, route);
    } else route();
  };

  // HTTP/1.1 and h2c on one port: Node's h2c server cannot fall back to HTTP/1.1, so the first bytes
  // of each connection pick the server (an HTTP/2 connection starts with "PRI * HTTP/2.0").
  //
  // Slow and silent clients are bounded (DNSPLANE_HEADERS_TIMEOUT, _REQUEST_TIMEOUT, _IDLE_TIMEOUT):
  // - before its first byte, a connection has headersTimeout (here, on the raw socket);
  // - HTTP/1.1: Node's headersTimeout and requestTimeout, which Node enforces only on a server that
  //   emitted 'listening' (its connection checker starts then): h1 never listens itself, so it is
  //   told it does; keepAliveTimeout closes idle keep-alive connections;
  // - h2: a session with no stream open for idleTimeout is closed (a session waiting on a long
  //   apply is not idle), and each request must have sent its body within requestTimeout.
  const h1 = http.createServer(
    { headersTimeout: headersTimeoutMs, requestTimeout: requestTimeoutMs, connectionsCheckingInterval: Math.min(1000, headersTimeoutMs) },
    handler,
  );
  h1.keepAliveTimeout = idleTimeoutMs;
  h1.emit('listening');
  const h2 = http2.createServer(handler);
  h2.on('session', (session) => closeWhenIdle(session, idleTimeoutMs));
  const sockets = new Set<net.Socket>();
  const front = net.createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    const silent = () => socket.destroy();
    socket.setTimeout(headersTimeoutMs, silent);
    socket.once('data', (chunk) => {
      socket.setTimeout(0);
      socket.off('timeout', silent);
      socket.pause();
      socket.unshift(chunk);
      (chunk.subarray(0, 3).toString('latin1') === 'PRI' ? h2 : h1).emit('connection', socket);
      process.nextTick(() => socket.resume());
    });
  });
  await new Promise<void>((resolve, reject) => {
    front.once('error', reject);
    front.listen(config.listen.port, config.listen.host, () => resolve());
  });
  const port = (front.address() as net.AddressInfo).port;
  const host = config.listen.host.includes(':') ? `[${config.listen.host}]` : config.listen.host;
  return {
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`,
    port,
    async close(maxMs = config.shutdownTimeoutMs) {
      ready = false;
      stopping.abort(); // health watchers get NOT_SERVING and their streams end
      // Stop accepting; close() resolves only once every connection is gone, which we force below.
      const closed = new Promise<void>((resolve) => front.close(() => resolve()));
      if (active > 0) {
        log.info({ active }, 'waiting for in-flight requests');
        await Promise.race([new Promise<void>((resolve) => (idle = resolve)), sleep(maxMs)]);
      }
      for (const s of sockets) s.destroy();
      limiter.close();
      h1.close();
      h2.close();
      await closed;
    },
  };
}

/** Closes an h2 session once it has had no stream open for `idleMs`. */
function closeWhenIdle(session: http2.ServerHttp2Session, idleMs: number): void {
  let open = 0;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    timer = setTimeout(() => {
      if (!session.destroyed) session.close();
      // close() waits for open streams (there are none) and the peer; cut it if the peer lingers.
      setTimeout(() => session.destroy(), 1000).unref();
    }, idleMs);
    timer.unref();
  };
  arm();
  session.on('stream', (stream) => {
    open++;
    if (timer) clearTimeout(timer);
    timer = undefined;
    stream.once('close', () => {
      if (--open === 0 && !session.destroyed) arm();
    });
  });
  session.once('close', () => timer && clearTimeout(timer));
}

/** An h2 request must have sent its whole body within `ms` (HTTP/1.1 has Node's requestTimeout). */
function boundH2Request(req: http2.Http2ServerRequest, ms: number): void {
  if (req.complete) return;
  const timer = setTimeout(() => {
    if (!req.complete && !req.stream.destroyed) req.stream.close(http2.constants.NGHTTP2_CANCEL);
  }, ms);
  timer.unref();
  req.once('end', () => clearTimeout(timer));
  req.stream.once('close', () => clearTimeout(timer));
}

function plain(res: http.ServerResponse | http2.Http2ServerResponse, status: number, body: string): void {
  (res as http.ServerResponse).writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
  (res as http.ServerResponse).end(body);
}
