/**
 * In front of Connect, for every RPC: the token, from the token cache when it holds it (then nothing
 * else is asked: a valid token is never refused for its address), else the failed-login limiter (per
 * client address, net/client-address.ts) and then the lookup, all before Connect reads the body. A flood of bad tokens then costs a hash and one indexed lookup
 * per request (or nothing, once its address is limited), never an 8 MiB body read, and a refused
 * request is answered in its own protocol (Connect, gRPC, gRPC-Web) without reading the body
 * (api/early-answer.ts).
 *
 * The tenant found here rides to tenantInterceptor (api/auth.ts) through the context values
 * (preAuthenticated); a refusal becomes a Connect code where every other one does (api/errors.ts).
 */
import type http from 'node:http';
import type http2 from 'node:http2';
import { Code, ConnectError, createContextValues, type ContextValues } from '@connectrpc/connect';
import type { Logger } from 'pino';
import type { CoreContext } from '../core/context.js';
import type { LoginLimiter } from '../core/tenants/login-limiter.js';
import type { Tenant } from '../core/tenants/tenants.js';
import { authenticateCaller } from '../core/credentials/workload-tokens.js';
import { noteSeen } from '../core/withdrawals/liveness.js';
import { tokenHashHex } from '../core/keys/tokens.js';
import { bearerToken, kClient, kTenant } from './auth.js';
import { answerError } from './early-answer.js';
import { toConnectError } from './errors.js';
import { messageOf } from '../lib/error-message.js';
import { clientAddress } from '../net/client-address.js';

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;

/**
 * The tenant the gate found, on the request object itself: a WeakMap entry per request (a young key)
 * costs every scavenge an ephemeron to clear, at thousands of polls a second.
 */
const kAuthenticated = Symbol('dnsplane.authenticated');
type Marked = { [kAuthenticated]?: Tenant };
const authenticated = {
  get: (req: object): Tenant | undefined => (req as Marked)[kAuthenticated],
  set: (req: object, t: Tenant): void => void ((req as Marked)[kAuthenticated] = t),
};

/**
 * The caller of a route beside Connect (api/records-json.ts, api/plan-json.ts): the tenant the gate
 * authenticated for this very request; only when the gate could not ask (the database was down, it
 * then passed the request on) is it asked again, so that the route answers that failure as Connect's
 * interceptor would. The gate's tenant is handed back as is (no promise to wait for).
 */
export function requestTenant(ctx: CoreContext, req: http.IncomingMessage): Tenant | Promise<Tenant> {
  return authenticated.get(req) ?? authenticateCaller(ctx, bearerToken(req.headers.authorization ?? null));
}

/** The tenant the gate authenticated for this request, if it did (no lookup of its own). */
export function gateTenant(req: object): Tenant | undefined {
  return authenticated.get(req);
}

/** connectNodeAdapter's contextValues: the tenant the gate found for this request, if any. */
export function preAuthenticated(req: object): ContextValues {
  const values = createContextValues();
  const t = authenticated.get(req);
  if (t) values.set(kTenant, t);
  values.set(kClient, clientAddress(req));
  return values;
}

export function rpcGate(ctx: CoreContext, limiter: LoginLimiter, log: Logger): (req: Req, res: Res, next: () => void) => void {
  return (req, res, next) => {
    const header = req.headers['authorization'];
    const token = bearerToken(typeof header === 'string' ? header : null);
    // One sha-256 of the token for both the token cache and the limiter.
    const hashHex = token ? tokenHashHex(token) : undefined;
    // A token the cache holds (every enabled tenant's, core/tenants/token-warmth.ts): answered in this
    // turn, no promise, whatever the limiter says of its address (someone else's failures).
    const cached = hashHex !== undefined ? ctx.tokens?.get(hashHex) : undefined;
    if (cached) {
      // Known to the limiter too, for when the cache cannot be trusted (the LISTEN connection lost).
      limiter.succeeded(hashHex!);
      authenticated.set(req, cached);
      noteSeen(ctx, cached, clientAddress(req));
      next();
      return;
    }
    const address = clientAddress(req);
    const wait = limiter.check(address, hashHex);
    if (wait !== undefined) {
      const error = new ConnectError(`too many failed logins from ${address}; try again in ${wait} s`, Code.ResourceExhausted);
      answerError(req, res, error, { headers: { 'retry-after': String(wait) }, bodyUnread: true });
      return;
    }
    // A static token or a workload token (a JWT of a trusted issuer), kept in ctx.tokens either way once good.
    authenticateCaller(ctx, token, hashHex).then(
      (tenant) => {
        if (hashHex !== undefined) limiter.succeeded(hashHex);
        authenticated.set(req, tenant);
        noteSeen(ctx, tenant, address);
        next();
      },
      (e: unknown) => {
        const refusal = toConnectError(e);
        if (refusal.code === Code.Unauthenticated) {
          limiter.failed(address, hashHex);
          answerError(req, res, refusal, { bodyUnread: true });
          return;
        }
        // The database, say: Connect's interceptor answers it as it would any failure.
        log.debug({ err: messageOf(e) }, 'authentication before the body failed; left to the interceptor');
        next();
      },
    );
  };
}
