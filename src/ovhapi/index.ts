/**
 * The OVH API dnsplane serves per tenant, at /ovh/1.0 on the API port (docs/ovh-api.md): a front door
 * beside the Connect API and the external-dns webhook that speaks OVH's DNS API to the tools that know
 * only it — external-dns --provider=ovh, cert-manager-webhook-ovh, lego, Traefik, Caddy, Terraform —
 * each with a tenant's OVH-style key (core/keys/ovh.ts) instead of the account's credentials.
 *
 * A call, in OVH's order: its query id (every answer carries X-Ovh-Queryid); the body's size; the route
 * (404, 405: routes.ts); the body read; then, but for GET /auth/time, the failed-login limiter of its
 * address (core/tenants/login-limiter.ts, shared with the other doors), its signature checked as OVH checks one
 * (auth.ts), its tenant's request rate (ovhapi/tenant-rate.ts: 429 with Retry-After, as OVH); then the
 * route's answer from core — reads from the cache and the tenant's draft, no OVH call; writes staged in
 * the draft after core judged them; a refresh published as one apply (zones.ts, records.ts) — and core's
 * errors as OVH's (errors.ts). This room reaches neither store/ nor ovh/, and holds no rule of its own
 * about ownership, locking or operations: core's are the ones every door uses.
 */
import { noteSeen } from '../core/withdrawals/liveness.js';
import type { Logger } from 'pino';
import type { CoreContext } from '../core/context.js';
import type { LoginLimiter } from '../core/tenants/login-limiter.js';
import { ovhKeyring } from '../core/keys/ovh.js';
import { clientAddress } from '../net/client-address.js';
import { TenantRateLimiter } from '../lib/token-bucket.js';
import type { Tenant } from '../core/tenants/tenants.js';
import { messageOf } from '../lib/error-message.js';
import { type OvhApiError, payloadTooLarge, tooManyRequests } from '../ovhwire/errors.js';
import { AuthRefusal, authenticateCall } from './auth.js';
import { authDetails, currentCredential, me } from './credentials.js';
import { ovhAnswerFor } from './errors.js';
import { header, newQueryId, readOvhBody, send, sendError, type Answer, type Req, type Res } from './http.js';
import { OvhApiMetrics } from './metrics.js';
import { recordCall, recordsCall, type RecordCall } from './records.js';
import { servedRoute, type ServedRoute } from './routes.js';
import { refreshCall, soaCall, soaUpdateCall, statusCall, zoneCall, zonesCall } from './zones.js';
import { capabilitiesCall, exportCall, importCall, taskCall, tasksCall } from './zone-file.js';

/** Where the served API is mounted: tools sign URLs with this path in them (config/config.ts OVH_API_PATH). */
export const OVH_API_PREFIX = '/ovh/1.0';

/** The largest body taken (a record is a few hundred bytes; OVH's own limit is not published). */
export const MAX_BODY_BYTES = 64 * 1024;

export interface OvhApiOptions {
  log: Logger;
  /** DNSPLANE_OVH_API_RATE and _BURST: one tenant's calls per second, and at once. */
  rate: { perSecond: number; burst: number };
  /** The process's failed-login limiter (per client address), shared with the other doors. */
  loginLimiter?: LoginLimiter;
  maxBodyBytes?: number;
  /** Seconds of the server's clock (tests: a skewed one). */
  clock?: () => number;
}

/** Whether a request path is the served API's. */
export function isOvhApiPath(url: string): boolean {
  return url === OVH_API_PREFIX || url.startsWith(`${OVH_API_PREFIX}/`) || url.startsWith(`${OVH_API_PREFIX}?`);
}

const WRITES = new Set(['POST', 'PUT', 'DELETE']);

