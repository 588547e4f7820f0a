/**
 * The external-dns webhook protocol over HTTP (REFERENCE.md section 4), the same for the central
 * listener and the sidecar; the backend (backend.ts) is what differs.
 *
 *   GET  /                 negotiation: 200, Content-Type exactly MEDIA_TYPE, the domain filter
 *   GET  /records          200, the tenant's record sets
 *   POST /adjustendpoints  200, the endpoints as dnsplane will hold them (normalize.ts)
 *   POST /records          one inline Apply of the change set, 204 (500 naming what was refused)
 *   GET  /healthz          200 "ok" (no credentials needed)
 *   GET  /metrics          the sidecar's own series (only with serveMetrics)
 *
 * Statuses, chosen for what external-dns does with them: on records/apply/adjust a 500-510 is a soft
 * error retried on its next loop; any other failure status, a connection error or its timeout
 * (15 s by default) makes it exit.
 * - 401: missing or wrong credentials (Basic `tenant:token` centrally; the sidecar's token refused);
 * - 503: OVH unavailable or rate limited, a zone lock not acquired, the centre unreachable, or the
 *   answer not ready within the deadline (the work goes on; the next loop finds it done);
 * - 500: any other failure (a zone apply rolled back because OVH refused an operation, a bug);
 * - 500 after the rest applied, when entries were refused: a conflict (the record set is someone
 *   else's) or an invalid entry (bad target, name outside the tenant's grant, a record set named twice)
 *   never stops the other changes: they apply, each refusal is logged (warn), counted in
 *   dnsplane_webhook_conflicts_total or dnsplane_webhook_rejected_total, and the answer is a soft error
 *   whose body names the refused changes, so that the refusal reaches the cluster: external-dns logs
 *   `Failed to do run once: … failed to apply changes with code 500`, counts it
 *   (external_dns_controller_consecutive_soft_errors) and asks again on its next loop. A 204 here hid
 *   the refusal from everyone but dnsplane's operator; a 4xx would make external-dns exit.
 * - 400/404/405/406/413/415: requests stock external-dns never sends (a body Go's decoder would refuse,
 *   an unknown path, another protocol version, a body over the limit): here an honest 4xx, which stops
 *   a client that is not external-dns or is misconfigured, is the right answer.
 */
import type http from 'node:http';
import type { Logger } from 'pino';
import { WebhookError, type WebhookBackend, type WebhookSession, type ZoneOutcome } from './backend.js';
import { JsonSyntaxError, parseJsonSteps, type JsonValue } from './json.js';
import type { WebhookMetrics, WebhookRoute } from './metrics.js';
import type { LoginLimiter } from '../core/tenants/login-limiter.js';
import { Slicer } from '../core/slices.js';
import {
  adjustEndpointsSteps,
  batches,
  batchSize,
  domainFilterOf,
  healthCheckProperties,
  prepareChangesSteps,
  toChangeSet,
  without,
  type PreparedChanges,
  type Rejection,
  type TenantScope,
} from './normalize.js';
import { recordSetKey, type ChangeAction, type Endpoint } from '../dns/types.js';
import { healthCheckOf, HEALTH_CHECK_LABEL } from '../dns/health-check.js';
import {
  decodeChangesSteps,
  decodeEndpointListSteps,
  encodeDomainFilter,
  encodeEndpointJson,
  joinEndpointList,
  MEDIA_TYPE,
  WireFormatError,
  type WireChanges,
  type WireEndpoint,
} from './protocol.js';
import { messageOf } from '../error-message.js';
import { readBodyWithin } from '../api/front/body.js';

export const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;
export const DEFAULT_MAX_ENDPOINTS = 50_000;
/** Under external-dns's default client timeout (5 s read + 10 s write). */
export const DEFAULT_DEADLINE_MS = 10_000;
/** Entries refused by the centre one at a time (beyond what was checked here) before giving up with 500. */
const MAX_CENTRAL_REFUSALS = 100;
/**
 * Refusals of one kind (invalid, conflict) logged one by one per request; the rest are counted in one
 * more line. A change set of 50,000 bad entries would otherwise write 50,000 warn lines, every loop.
 */
