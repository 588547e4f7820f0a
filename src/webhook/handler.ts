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
 *
 * The pieces: http.ts (which requests are served, the body, the Reply), encode.ts (GET /records's
 * bytes), apply.ts (POST /records); here the routes, the deadline, the log line and the status of an
 * error.
 */
import type http from 'node:http';
import type { Logger } from 'pino';
import { WebhookError, type WebhookBackend, type WebhookSession } from './backend.js';
import type { JsonValue } from './json.js';
import type { WebhookMetrics, WebhookRoute } from './metrics.js';
import type { LoginLimiter } from '../core/tenants/login-limiter.js';
import { clientAddress } from '../net/client-address.js';
import { Slicer } from '../core/slices.js';
import { adjustEndpointsSteps, domainFilterOf, type TenantScope } from './normalize.js';
import { decodeChangesSteps, decodeEndpointListSteps, encodeDomainFilter, encodeEndpointJson, joinEndpointList, WireFormatError } from './protocol.js';
import { messageOf } from '../lib/error-message.js';
import { HttpError, mediaReply, parseBody, readWebhookBody, refuseUnserved, TEXT_TYPE, webhookRouteOf, type Reply } from './http.js';
import { endpointListBody, webhookView } from './encode.js';
import { applyChanges } from './apply.js';

export const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;
export const DEFAULT_MAX_ENDPOINTS = 50_000;
/** Under external-dns's default client timeout (5 s read + 10 s write). */
export const DEFAULT_DEADLINE_MS = 10_000;

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

/** The options with their defaults filled in. */
type Settings = Required<Pick<WebhookHandlerOptions, 'maxBodyBytes' | 'maxEndpoints' | 'deadlineMs'>> & WebhookHandlerOptions;

/** Adds fields to the request's log line. */
type Note = (fields: Record<string, unknown>) => void;

/** What a protocol route is given once the request is let in. */
interface Admitted {
  session: WebhookSession;
  scope: TenantScope;
  /** The POST body's JSON (null on GET). */
  body: JsonValue | null;
  /** Bodies of up to 16 MB and 50,000 endpoints: read, decoded, normalized and written in slices. */
  slicer: Slicer;
  note: Note;
}

/**
 * The caller's session, through the login limiter: 429 once its address (the client's, behind a
 * trusted proxy) failed too often — unless the credential is one the backend knows to be valid.
 */
async function authenticate(req: http.IncomingMessage, backend: WebhookBackend, limiter: LoginLimiter | undefined): Promise<WebhookSession> {
  const authorization = req.headers.authorization;
  // Read, and its secret hashed, once for the token cache and the limiter.
  const credential = backend.credential?.(authorization) ?? { authorization };
  const address = clientAddress(req);
  if (!limiter) return backend.session(credential, address);
  // The limiter knows credentials by their hash, never as sent.
  const key = credential.hashHex;
  const wait = backend.knows?.(credential) ? undefined : limiter.check(address, key);
  if (wait !== undefined) {
    throw new HttpError(429, `too many failed logins from ${address}; try again in ${wait} s`, { 'retry-after': String(wait), connection: 'close' });
  }
  let session: WebhookSession;
  try {
    session = await backend.session(credential, address);
  } catch (e) {
    if (e instanceof WebhookError && e.status === 401) limiter.failed(address, key);
    throw e;
  }
  if (key) limiter.succeeded(key);
  return session;
}

/** POST /adjustendpoints: the endpoints as dnsplane will hold them. */
async function adjust({ scope, body, slicer, note }: Admitted, s: Settings): Promise<Reply> {
  const list = await slicer.run(decodeEndpointListSteps(body));
  if (list.length > s.maxEndpoints) throw new HttpError(413, `at most ${s.maxEndpoints} endpoints per request`);
  const { endpoints, problems } = await slicer.run(adjustEndpointsSteps(list, scope));
  if (s.log.isLevelEnabled('debug')) {
    for (const p of problems)
      s.log.debug({ tenant: scope.tenant, webhook: 'adjust', index: p.index, reason: p.reason }, 'endpoint left as sent: POST /records will refuse it');
  }
  note({ endpoints: endpoints.length, unadjusted: problems.length });
  return mediaReply(joinEndpointList(await slicer.map(endpoints, encodeEndpointJson)));
}

/** POST /records: the change set checked for size, then applied (apply.ts). */
async function apply({ session, scope, body, slicer }: Admitted, s: Settings): Promise<Reply> {
  const wire = await slicer.run(decodeChangesSteps(body));
  const n = wire.create.length + wire.updateOld.length + wire.updateNew.length + wire.delete.length;
  if (n > s.maxEndpoints) throw new HttpError(413, `at most ${s.maxEndpoints} endpoints per change set (got ${n})`);
  return applyChanges(session, scope, wire, slicer, s);
}

