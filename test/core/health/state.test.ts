/**
 * The health state machine of one record set (core/health/state.ts), round by round, with the time
 * given: failures and successes in a row, at most half of a set leaving in one round, never the last
 * passing target, fail open (every target failing: nothing withdrawn, the withdrawn come back), a
 * flapping target held down.
 */
import { describe, expect, it } from 'vitest';
import type { CheckAnswer } from '../../../src/core/reads/health-view.js';
import { stepSet, type HealthRules, type TargetHealth } from '../../../src/core/health/state.js';

const RULES: HealthRules = { failures: 3, successes: 2, flapLimit: 3, flapWindowMs: 600_000, holdMs: 300_000 };
const T0 = Date.parse('2026-12-04T20:00:00Z');
const answer = (ok: boolean): CheckAnswer => ({ ok, result: ok ? '200' : 'ECONNREFUSED', ms: 1, at: '' });

/** Runs rounds: each a map of target -> ok; the time moves 10 s a round. */
function run(rounds: Array<Record<string, boolean>>, rules = RULES, start = new Map<string, TargetHealth>()) {
  let states = start;
  const log: Array<{ withdraw: string[]; restore: string[]; allDown: boolean }> = [];
  rounds.forEach((r, i) => {
    const out = stepSet(states, new Map(Object.entries(r).map(([t, ok]) => [t, answer(ok)])), new Date(T0 + i * 10_000), rules);
    states = new Map(out.states.map((s) => [s.target, s]));
    log.push({ withdraw: out.withdraw, restore: out.restore, allDown: out.allDown });
  });
  return { states, log };
}

describe('stepSet', () => {
  it('withdraws after 3 failures in a row, restores after 2 successes in a row', () => {
    const { log, states } = run([
      { a: false, b: true },
      { a: false, b: true },
      { a: false, b: true },
      { a: true, b: true },
      { a: true, b: true },
    ]);
    expect(log.map((l) => [l.withdraw, l.restore])).toEqual([
      [[], []],
      [[], []],
      [['a'], []],
      [[], []],
      [[], ['a']],
    ]);
    expect(states.get('a')!.state).toBe('healthy');
  });

  it('a success in between resets the count', () => {
    const { log } = run([
      { a: false, b: true },
      { a: false, b: true },
      { a: true, b: true },
      { a: false, b: true },
      { a: false, b: true },
    ]);
    expect(log.flatMap((l) => l.withdraw)).toEqual([]);
  });

  it('at most half of the set leaves in one round; the rest wait (and the last passing stays)', () => {
    const round = { a: false, b: false, c: false, d: true };
    const { log } = run([round, round, round, round]);
    expect(log[2]!.withdraw).toEqual(['a', 'b']);
    // c: would leave d alone — allowed (d passes), but only half of 4 per round: next round.
    expect(log[3]!.withdraw).toEqual(['c']);
  });

  it('every target failing: fail open — nothing withdrawn, the withdrawn restored, allDown', () => {
    const { log } = run([
      { a: false, b: true },
      { a: false, b: true },
      { a: false, b: true },
      { a: false, b: false },
    ]);
    expect(log[2]!.withdraw).toEqual(['a']);
    expect(log[3]).toEqual({ withdraw: [], restore: ['a'], allDown: true });
  });

  it('a flapping target is held down after it passes again', () => {
    const down = [
      { a: false, b: true },
      { a: false, b: true },
      { a: false, b: true },
    ];
    const up = [
      { a: true, b: true },
      { a: true, b: true },
    ];
    const { log, states } = run([...down, ...up, ...down, ...up, ...down, ...up, ...up]);
    const restores = log.map((l, i) => (l.restore.length ? i : -1)).filter((i) => i >= 0);
    // Restored after the first two downs; the third down makes it flapping: held for holdMs.
    expect(restores).toEqual([4, 9]);
    expect(states.get('a')!.state).toBe('down');
    expect(states.get('a')!.heldUntil).toBeDefined();
  });
});