export const MAX_LOGGED_REFUSALS = 20;

export interface WebhookHandlerOptions {
  backend: WebhookBackend;
  log: Logger;
  metrics?: WebhookMetrics;
  /** Serve metrics.registry on /metrics (the sidecar, which has no API listener). */
  serveMetrics?: boolean;
  maxBodyBytes?: number;
  /** Endpoints in one request (all lists together). */
  maxEndpoints?: number;
  /** Past this, answer 503 and let the work finish in the background. */
  deadlineMs?: number;
  /** Failed logins per client address (central mode): 429 with Retry-After once an address failed too often. */
  loginLimiter?: LoginLimiter;
}

/** A status the handler itself decides (not the backend's). */
class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

interface Reply {
  status: number;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Fields for the request's log line. */
  log?: Record<string, unknown>;
}

const WEBHOOK_TYPE = 'application/external.dns.webhook+json';

/**
 * Whether a header asks only for other versions of the webhook media type. Anything else (absent,
 * `*`/`*`, application/json) is served: old external-dns versions send no Content-Type on POST.
 */
function otherVersionOnly(header: string | undefined): boolean {
  if (!header) return false;
  const items = header.split(',').map((s) => s.trim().toLowerCase());
  if (items.some((i) => i.startsWith('*/*'))) return false;
  const ours = items.filter((i) => i.startsWith(WEBHOOK_TYPE));
  return ours.length > 0 && !ours.some((i) => /;\s*version\s*=\s*"?1"?\s*(;|$)/.test(i));
}

/**
 * Whether a POST body announced with this Content-Type may be read as JSON: none (old external-dns
 * versions send none), application/json, the webhook media type of version 1 (or without a version),
 * or another `+json` type. Anything else (text/plain, a form) is 415: external-dns never sends it.
 */
function jsonContentType(header: string | undefined): boolean {
  if (header === undefined || header.trim() === '') return true;
  const type = header.split(';')[0]!.trim().toLowerCase();
  return type === 'application/json' || type.endsWith('+json');
}

function routeOf(method: string, path: string): WebhookRoute {
  if (path === '/') return 'negotiate';
  if (path === '/records') return method === 'POST' ? 'apply' : 'records';
  if (path === '/adjustendpoints') return 'adjust';
  return 'other';
}

const ALLOWED: Record<string, string[]> = { '/': ['GET'], '/records': ['GET', 'POST'], '/adjustendpoints': ['POST'] };

/** The body as text; past `max`, 413 with the connection closing, the rest drained (api/front/body.ts). */
async function readBody(req: http.IncomingMessage, max: number): Promise<string> {
  const tooLarge = () => new HttpError(413, `the body is over ${max} bytes`, { connection: 'close' });
  if (Number(req.headers['content-length'] ?? '0') > max) throw tooLarge();
  return (await readBodyWithin(req, max, tooLarge)).toString('utf8');
}

/** The body's JSON, read in slices (a body may be 16 MB: no request holds the event loop for it). */
async function parseBody(text: string, slicer: Slicer): Promise<JsonValue> {
  try {
    return await slicer.run(parseJsonSteps(text));
  } catch (e) {
    if (e instanceof JsonSyntaxError) throw new HttpError(400, `the body is not JSON: ${e.message}`);
    throw e;
  }
}

/** dnsplane's record sets as external-dns reads them. */
function toWire(e: { dnsName: string; recordType: string; targets: string[]; ttl: number; labels?: Record<string, string> }): WireEndpoint {
  // dnsplane's `owner` label (the owning tenant) is left out: in external-dns, `owner` is the TXT
  // registry's owner id, which the registry fills in from its TXT records; passing dnsplane's tenant
  // name under that key would make a record look owned (or not) by the wrong party. The webhook only
  // returns the tenant's own record sets anyway.
  // The check goes back as the provider-specific property it came in as (normalize.ts), not as a label.
  const labels = Object.fromEntries(Object.entries(e.labels ?? {}).filter(([k]) => k !== 'owner' && k !== HEALTH_CHECK_LABEL));
  return { dnsName: e.dnsName, targets: e.targets, recordType: e.recordType, setIdentifier: '', recordTTL: e.ttl, labels, providerSpecific: healthCheckProperties(healthCheckOf(e)) };
}

