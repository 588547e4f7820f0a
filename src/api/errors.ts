/**
 * The one place core errors become Connect codes (DESIGN.md "Conventions").
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { InvalidInputError } from '../dns/errors.js';
import { REFUSAL_CHANGE_THRESHOLD, REFUSAL_HEADER, REFUSAL_ZONE_HEADER } from '../core/guard.js';
import {
  ApplyFailedError,
  isDatabaseUnavailable,
  LockTimeoutError,
  NotFoundError,
  OvhError,
  PermissionDeniedError,
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
  // The header lets a client (the webhook sidecar) tell this refusal from a stale plan.
  if (e instanceof ThresholdError) return new ConnectError(e.message, Code.FailedPrecondition, { [REFUSAL_HEADER]: REFUSAL_CHANGE_THRESHOLD, [REFUSAL_ZONE_HEADER]: e.zone });
  if (e instanceof LockTimeoutError) return new ConnectError(e.message, Code.Aborted);
  if (e instanceof ResourceExhaustedError) return new ConnectError(e.message, Code.ResourceExhausted);
  if (e instanceof ApplyFailedError) return new ConnectError(e.message, e.transient ? Code.Unavailable : Code.FailedPrecondition);
  if (e instanceof ShuttingDownError) return new ConnectError(e.message, Code.Unavailable);
  // The server has no DNSPLANE_SECRETS_KEY, or another than the secrets stored: the operator's to fix.
  if (e instanceof SecretsKeyError) return new ConnectError(e.message, Code.FailedPrecondition);
  // Unreachable, restarting, failing over, a connection cut: an outage, retryable, never "internal".
  if (isDatabaseUnavailable(e)) return new ConnectError(`database unavailable, retry later: ${e instanceof Error ? e.message : String(e)}`, Code.Unavailable);
  if (e instanceof OvhError) {
    if (e.transient) return new ConnectError(e.message, Code.Unavailable);
    if (e.kind === 'not_found') return new ConnectError(e.message, Code.FailedPrecondition);
    if (e.kind === 'auth') return new ConnectError(`OVH rejected dnsplane's credentials: ${e.message}`, Code.Internal);
    return new ConnectError(e.message, Code.Internal);
  }
  return new ConnectError('internal error', Code.Internal);
}
