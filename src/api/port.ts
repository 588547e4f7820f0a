/**
 * The API port (DNSPLANE_LISTEN): Connect, gRPC and gRPC-Web over HTTP/1.1 and h2c behind the HTTP
 * front (api/front/), and beside them /healthz, /readyz, /metrics, the admin console at /ui/ and the
 * OVH API served per tenant at /ovh/1.0 (src/ovhapi).
 *
 * Our RPCs pass the gate (login limiter, token: api/gate.ts) before their body is read; Records and
 * Plan in Connect JSON over HTTP/1.1 have routes of their own (api/records-json.ts, api/plan-json.ts);
 * all else goes to Connect (api/http.ts). A body over READ_MAX_BYTES is refused as Connect refuses it
 * (resource_exhausted naming readMaxBytes), before it is sent when its length is announced — but
 * under /ovh/1.0, where the served API answers OVH's 413 (its own limit is lower).
 */
import http from 'node:http';
import { Code, ConnectError } from '@connectrpc/connect';
import type { Logger } from 'pino';
import type { CoreContext } from '../core/context.js';
import type { LoginLimiter } from '../core/tenants/login-limiter.js';
import { describeSettling, settlingZones } from '../core/zones/settling.js';
import { messageOf } from '../lib/error-message.js';
import { isOvhApiPath, ovhApiHandler } from '../ovhapi/index.js';
import * as store from '../store/index.js';
import { consoleHandler } from '../ui/static.js';
import { answerError } from './early-answer.js';
import { startFront, type ConnectionLimits, type Front, type FrontRequest, type FrontResponse, type ProxyTrust, type Timeouts } from './front/index.js';
import { preAuthenticated, rpcGate } from './gate.js';
import { apiHandler, corsHeaders } from './http.js';
import { isPlanJson, planJsonRoute } from './plan-json.js';
import { isRecordsJson, recordsJsonRoute } from './records-json.js';
import { importTxtFormat, importTxtRoute } from './import-txt-route.js';
import { PROCEDURES, registerServices, rpcInterceptors } from './services.js';

/** The largest request body the API reads (Connect's readMaxBytes). */
export const READ_MAX_BYTES = 8 * 1024 * 1024;
/** /readyz gives the database this long to answer. */
const READY_PING_MS = 1_500;

/**
 * The front times every answer (onAnswered) and the port counts it in dnsplane_rpc_duration_seconds,
 * by the procedure its path names, unless the response is marked as no RPC: health, metrics, the
 * console, the served OVH API, a body refused before it was read. The rare answers carry the mark, so
 * that an RPC's response object gains no property (a property added per request reallocates the
 * object's property store: garbage on every poll).
 */
const kNotRpc = Symbol('dnsplane.notRpc');
type Marked = { [kNotRpc]?: true };

/** The procedure label of an RPC's path: the path when it is one of ours, else 'unknown'. */
function procedureOf(url: string): string {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  return PROCEDURES.has(path) ? path : 'unknown';
}

export interface ApiPortOptions {
  listen: { host: string; port: number };
  corsOrigins: string[];
  timeouts: Timeouts;
  limits: ConnectionLimits;
  shutdownTimeoutMs: number;
  /** The served OVH API's rate per tenant. */
  ovhApiRate: { perSecond: number; burst: number };
  /** Which database and OVH endpoint, for /readyz's log lines. */
  labels: { database: string; ovh: string };
  /** Failed logins per client address, shared with the webhook port. */
  loginLimiter: LoginLimiter;
  /** DNSPLANE_TRUSTED_PROXIES: whose word on the client's address is believed. */
  proxies?: ProxyTrust;
  /** Lines /readyz adds under `ready` (e.g. this replica is older than the schema). */
  readyNotes?: () => string[];
  log: Logger;
}

