/**
 * Authentication of every RPC: the bearer token becomes a Tenant in the call's context values
 * (api/gate.ts usually found it before the body was read). Errors become Connect codes in
 * api/errors.ts (errorInterceptor, outside this one).
 */
import { createContextKey, type HandlerContext, type Interceptor } from '@connectrpc/connect';
import type { CoreContext } from '../core/context.js';
import { UnauthenticatedError } from '../core/errors.js';
import type { Tenant } from '../core/tenants/tenants.js';
import { authenticateCaller } from '../core/credentials/workload-tokens.js';

export const kTenant = createContextKey<Tenant | undefined>(undefined, { description: 'the authenticated tenant' });
/** The client address of the call (net/client-address.ts: behind a trusted proxy, the client's), set by api/gate.ts. */
export const kClient = createContextKey<string | undefined>(undefined, { description: 'the client address' });

export function bearerToken(header: string | null): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1] : undefined;
}

export function tenantInterceptor(ctx: CoreContext): Interceptor {
  return (next) => async (req) => {
    // api/gate.ts authenticated the call before its body was read; otherwise (a router built
    // without the gate, as tests do) it is done here.
    const tenant = req.contextValues.get(kTenant) ?? (await authenticateCaller(ctx, bearerToken(req.header.get('authorization'))));
    req.contextValues.set(kTenant, tenant);
    return next(req);
  };
}

/** `{ from }`: the client address of this call, for an apply's journal rows (ApplySource.from); {} when not known. */
export function clientOf(hc: HandlerContext): { from?: string } {
  const from = hc.values.get(kClient);
  return from === undefined ? {} : { from };
}

/** The tenant of this call; the interceptor guarantees one. */
export function tenantOf(hc: HandlerContext): Tenant {
  const t = hc.values.get(kTenant);
  if (!t) throw new UnauthenticatedError('missing credentials');
  return t;
}
