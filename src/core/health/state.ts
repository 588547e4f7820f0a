/**
 * The health state machine of one record set, one round at a time. Pure: the round's answers, the
 * targets' states before it and the time in, the states after it and what to withdraw or restore
 * out. The rules (docs/failover.md):
 * - `failures` failed checks in a row (DNSPLANE_HEALTH_FAILURES, 3) take a healthy target down
 *   (withdrawn); `successes` passing checks in a row (DNSPLANE_HEALTH_SUCCESSES, 2) bring it back;
 * - at most half of the set's targets leave in one round (the rest wait for the next: a set never
 *   loses most of its targets to one bad moment);
 * - never the last: a withdrawal never leaves the set without a target that passes;
 * - fail open: when EVERY target fails, nothing is withdrawn and the ones withdrawn come back — a
 *   check that cannot tell live from dead (the checker's own network, a wrong path) must not empty
 *   the set — and the set is `allDown` (the alert DnsplaneAllTargetsDown);
 * - a flapping target (down FLAP_LIMIT times within flapWindowMs) is held down for holdMs after it
 *   passes again.
 */
import type { CheckAnswer } from '../reads/health-view.js';

export type TargetState = 'healthy' | 'failing' | 'down';

export interface TargetHealth {
  target: string;
  state: TargetState;
  failures: number;
  successes: number;
  /** Times it went down within the flap window. */
  flaps: number;
  /** Held down until then (a flapping target). */
  heldUntil?: Date;
  /** Since when it is in its state. */
  since: Date;
  /** Its last answers, newest last (at most ANSWERS_KEPT). */
  answers: CheckAnswer[];
}

export interface HealthRules {
  failures: number;
  successes: number;
  /** Going down this many times within flapWindowMs makes a target flapping. */
  flapLimit: number;
  flapWindowMs: number;
  /** How long a flapping target stays down after it passes again. */
  holdMs: number;
}

export const ANSWERS_KEPT = 5;

export interface RoundOutcome {
  states: TargetHealth[];
  /** Targets to withdraw (healthy -> down this round). */
  withdraw: string[];
  /** Targets to bring back. */
  restore: string[];
  /** Every target failed this round (fail open: nothing withdrawn). */
  allDown: boolean;
}

function fresh(target: string, now: Date): TargetHealth {
  return { target, state: 'healthy', failures: 0, successes: 0, flaps: 0, since: now, answers: [] };
}

/** One round of a set: `answers` by target (every checked target of the set), `before` its states (missing: new). */
export function stepSet(before: ReadonlyMap<string, TargetHealth>, answers: ReadonlyMap<string, CheckAnswer>, now: Date, rules: HealthRules): RoundOutcome {
  const targets = [...answers.keys()].sort();
  const states = targets.map((t) => {
    const was = before.get(t) ?? fresh(t, now);
    const answer = answers.get(t)!;
    const s: TargetHealth = { ...was, answers: [...was.answers, answer].slice(-ANSWERS_KEPT) };
    if (answer.ok) {
      s.successes = was.successes + 1;
      s.failures = 0;
    } else {
      s.failures = was.failures + 1;
      s.successes = 0;
    }
    // The flap count forgets what is older than the window.
    if (now.getTime() - was.since.getTime() > rules.flapWindowMs && s.state !== 'down') s.flaps = 0;
    return s;
  });
  const allDown = states.length > 0 && states.every((s) => !s.answers.at(-1)!.ok);
  const withdraw: string[] = [];
  const restore: string[] = [];
  const set = (s: TargetHealth, state: TargetState) => {
    if (s.state !== state) s.since = now;
    s.state = state;
  };
  if (allDown) {
    // Fail open: every target stays (or comes back); each still counts its failures.
    for (const s of states) {
      if (s.state === 'down') restore.push(s.target);
      set(s, 'failing');
    }
    return { states, withdraw, restore, allDown };
  }
  for (const s of states) {
    if (s.state !== 'down') {
      set(s, s.failures === 0 ? 'healthy' : 'failing');
      continue;
    }
    const held = s.heldUntil !== undefined && s.heldUntil.getTime() > now.getTime();
    if (s.successes >= rules.successes && !held) {
      restore.push(s.target);
      set(s, 'healthy');
      delete s.heldUntil;
    }
  }
  // Healthy (or failing) targets past the failure count go down, at most half of the set per round,
  // and never the last that passes.
  const maxLeaving = Math.floor(states.length / 2);
  const up = () => states.filter((s) => s.state !== 'down' && s.answers.at(-1)!.ok).length;
  for (const s of states) {
    if (s.state === 'down' || s.failures < rules.failures) continue;
    if (withdraw.length >= maxLeaving) break;
    if (up() === 0) break;
    withdraw.push(s.target);
    set(s, 'down');
    s.flaps += 1;
    if (s.flaps >= rules.flapLimit) s.heldUntil = new Date(now.getTime() + rules.holdMs);
  }
  return { states, withdraw, restore, allDown };
}
