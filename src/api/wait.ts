/**
 * A request's wait for visibility (`wait: WAIT_VISIBLE`, `wait_timeout`; ZoneService.Apply and
 * GetApply, NsmService.PublishDomain): how long it may wait — the timeout asked, cut short of the
 * client's own deadline — and the call's signal (the client gone). A wait that ends early answers the
 * state so far; it never fails the call.
 */
import { durationMs, type Duration } from '@bufbuild/protobuf/wkt';
import type { HandlerContext } from '@connectrpc/connect';
import { InvalidInputError } from '../dns/errors.js';
import { Wait } from '../gen/dnsplane/v1/visibility_pb.js';

/** The wait when the request names none. */
export const DEFAULT_WAIT_MS = 5 * 60_000;
/** The longest wait a request may ask for. */
export const MAX_WAIT_MS = 60 * 60_000;

export interface WaitAsked {
  timeoutMs: number;
  /** The call's own signal: the client gone, or its deadline reached. */
  signal: AbortSignal;
}

/**
 * The part of a client's deadline kept for the answer to travel back: a tenth of what is left, between
 * 100 ms and 2 s, so that a wait cut by the deadline still answers with the state so far.
 */
function answerMargin(remainingMs: number): number {
  return Math.min(2000, Math.max(100, remainingMs / 10));
}

/** The wait a request asks for, or undefined for none. `field` prefixes the field names in errors. */
export function waitAsked(req: { wait: Wait; waitTimeout?: Duration }, hc: HandlerContext, field = ''): WaitAsked | undefined {
  if (req.wait === Wait.UNSPECIFIED) {
    if (req.waitTimeout) throw new InvalidInputError(`${field}waitTimeout`, 'goes with wait WAIT_VISIBLE');
    return undefined;
  }
  if (req.wait !== Wait.VISIBLE)
    throw new InvalidInputError(`${field}wait`, `unknown value ${String(req.wait)}; use WAIT_VISIBLE (or leave it unset: no wait)`);
  let timeoutMs = DEFAULT_WAIT_MS;
  if (req.waitTimeout) {
    timeoutMs = durationMs(req.waitTimeout);
    if (!(timeoutMs > 0) || timeoutMs > MAX_WAIT_MS)
      throw new InvalidInputError(`${field}waitTimeout`, `must be more than 0 and at most 1 hour (3600s), got ${timeoutMs / 1000}s`);
  }
  const remaining = hc.timeoutMs();
  if (remaining !== undefined) timeoutMs = Math.max(0, Math.min(timeoutMs, remaining - answerMargin(remaining)));
  return { timeoutMs, signal: hc.signal };
}