export function ovhApiHandler(ctx: CoreContext, opts: OvhApiOptions): (req: Req, res: Res) => void {
  const { log } = opts;
  const maxBody = opts.maxBodyBytes ?? MAX_BODY_BYTES;
  const seconds = opts.clock ?? (() => Math.floor(Date.now() / 1000));
  const rate = new TenantRateLimiter(opts.rate.perSecond, opts.rate.burst);
  const keyring = ovhKeyring(ctx);
  const metrics = ctx.metrics ? new OvhApiMetrics(ctx.metrics.registry) : undefined;

  /** The route's answer, for an authenticated call. */
  const answerFor = (route: ServedRoute, tenant: Tenant, key: Parameters<typeof me>[0], call: RecordCall): Promise<Answer> | Answer => {
    switch (route.name) {
      case 'authTime':
        return { json: seconds() };
      case 'authDetails':
        return authDetails(key);
      case 'authCredential':
        return currentCredential(key, new Date(seconds() * 1000));
      case 'me':
        return me(key);
      case 'zones':
        return zonesCall(ctx, tenant);
      case 'zone':
        return zoneCall(ctx, tenant, route.zone);
      case 'soa':
        return soaCall(ctx, tenant, route.zone);
      case 'status':
        return statusCall(ctx, tenant, route.zone);
      case 'refresh':
        return refreshCall(ctx, tenant, route.zone, log, key.applicationKey, call.from);
      case 'records':
        return recordsCall(ctx, tenant, route.zone, call);
      case 'record':
        return recordCall(ctx, tenant, route.zone, route.id, call);
      case 'export':
        return exportCall(ctx, tenant, route.zone);
      case 'import':
        return importCall(ctx, tenant, route.zone, call, key.applicationKey);
      case 'tasks':
        return tasksCall(ctx, tenant, route.zone);
      case 'task':
        return taskCall(ctx, tenant, route.zone, route.id);
      case 'capabilities':
        return capabilitiesCall(ctx, tenant, route.zone);
      case 'soaUpdate':
        return soaUpdateCall(ctx, tenant, route.zone);
    }
  };

  return (req, res) => {
    const started = performance.now();
    const queryId = newQueryId();
    const method = (req.method ?? 'GET').toUpperCase();
    const rawUrl = req.url ?? '/';
    const q = rawUrl.indexOf('?');
    const path = (q >= 0 ? rawUrl.slice(0, q) : rawUrl).slice(OVH_API_PREFIX.length) || '/';
    let routeName = 'unknown';
    let tenant: Tenant | undefined;

    const run = async (): Promise<number> => {
      if (Number(header(req, 'content-length') ?? '0') > maxBody) throw payloadTooLarge();
      const route = servedRoute(method, path);
      routeName = route.name;
      const rawBody = await readOvhBody(req, maxBody);
      if (route.name === 'authTime') return send(res, queryId, { json: seconds() });

      const address = clientAddress(req);
      const consumerKey = header(req, 'x-ovh-consumer');
      // One sha-256 of the consumer key, for the keyring (its cache key: the hash's hex) and the limiter,
      // which knows a consumer key by that hash; a key this process holds is never refused for its address.
      const consumerAt = consumerKey ? keyring.at(consumerKey) : undefined;
      const limiterKey = consumerAt?.cacheKey;
      const wait = consumerAt && keyring.cached(consumerAt) ? undefined : opts.loginLimiter?.check(address, limiterKey);
      if (wait !== undefined) throw tooManyRequests(wait, `too many failed logins from ${address}; try again in ${wait} s`);
      let key: Awaited<ReturnType<typeof authenticateCall>>;
      try {
        key = await authenticateCall(
          { method, rawUrl, host: header(req, 'host') ?? '', rawBody, header: (name) => header(req, name) },
          keyring,
          seconds(),
          consumerAt,
        );
      } catch (e) {
        if (!(e instanceof AuthRefusal)) throw e;
        if (e.failedLogin) opts.loginLimiter?.failed(address, limiterKey);
        throw e.answer;
      }
      if (limiterKey) opts.loginLimiter?.succeeded(limiterKey);
      tenant = key.tenant;
      const over = rate.take(tenant.name);
      if (over !== undefined)
        throw tooManyRequests(over, `tenant "${tenant.name}" is over ${opts.rate.perSecond} calls per second to dnsplane's OVH API; retry in ${over} s`);
      keyring.noteUsed(key);
      noteSeen(ctx, tenant, address);

      let body: unknown;
      let bodyInvalid = false;
      if (rawBody !== '') {
        try {
          body = JSON.parse(rawBody) as unknown;
        } catch {
          bodyInvalid = true;
        }
      }
      const headers: Record<string, string | undefined> = {};
      for (const name of ['x-pagination-mode', 'x-pagination-number', 'x-pagination-size']) headers[name] = header(req, name);
      const answer = await answerFor(route, tenant, key, {
        method,
        query: new URLSearchParams(q >= 0 ? rawUrl.slice(q + 1) : ''),
        headers,
        body,
        bodyInvalid,
        from: address,
      });
      return send(res, queryId, answer);
    };

    run()
      .catch((e: unknown) => {
        const { error, internal } = ovhAnswerFor(e);
        if (internal)
          log.error({ err: messageOf(e), route: routeName, method, tenant: tenant?.name, client: clientAddress(req), queryId }, 'OVH API call failed');
        else if (tenant && (WRITES.has(method) || error.status === 429) && [400, 403, 429].includes(error.status)) refusal(tenant, error);
        if (res.headersSent || res.destroyed) return 0;
        return sendError(req, res, queryId, error);
      })
      .then((status) => metrics?.done(routeName, status, (performance.now() - started) / 1000))
      .catch((e: unknown) => log.error({ err: messageOf(e), route: routeName }, 'OVH API answer failed'));

    /** Every refused write goes through here: one line (tenant, call, reason, OVH's code) and one count. */
    function refusal(t: Tenant, error: OvhApiError): void {
      const code =
        'errorCode' in error.body ? error.body.errorCode : error.status === 400 ? 'BAD_REQUEST' : error.status === 429 ? 'TOO_MANY_REQUESTS' : error.body.class;
      log.info(
        { tenant: t.name, client: clientAddress(req), method, path, status: error.status, code, reason: error.body.message, queryId },
        'OVH API call refused',
      );
      metrics?.refused(t.name, code);
    }
  };
}
