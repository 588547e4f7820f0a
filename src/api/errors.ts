/**
 * The one place core errors become Connect codes (DESIGN.md "Conventions"): toConnectError, which
 * every path that answers an RPC uses — errorInterceptor (every RPC Connect serves), the routes beside
 * Connect (api/json-route.ts), the gate before the body (api/gate.ts).
 */
import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import type { Logger } from 'pino';
import { kClient } from './auth.js';
import { messageOf } from '../lib/error-message.js';
import { InvalidInputError } from '../dns/errors.js';
import { REFUSAL_CHANGE_THRESHOLD, REFUSAL_HEADER, REFUSAL_ZONE_HEADER } from '../core/plan/guard.js';
import {
  ApplyFailedError,
  isDatabaseUnavailable,
  IssuerUnavailableError,
  LockTimeoutError,
  NotFoundError,
  OvhError,
  PermissionDeniedError,
  PlanNotApprovableError,
  ResourceExhaustedError,
  SecretsKeyError,
  ShuttingDownError,
  StalePlanError,
  ThresholdError,
  UnauthenticatedError,
} from '../core/errors.js';

export function toConnectError(e: unknown): ConnectError {
  if (e instanceof ConnectError) return e;
  if (e instanceof InvalidInputError) return new ConnectError(e.message, Code.InvalidArgument);
  if (e instanceof UnauthenticatedError) return new ConnectError(e.message, Code.Unauthenticated);
  if (e instanceof PermissionDeniedError) return new ConnectError(e.message, Code.PermissionDenied);
  if (e instanceof NotFoundError) return new ConnectError(e.message, Code.NotFound);
  if (e instanceof StalePlanError) return new ConnectError(e.message, Code.FailedPrecondition);
  if (e instanceof PlanNotApprovableError) return new ConnectError(e.message, Code.FailedPrecondition);
  // The header lets a client (the webhook sidecar) tell this refusal from a stale plan.
  if (e instanceof ThresholdError)
    return new ConnectError(e.message, Code.FailedPrecondition, { [REFUSAL_HEADER]: REFUSAL_CHANGE_THRESHOLD, [REFUSAL_ZONE_HEADER]: e.zone });
  if (e instanceof LockTimeoutError) return new ConnectError(e.message, Code.Aborted);
  if (e instanceof ResourceExhaustedError) return new ConnectError(e.message, Code.ResourceExhausted);
  if (e instanceof ApplyFailedError) return new ConnectError(e.message, e.transient ? Code.Unavailable : Code.FailedPrecondition);
  if (e instanceof ShuttingDownError) return new ConnectError(e.message, Code.Unavailable);
  // A trusted issuer's keys could not be fetched (and none cached is usable): an outage, retryable.
  if (e instanceof IssuerUnavailableError) return new ConnectError(e.message, Code.Unavailable);
  // The server has no DNSPLANE_SECRETS_KEY, or another than the secrets stored: the operator's to fix.
  if (e instanceof SecretsKeyError) return new ConnectError(e.message, Code.FailedPrecondition);
  // Unreachable, restarting, failing over, a connection cut: an outage, retryable, never "internal".
  if (isDatabaseUnavailable(e)) return new ConnectError(`database unavailable, retry later: ${messageOf(e)}`, Code.Unavailable);
  if (e instanceof OvhError) {
    if (e.transient) return new ConnectError(e.message, Code.Unavailable);
    if (e.kind === 'not_found') return new ConnectError(e.message, Code.FailedPrecondition);
    if (e.kind === 'auth') return new ConnectError(`OVH rejected dnsplane's credentials: ${e.message}`, Code.Internal);
    return new ConnectError(e.message, Code.Internal);
  }
  return new ConnectError('internal error', Code.Internal);
}

/**
 * An RPC's error as its caller will see it, logged: internal errors at error, refusals at debug, with
 * the client's address when known (behind a trusted proxy, the client's).
 */
export function loggedConnectError(e: unknown, log: Logger, rpc: string, client?: string): ConnectError {
  const ce = toConnectError(e);
  if (ce.code === Code.Internal) log.error({ err: e, rpc, client }, 'rpc failed');
  else log.debug({ rpc, client, code: Code[ce.code], reason: ce.rawMessage }, 'rpc rejected');
  return ce;
}

/** The outermost interceptor of every RPC: whatever is thrown inside leaves as a Connect error. */
export function errorInterceptor(log: Logger): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (e) {
      throw loggedConnectError(e, log, req.method.name, req.contextValues.get(kClient));
    }
  };
}