export async function startApiPort(ctx: CoreContext, opts: ApiPortOptions): Promise<Front> {
  const { log, labels, loginLimiter: limiter } = opts;
  const recordsJson = recordsJsonRoute(ctx, log, READ_MAX_BYTES);
  const planJson = planJsonRoute(ctx, log, READ_MAX_BYTES);
  const importTxt = importTxtRoute(ctx, log, READ_MAX_BYTES);
  let ready = true;
  let lastReady: boolean | undefined;
  const stopping = new AbortController();
  /** undefined when ready, else why not: /readyz and grpc.health.v1 answer from this. */
  const readiness = async (): Promise<string | undefined> => {
    if (!ready) return 'shutting down';
    // A fresh answer each time: not ready while the database is unreachable, ready as soon as it answers.
    return withTimeout(store.ping(ctx.pool), READY_PING_MS, `no answer within ${READY_PING_MS} ms`).then(
      () => undefined,
      (e: unknown) => `database unavailable: ${messageOf(e)}`,
    );
  };
  const rpc = apiHandler({
    routes: (router) => registerServices(router, ctx),
    interceptors: rpcInterceptors(ctx, log),
    readMaxBytes: READ_MAX_BYTES,
    corsOrigins: opts.corsOrigins,
    health: { readiness, stopping: stopping.signal },
    log,
    contextValues: preAuthenticated,
  });
  const ui = consoleHandler();
  const gate = rpcGate(ctx, limiter, log);
  const cors = corsHeaders(opts.corsOrigins);
  const ovhApi = ovhApiHandler(ctx, { log, loginLimiter: limiter, rate: opts.ovhApiRate });

  const handler = (req: FrontRequest, res: FrontResponse): void => {
    const url = req.url ?? '/';
    if (servedApart(req, res, url)) {
      (res as Marked)[kNotRpc] = true;
      return;
    }
    const procedure = procedureOf(url);
    // Health, reflection, CORS preflights and unknown paths need no token; only our RPCs do. (The
    // callback inline, not a named closure: tsx's keepNames would define a name property on it per request.)
    if (req.method !== 'OPTIONS' && procedure !== 'unknown') {
      cors(req, res);
      gate(req, res, () => route(req, res));
    } else route(req, res);
  };
  /** What the port answers beside the RPCs (health, the console, metrics, readiness, the served OVH API): true when it took the request. */
  const servedApart = (req: FrontRequest, res: FrontResponse, url: string): boolean => {
    if (url === '/healthz') {
      plain(res, 200, 'ok\n');
      return true;
    }
    if (url === '/ui' || url.startsWith('/ui/') || url.startsWith('/ui?')) {
      ui(req, res);
      return true;
    }
    if (url === '/metrics' && ctx.metrics) {
      ctx.metrics.render().then(
        ({ contentType, body }) => {
          (res as http.ServerResponse).writeHead(200, { 'content-type': contentType });
          (res as http.ServerResponse).end(body);
        },
        (e: unknown) => {
          log.error({ err: messageOf(e) }, 'metrics collection failed');
          plain(res, 500, 'metrics collection failed\n');
        },
      );
      return true;
    }
    if (url === '/readyz') {
      void readiness().then((reason) => {
        // Logged when the answer changes (not at every probe), with which database and OVH endpoint.
        if (reason === undefined && lastReady !== true) log.info(labels, '/readyz: ready');
        if (reason !== undefined && lastReady !== false) log.warn({ ...labels, reason }, `/readyz: ${reason}`);
        lastReady = reason === undefined;
        // Ready while zones settle (only they are busy), and the body says which; and what else the
        // operator should know (this replica older than the schema).
        if (reason === undefined) plain(res, 200, `${['ready', ...settlingZones(ctx).map(describeSettling), ...(opts.readyNotes?.() ?? [])].join('\n')}\n`);
        else plain(res, 503, `${reason}\n`);
      });
      return true;
    }
    // The OVH API served per tenant (src/ovhapi/): its own signature, answers and metrics.
    if (isOvhApiPath(url)) {
      ovhApi(req, res);
      return true;
    }
    return false;
  };
  /**
   * Records and Plan in Connect's unary JSON, ImportTxtRegistry in its unary JSON or binary, answered beside
   * Connect (records-json.ts, plan-json.ts, import-txt-route.ts); everything else by Connect.
   */
  const route = (req: FrontRequest, res: FrontResponse): void => {
    if (req instanceof http.IncomingMessage && isRecordsJson(req)) recordsJson(req, res as http.ServerResponse);
    else if (req instanceof http.IncomingMessage && isPlanJson(req)) planJson(req, res as http.ServerResponse);
    else if (req instanceof http.IncomingMessage && importTxtFormat(req)) importTxt(req, res as http.ServerResponse);
    else rpc(req, res);
  };

  const front = await startFront({
    name: 'api',
    listen: opts.listen,
    h2c: true,
    ...(opts.proxies ? { proxies: opts.proxies } : {}),
    handler,
    timeouts: opts.timeouts,
    limits: opts.limits,
    bodyLimit: {
      maxBytes: READ_MAX_BYTES,
      refuse(req, res) {
        (res as Marked)[kNotRpc] = true; // refused before the handler: not timed as an RPC
        // Under /ovh/1.0 every answer is OVH's: the served API answers its own 413 at once, the body unread.
        if (isOvhApiPath(req.url ?? '/')) return ovhApi(req, res);
        cors(req, res);
        const error = new ConnectError(
          `message size ${String(req.headers['content-length'])} is larger than configured readMaxBytes ${READ_MAX_BYTES}`,
          Code.ResourceExhausted,
        );
        answerError(req, res, error, { bodyUnread: true });
      },
    },
    log,
    registry: ctx.metrics?.registry,
    shutdownTimeoutMs: opts.shutdownTimeoutMs,
    onAnswered: (req, res, seconds) => {
      if ((res as Marked)[kNotRpc] !== true) ctx.metrics?.rpcDone(procedureOf(req.url ?? '/'), seconds);
    },
  });
  return {
    ...front,
    async close(maxMs?: number) {
      ready = false;
      stopping.abort(); // health watchers get NOT_SERVING and their streams end
      await front.close(maxMs);
      limiter.close();
    },
  };
}

function withTimeout<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message)), ms)))]).finally(() => clearTimeout(timer));
}

function plain(res: FrontResponse, status: number, body: string): void {
  (res as http.ServerResponse).writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
  (res as http.ServerResponse).end(body);
}