/**
 * Each endpoint's JSON, encoded once: in central mode core hands out the same endpoint objects for as
 * long as a zone's generation and the tenant's view stay the same (core/reads/read-cache.ts).
 */
const encoded = new WeakMap<object, string>();

function wireJson(e: Parameters<typeof toWire>[0]): string {
  let json = encoded.get(e);
  if (json === undefined) encoded.set(e, (json = encodeEndpointJson(toWire(e))));
  return json;
}

/**
 * Whole GET /records answers by the endpoints array they encode: the read cache hands out the same
 * array for a view as long as its generation stands, so a poll writes bytes already encoded.
 */
const listBodies = new WeakMap<readonly object[], Promise<Buffer>>();

/** The list's bytes, encoded once per view, in slices (a zone may hold 20,000 record sets). */
function endpointListBody(endpoints: readonly Parameters<typeof toWire>[0][]): Promise<Buffer> {
  let body = listBodies.get(endpoints);
  if (body === undefined) {
    // Kept as a promise: callers that miss together share one encoding.
    body = new Slicer().map(endpoints, wireJson, 256).then((elements) => Buffer.from(joinEndpointList(elements)));
    listBodies.set(endpoints, body);
    body.catch(() => listBodies.delete(endpoints));
  }
  return body;
}

/** Record set -> the list external-dns named it in ('create', 'update' for updateNew, 'delete'). */
function askedActions(p: Pick<PreparedChanges, 'creates' | 'updates' | 'deletes'>): Map<string, ChangeAction> {
  const out = new Map<string, ChangeAction>();
  const put = (e: Endpoint, action: ChangeAction) => out.set(recordSetKey(e.dnsName, e.recordType), action);
  for (const c of p.creates) put(c.endpoint, 'create');
  for (const u of p.updates) put(u.new.endpoint, 'update');
  for (const d of p.deletes) put(d.endpoint, 'delete');
  return out;
}

/**
 * The refused changes in words, for the answer's body ('' when none): the first MAX_LOGGED_REFUSALS
 * of each kind, as logged, and how many more.
 */
function refusalText(all: readonly Rejection[], conflictLines: readonly string[], conflicts: number): string {
  const rejected = all.filter((r) => !r.superseded);
  const total = rejected.length + conflicts;
  if (total === 0) return '';
  const lines = [`${total} change(s) refused; the others were applied (dnsplane's log names each refusal):`];
  for (const r of rejected.slice(0, MAX_LOGGED_REFUSALS)) lines.push(`invalid ${r.dnsName} ${r.recordType}: ${r.reason}`);
  if (rejected.length > MAX_LOGGED_REFUSALS) lines.push(`… ${rejected.length - MAX_LOGGED_REFUSALS} more invalid`);
  for (const c of conflictLines) lines.push(`conflict ${c}`);
  if (conflicts > conflictLines.length) lines.push(`… ${conflicts - conflictLines.length} more conflicts`);
  return `${lines.join('\n')}\n`;
}

function mediaReply(body: string | Buffer, extra: Record<string, string> = {}): Reply {
  return { status: 200, headers: { 'content-type': MEDIA_TYPE, ...extra }, body };
}

