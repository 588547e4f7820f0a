/**
 * The one place the served OVH API turns core's errors into OVH's answers (as api/errors.ts does for
 * Connect): not the tenant's — a zone or record of another, a set another tenant (or nobody) owns —
 * is OVH's refusal of a call a consumer key was not granted (403 NOT_GRANTED_CALL); a zone it may not
 * use is "This service does not exist" (404), as OVH answers for a zone of another account; bad input
 * is Client::BadRequest naming the field and the rule; OVH, the database or the zone lock unavailable
 * is a 503 to retry; the rest a 500, logged.
 */
import { InvalidInputError } from '../dns/errors.js';
import {
  ApplyFailedError,
  isDatabaseUnavailable,
  LockTimeoutError,
  NotFoundError,
  OvhError,
  PermissionDeniedError,
  ResourceExhaustedError,
  SecretsKeyError,
  SecretUnreadableError,
  ShuttingDownError,
  ThresholdError,
} from '../core/errors.js';
import { badRequest, notGrantedCall, objectNotFound, OvhApiError, serverError, serviceNotFound, tooManyRequests } from '../ovhwire/errors.js';
import { messageOf } from '../lib/error-message.js';

/** OVH's answer for an error; `internal` when it is none of the known ones (to be logged). */
export function ovhAnswerFor(e: unknown): { error: OvhApiError; internal: boolean } {
  if (e instanceof OvhApiError) return { error: e, internal: false };
  if (e instanceof NotFoundError) return { error: e.what === 'record' ? objectNotFound(e.key) : serviceNotFound(), internal: false };
  if (e instanceof PermissionDeniedError) return { error: notGrantedCall(e.message), internal: false };
  if (e instanceof InvalidInputError) return { error: badRequest(e.message), internal: false };
  if (e instanceof ThresholdError) {
    return {
      error: new OvhApiError(403, {
        class: 'Client::Forbidden',
        message: `${e.message} (through the OVH API there is no force: an admin can raise the tenant's limit)`,
      }),
      internal: false,
    };
  }
  if (e instanceof ResourceExhaustedError) return { error: tooManyRequests(1, e.message), internal: false };
  if (e instanceof LockTimeoutError || e instanceof ShuttingDownError) return { error: serverError(503, e.message), internal: false };
  if (e instanceof ApplyFailedError) return { error: serverError(e.transient ? 503 : 500, e.message), internal: false };
  if (e instanceof OvhError) return { error: serverError(e.transient ? 503 : 500, `OVH: ${e.message}`), internal: false };
  if (isDatabaseUnavailable(e)) return { error: serverError(503, `database unavailable, retry later: ${messageOf(e)}`), internal: false };
  // The server's secrets key is missing or another one: the operator's to fix (the message names the setting).
  if (e instanceof SecretsKeyError || e instanceof SecretUnreadableError) return { error: serverError(500, e.message), internal: true };
  return { error: serverError(500), internal: true };
}
