/**
 * Authentication and error mapping for every RPC: the bearer token becomes a Tenant in the call's
 * context values; any error a handler throws leaves through toConnectError.
 */
import { Code, createContextKey, type HandlerContext, type Interceptor } from '@connectrpc/connect';
import type { Logger } from 'pino';
import type { CoreContext } from '../core/context.js';
import { UnauthenticatedError } from '../core/errors.js';
import { authenticate, type Tenant } from '../core/tenants.js';
import { toConnectError } from './errors.js';

export const kTenant = createContextKey<Tenant | undefined>(undefined, { description: 'the authenticated tenant' });

export function bearerToken(header: string | null): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1] : undefined;
}

export function authInterceptor(ctx: CoreContext, log: Logger): Interceptor {
  return (next) => async (req) => {
    try {
      const tenant = await authenticate(ctx.pool, bearerToken(req.header.get('authorization')), ctx.tokens);
      req.contextValues.set(kTenant, tenant);
      return await next(req);
    } catch (e) {
      const ce = toConnectError(e);
      if (ce.code === Code.Internal) log.error({ err: e, rpc: req.method.name }, 'rpc failed');
      else log.debug({ rpc: req.method.name, code: Code[ce.code], reason: ce.rawMessage }, 'rpc rejected');
      throw ce;
    }
  };
}

/** The tenant of this call; the interceptor guarantees one. */
export function tenantOf(hc: HandlerContext): Tenant {
  const t = hc.values.get(kTenant);
  if (!t) throw new UnauthenticatedError('missing credentials');
  return t;
}