export function webhookHandler(opts: WebhookHandlerOptions): (req: http.IncomingMessage, res: http.ServerResponse) => void {
  const { backend, log, metrics } = opts;
  const maxBody = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const maxEndpoints = opts.maxEndpoints ?? DEFAULT_MAX_ENDPOINTS;
  const deadlineMs = opts.deadlineMs ?? DEFAULT_DEADLINE_MS;

  const overThreshold = (tenant: string, zone: string, message: string): void => {
    log.warn(
      { tenant, webhook: 'apply', zone, proceed: 'apply the change with force (dnsplane plan/apply --force), or have an admin raise the tenant\'s limit (dnsplane tenant set-max-change)' },
      message,
    );
    metrics?.thresholdRefusal(tenant, zone);
  };

  const applyChanges = async (session: WebhookSession, scope: TenantScope, wire: WireChanges, slicer: Slicer): Promise<Reply> => {
    const tenant = scope.tenant;
    const prepared = await slicer.run(prepareChangesSteps(wire, scope));
    const rejected: Rejection[] = [...prepared.rejected];
    const zones: ZoneOutcome[] = [];
    let failure: WebhookError | undefined;
    outer: for (const batch of batches(prepared)) {
      let b = batch;
      for (let refusals = 0; batchSize(b) > 0; ) {
        const { changes, origin } = toChangeSet(b);
        try {
          zones.push(...(await session.apply(changes)).zones);
          break;
        } catch (e) {
          if (!(e instanceof WebhookError)) throw e;
          // The centre refused one entry (a check this side could not make, e.g. a suffix the sidecar
          // does not know): drop it, report it, apply the rest.
          const item = e.entry && refusals < MAX_CENTRAL_REFUSALS ? origin(e.entry.list, e.entry.index) : undefined;
          if (!item) {
            failure = e;
            break outer;
          }
          const entry = 'new' in item ? item.new : item;
          const at = `${entry.list}[${entry.index}]`;
          rejected.push({ list: entry.list, index: entry.index, dnsName: entry.endpoint.dnsName, recordType: entry.endpoint.recordType, reason: e.message.replace(/changes\.\w+\[\d+\]/, at) });
          b = without(b, item);
          refusals++;
        }
      }
    }

    // One log line per refusal up to MAX_LOGGED_REFUSALS, one counter increment per label set.
    const tally = (counts: Map<string, number>, key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);
    const rejectedBy = new Map<string, number>();
    rejected.forEach((r, i) => {
      if (i < MAX_LOGGED_REFUSALS) log.warn({ tenant, webhook: 'apply', entry: `${r.list}[${r.index}]`, dnsName: r.dnsName, recordType: r.recordType, reason: r.reason }, 'webhook change refused: invalid');
      tally(rejectedBy, r.list);
    });
    for (const [list, n] of rejectedBy) metrics?.rejection(tenant, list, n);
    if (rejected.length > MAX_LOGGED_REFUSALS) {
      log.warn({ tenant, webhook: 'apply', refused: rejected.length, logged: MAX_LOGGED_REFUSALS }, `webhook changes refused: invalid, ${rejected.length - MAX_LOGGED_REFUSALS} more not logged one by one`);
    }
    // A conflict is named by what external-dns asked (its list), not by what dnsplane would have done:
    // a create of a set that exists would have been an update of it.
    const asked = askedActions(prepared);
    const conflictLines: string[] = [];
    let conflicts = 0;
    for (const z of zones) {
      const byAction = new Map<string, number>();
      for (const c of z.conflicts) {
        const action = asked.get(recordSetKey(c.endpoint.dnsName, c.endpoint.recordType)) ?? c.action;
        if (conflicts++ < MAX_LOGGED_REFUSALS) {
          log.warn(
            { tenant, webhook: 'apply', zone: z.zone, action, dnsName: c.endpoint.dnsName, recordType: c.endpoint.recordType, owner: c.owner, reason: c.reason },
            'webhook change refused: conflict',
          );
          conflictLines.push(`${action} ${c.endpoint.dnsName} ${c.endpoint.recordType}: ${c.reason}`);
        }
        tally(byAction, action);
      }
      for (const [action, n] of byAction) metrics?.conflict(tenant, z.zone, action, n);
    }
    if (conflicts > MAX_LOGGED_REFUSALS) {
      log.warn({ tenant, webhook: 'apply', refused: conflicts, logged: MAX_LOGGED_REFUSALS }, `webhook changes refused: conflict, ${conflicts - MAX_LOGGED_REFUSALS} more not logged one by one`);
    }
    const summary = {
      requested: { create: wire.create.length, updateNew: wire.updateNew.length, delete: wire.delete.length },
      zones: Object.fromEntries(zones.map((z) => [z.zone, z.status])),
      ovhCalls: zones.reduce((n, z) => n + z.calls, 0),
      conflicts: zones.reduce((n, z) => n + z.conflicts.length, 0),
      rejected: rejected.length,
      ...(prepared.unpaired.length ? { unpairedUpdateOld: prepared.unpaired.length } : {}),
    };
    if (failure) {
      if (failure.overThreshold) overThreshold(tenant, failure.zone, failure.message);
      throw Object.assign(failure, { summary });
    }
    for (const z of zones.filter((x) => x.overThreshold)) overThreshold(tenant, z.zone, z.error ?? '');
    const failed = zones.filter((z) => z.status === 'failed' || z.status === 'stale' || z.overThreshold);
    const refusals = refusalText(rejected, conflictLines, conflicts);
    if (failed.length > 0) {
      // Over the threshold is 503: external-dns retries every loop, and nothing is deleted until
      // someone forces it or raises the limit (the log line says how).
      const status = failed.some((z) => z.transient || z.overThreshold) ? 503 : 500;
      return { status, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: `${failed.map((z) => `${z.zone}: ${z.error ?? z.status}`).join('\n')}\n${refusals}`, log: summary };
    }
    // Refused entries are a soft error once the rest is applied (the module comment says why).
    if (refusals !== '') return { status: 500, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: refusals, log: summary };
    return { status: 204, log: summary };
  };

  const serve = async (req: http.IncomingMessage, route: WebhookRoute, path: string, note: (fields: Record<string, unknown>) => void): Promise<Reply> => {
    const method = req.method ?? 'GET';
    const allowed = ALLOWED[path];
    if (!allowed) throw new HttpError(404, `no such path: ${path} (the webhook serves /, /records, /adjustendpoints, /healthz)`);
    if (!allowed.includes(method)) throw new HttpError(405, `${method} ${path} is not served`, { allow: allowed.join(', ') });
    if (otherVersionOnly(req.headers.accept)) throw new HttpError(406, `this server speaks ${MEDIA_TYPE}`);
    if (method === 'POST' && (otherVersionOnly(req.headers['content-type']) || !jsonContentType(req.headers['content-type']))) {
      throw new HttpError(415, `this server reads ${MEDIA_TYPE} (a JSON body), not ${req.headers['content-type']}`);
    }

    const limiter = opts.loginLimiter;
    const address = req.socket.remoteAddress ?? 'unknown';
    const credential = req.headers.authorization;
    const wait = limiter?.check(address, credential);
    if (wait !== undefined) {
      throw new HttpError(429, `too many failed logins from ${address}; try again in ${wait} s`, { 'retry-after': String(wait), connection: 'close' });
    }
    let session: WebhookSession;
    try {
      session = await backend.session(credential);
    } catch (e) {
      if (e instanceof WebhookError && e.status === 401) limiter?.failed(address);
      throw e;
    }
    if (credential) limiter?.succeeded(address, credential);
    const scope = await session.scope();
    note({ tenant: scope.tenant });
    const text = method === 'POST' ? await readBody(req, maxBody) : null;
    // Bodies of up to 16 MB and 50,000 endpoints: read, decoded, normalized and written in slices.
    const slicer = new Slicer();
    const body = text === null ? null : await parseBody(text, slicer);

    switch (route) {
      case 'negotiate':
        // Vary: external-dns up to v0.14 checked it; v0.22 checks only the Content-Type.
        return mediaReply(encodeDomainFilter(domainFilterOf(scope)), { vary: 'Content-Type' });
      case 'records': {
        const endpoints = await session.records();
        note({ endpoints: endpoints.length });
        return mediaReply(await endpointListBody(endpoints));
      }
      case 'adjust': {
        const list = await slicer.run(decodeEndpointListSteps(body));
        if (list.length > maxEndpoints) throw new HttpError(413, `at most ${maxEndpoints} endpoints per request`);
        const { endpoints, problems } = await slicer.run(adjustEndpointsSteps(list, scope));
        if (log.isLevelEnabled('debug')) {
          for (const p of problems) log.debug({ tenant: scope.tenant, webhook: 'adjust', index: p.index, reason: p.reason }, 'endpoint left as sent: POST /records will refuse it');
        }
        note({ endpoints: endpoints.length, unadjusted: problems.length });
        return mediaReply(joinEndpointList(await slicer.map(endpoints, encodeEndpointJson)));
      }
      case 'apply': {
        const wire = await slicer.run(decodeChangesSteps(body));
        const n = wire.create.length + wire.updateOld.length + wire.updateNew.length + wire.delete.length;
        if (n > maxEndpoints) throw new HttpError(413, `at most ${maxEndpoints} endpoints per change set (got ${n})`);
        return applyChanges(session, scope, wire, slicer);
      }
      default:
        throw new HttpError(404, `no such path: ${path}`);
    }
  };

  return (req, res) => {
    const started = performance.now();
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const method = req.method ?? 'GET';
    const route = routeOf(method, path);
    const fields: Record<string, unknown> = {};
    let sent = false;

    const send = (r: Reply): void => {
      const seconds = (performance.now() - started) / 1000;
      const line = { webhook: route, method, path, status: r.status, ms: Math.round(seconds * 1000), ...fields, ...r.log };
      if (sent) {
        // The caller was answered 503 at the deadline; this is how the work ended.
        log.info({ ...line, late: true }, 'webhook request finished after its deadline');
        return;
      }
      sent = true;
      metrics?.request(route, r.status, seconds);
      if (r.status >= 500) log.warn(line, 'webhook request failed');
      // Failed logins go to the login limiter's summary (one warn line per interval), not a line each.
      else if (r.status === 401 || r.status === 429) log.debug(line, 'webhook request');
      else if (route === 'apply' || r.status >= 400) log.info(line, 'webhook request');
      else log.debug(line, 'webhook request');
      if (res.destroyed) return;
      res.writeHead(r.status, r.headers ?? {});
      res.end(r.body);
    };
    const fail = (e: unknown): Reply => {
      const text = (status: number, message: string, headers: Record<string, string> = {}): Reply => ({
        status,
        headers: { 'content-type': 'text/plain; charset=utf-8', ...headers },
        body: `${message}\n`,
        log: { error: message, ...(typeof e === 'object' && e !== null ? ((e as { summary?: Record<string, unknown> }).summary ?? {}) : {}) },
      });
      if (e instanceof HttpError) return text(e.status, e.message, e.headers);
      if (e instanceof WireFormatError) return text(400, `not an external-dns message: ${e.message}`);
      if (e instanceof WebhookError) {
        return text(e.status, e.message, e.status === 401 && backend.mode === 'central' ? { 'www-authenticate': 'Basic realm="dnsplane"' } : {});
      }
      log.error({ webhook: route, err: messageOf(e), stack: e instanceof Error ? e.stack : undefined }, 'webhook request failed unexpectedly');
      return text(500, 'internal error');
    };

    if (path === '/healthz' && (method === 'GET' || method === 'HEAD')) {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('ok\n');
      return;
    }
    if (path === '/metrics' && method === 'GET' && opts.serveMetrics && metrics) {
      metrics.registry.metrics().then(
        (body) => {
          res.writeHead(200, { 'content-type': metrics.registry.contentType });
          res.end(body);
        },
        () => send({ status: 500, body: 'metrics collection failed\n' }),
      );
      return;
    }

    const work = serve(req, route, path, (f) => Object.assign(fields, f)).then(send, (e: unknown) => send(fail(e)));
    const timer = setTimeout(() => {
      if (sent) return;
      send({
        status: 503,
        headers: { 'content-type': 'text/plain; charset=utf-8', 'retry-after': '60' },
        body: `not done within ${deadlineMs} ms; the work goes on, and the next loop will find it\n`,
        log: { deadline: true },
      });
      // Drain what is left of the body, if anything, so that the connection can be reused.
      req.resume();
    }, deadlineMs);
    void work.finally(() => clearTimeout(timer));
  };
}
