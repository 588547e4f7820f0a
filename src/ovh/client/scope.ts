/**
 * A call's scope: who an OVH call is made for (its flow, for the rate limiter's fair shares) and what
 * must agree before a write leaves (its guard: core's zone fence). Passed with every call as an
 * argument — OvhApi.scoped() makes a client that carries one — never found in ambient async state,
 * so that a reader sees at the call which fence a write goes through, and an idle process runs no
 * async_hooks (they would cost every promise of every poll).
 */
import type { OvhFlow } from '../ratelimit.js';

/**
 * Something that must agree before each write attempt (anything but a GET) leaves: core's zone fence
 * (the zone lock is still held, the shutdown deadline not passed). It runs after the rate limiter,
 * right before the request, for every attempt (retries included), and refuses by throwing: the
 * attempt is not sent and the error (not an OvhError) ends the call without retries.
 */
export interface WriteGuard {
  beforeWrite(method: string, path: string): Promise<void>;
}

export interface OvhScope {
  /** Whose fair share of the rate the calls take; absent: the share of work no tenant asked for. */
  readonly flow?: OvhFlow;
  /** Consulted before every write attempt; absent: writes are not fenced (work outside a zone lock). */
  readonly guard?: WriteGuard;
}

/** The scope of a client made by no one's scoped(): every call its own flow, no guard. */
export const NO_SCOPE: OvhScope = Object.freeze({});

/** `inner` within `outer`: flow fields merged (inner's win), inner's guard when it has one. */
export function within(outer: OvhScope, inner: OvhScope): OvhScope {
  return { flow: { ...outer.flow, ...inner.flow }, guard: inner.guard ?? outer.guard };
}
