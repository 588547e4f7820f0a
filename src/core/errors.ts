/**
 * The errors core throws. api/ maps each to one Connect code (api/errors.ts); nothing else does.
 */
export { InvalidInputError } from '../dns/errors.js';
import { OvhError } from '../ovh/errors.js';
import { isDatabaseUnavailable } from '../store/index.js';
export { OvhError };
/** The zone lock was not acquired within DNSPLANE_LOCK_TIMEOUT. */
export { LockTimeoutError } from '../store/index.js';
/** The zone lock went with its database session while an apply held it (store/lock.ts). */
export { ZoneLockLostError } from '../store/index.js';
/** Whether an error means the database is unreachable, restarting or failing over (Unavailable). */
export { isDatabaseUnavailable } from '../store/index.js';
/** A tenant, zone, plan or journal entry that does not exist: the store's, whether core or the store finds it missing. */
export { NotFoundError } from '../store/index.js';

/** dnsplane is stopping (SIGTERM): the request was not started, or an apply stopped at the deadline. Retryable. */
export class ShuttingDownError extends Error {
  override readonly name = 'ShuttingDownError';
}

/** No token, an unknown token, or a disabled tenant. */
export class UnauthenticatedError extends Error {
  override readonly name = 'UnauthenticatedError';
}

/** A workload token (a JWT, core/credentials/workload-tokens.ts) refused, naming the rule it failed (`rule`: its metrics label). */
export class WorkloadTokenError extends UnauthenticatedError {
  constructor(
    readonly rule: string,
    message: string,
  ) {
    super(`workload token refused: ${message}`);
  }
}

/** A trusted issuer's keys could not be had at all (none cached, or all past their bound): retry later. */
export class IssuerUnavailableError extends Error {
  override readonly name = 'IssuerUnavailableError';
}

/** The tenant may not do this (a zone or name outside its grant, an admin call without the scope). */
export class PermissionDeniedError extends Error {
  override readonly name = 'PermissionDeniedError';
  constructor(
    readonly field: string,
    readonly rule: string,
  ) {
    super(field ? `${field}: ${rule}` : rule);
  }
}

/**
 * The caller is over a bound that protects the other callers (DNSPLANE_PLAN_CONCURRENCY): nothing was
 * done; try again when its other requests have finished.
 */
export class ResourceExhaustedError extends Error {
  override readonly name = 'ResourceExhaustedError';
}

/** A stored plan whose zone changed since it was computed, or that expired. Nothing was sent to OVH. */
export class StalePlanError extends Error {
  override readonly name = 'StalePlanError';
}

/**
 * A stored plan that cannot be approved (core/plan/approvals.ts): not pending, expired, already approved,
 * stale, or not over the change threshold. The message names the plan and the rule.
 */
export class PlanNotApprovableError extends Error {
  override readonly name = 'PlanNotApprovableError';
}

/**
 * An apply that failed after it started sending operations: the operations that had succeeded were
 * undone, nothing was published, and the touched names were re-read. `transient` tells whether OVH was
 * unavailable (try again later) or the zone changed outside dnsplane.
 */
export class ApplyFailedError extends Error {
  override readonly name = 'ApplyFailedError';
  constructor(
    message: string,
    readonly zone: string,
    readonly transient: boolean,
    /** The OVH calls the apply made, in order, when known (core/apply/result.ts CallRecord). */
    readonly calls?: ReadonlyArray<{ method: string; path: string; body: string; status: number; error?: string }>,
  ) {
    super(message);
  }
}

/**
 * An apply over the tenant's change threshold (core/plan/guard.ts) without force: nothing was sent. The
 * message names the counts and how to proceed.
 */
export class ThresholdError extends Error {
  override readonly name = 'ThresholdError';
  constructor(
    message: string,
    readonly zone: string,
    readonly counts: { owned: number; updates: number; deletes: number; maxPercent: number },
  ) {
    super(message);
  }
}

/**
 * Whether trying again later may succeed: OVH or the database unavailable, a zone lock not acquired
 * or lost, dnsplane shutting down. The webhook answers these 503, Connect Unavailable or Aborted.
 */
export function isRetryable(e: unknown): boolean {
  if (e instanceof ApplyFailedError) return e.transient;
  if (e instanceof OvhError) return e.transient;
  if (e instanceof ShuttingDownError) return true;
  if (e instanceof Error && e.name === 'LockTimeoutError') return true;
  return isDatabaseUnavailable(e);
}

/**
 * The encryption key is missing, or is not the one the stored secrets were sealed with. The message
 * names the setting and what to do; it never holds a key.
 */
export class SecretsKeyError extends Error {
  override readonly name = 'SecretsKeyError';
}

/** A sealed secret that does not open with the right key: it was altered (or moved to another row). */
export class SecretUnreadableError extends Error {
  override readonly name = 'SecretUnreadableError';
}