/** A protocol request: refused if unserved, authenticated, its body read, then its route's answer. */
async function serve(req: http.IncomingMessage, route: WebhookRoute, path: string, note: Note, s: Settings): Promise<Reply> {
  const method = req.method ?? 'GET';
  refuseUnserved(req, method, path);
  const session = await authenticate(req, s.backend, s.loginLimiter);
  const scope = await session.scope();
  note({ tenant: scope.tenant, client: clientAddress(req) });
  const text = method === 'POST' ? await readWebhookBody(req, s.maxBodyBytes) : null;
  const slicer = new Slicer();
  const admitted: Admitted = { session, scope, body: text === null ? null : await parseBody(text, slicer), slicer, note };

  switch (route) {
    case 'negotiate':
      // Vary: external-dns up to v0.14 checked it; v0.22 checks only the Content-Type.
      return mediaReply(encodeDomainFilter(domainFilterOf(scope)), { vary: 'Content-Type' });
    case 'records': {
      // A name's TXT, SPF, DKIM and DMARC sets are one TXT set to external-dns, as to resolvers.
      const endpoints = webhookView(await session.records());
      note({ endpoints: endpoints.length });
      return mediaReply(await endpointListBody(endpoints));
    }
    case 'adjust':
      return adjust(admitted, s);
    case 'apply':
      return apply(admitted, s);
    default:
      throw new HttpError(404, `no such path: ${path}`);
  }
}

/** An error as the answer: the handler's own status, 400 for a bad message, the backend's, or 500. */
function errorReply(e: unknown, route: WebhookRoute, s: Settings): Reply {
  const text = (status: number, message: string, headers: Record<string, string> = {}): Reply => ({
    status,
    headers: { 'content-type': TEXT_TYPE, ...headers },
    body: `${message}\n`,
    log: { error: message, ...(typeof e === 'object' && e !== null ? ((e as { summary?: Record<string, unknown> }).summary ?? {}) : {}) },
  });
  if (e instanceof HttpError) return text(e.status, e.message, e.headers);
  if (e instanceof WireFormatError) return text(400, `not an external-dns message: ${e.message}`);
  if (e instanceof WebhookError) {
    return text(e.status, e.message, e.status === 401 && s.backend.mode === 'central' ? { 'www-authenticate': 'Basic realm="dnsplane"' } : {});
  }
  s.log.error({ webhook: route, err: messageOf(e), stack: e instanceof Error ? e.stack : undefined }, 'webhook request failed unexpectedly');
  return text(500, 'internal error');
}

/** The request's one log line, at the level its outcome deserves. */
function logRequest(log: Logger, route: WebhookRoute, status: number, line: Record<string, unknown>): void {
  if (status >= 500) log.warn(line, 'webhook request failed');
  // Failed logins go to the login limiter's summary (one warn line per interval), not a line each.
  else if (status === 401 || status === 429) log.debug(line, 'webhook request');
  else if (route === 'apply' || status >= 400) log.info(line, 'webhook request');
  else log.debug(line, 'webhook request');
}

export function webhookHandler(opts: WebhookHandlerOptions): (req: http.IncomingMessage, res: http.ServerResponse) => void {
  const s: Settings = {
    ...opts,
    maxBodyBytes: opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    maxEndpoints: opts.maxEndpoints ?? DEFAULT_MAX_ENDPOINTS,
    deadlineMs: opts.deadlineMs ?? DEFAULT_DEADLINE_MS,
  };
  const { log, metrics, deadlineMs } = s;

  return (req, res) => {
    const started = performance.now();
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const method = req.method ?? 'GET';
    const route = webhookRouteOf(method, path);
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
      logRequest(log, route, r.status, line);
      if (res.destroyed) return;
      res.writeHead(r.status, r.headers ?? {});
      res.end(r.body);
    };

    if (path === '/healthz' && (method === 'GET' || method === 'HEAD')) {
      res.writeHead(200, { 'content-type': TEXT_TYPE });
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

    const work = serve(req, route, path, (f) => Object.assign(fields, f), s).then(send, (e: unknown) => send(errorReply(e, route, s)));
    const timer = setTimeout(() => {
      if (sent) return;
      send({
        status: 503,
        headers: { 'content-type': TEXT_TYPE, 'retry-after': '60' },
        body: `not done within ${deadlineMs} ms; the work goes on, and the next loop will find it\n`,
        log: { deadline: true },
      });
      // Drain what is left of the body, if anything, so that the connection can be reused.
      req.resume();
    }, deadlineMs);
    void work.finally(() => clearTimeout(timer));
  };
}
