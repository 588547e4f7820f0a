/**
 * OVH answers parsed a few per turn of the event loop (src/ovh/client/parse-turns.ts): a listing's
 * pages that arrive together are handled one turn after another, in arrival order, while small
 * answers go straight through when nothing waits.
 */
import { readFile } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CHARS_PER_TURN, inParseTurn } from '../../src/ovh/client/parse-turns.js';

/** Counts the turns of the loop: an immediate that queues itself again in each check phase. */
function turnCounter(): { now: () => number; stop: () => void } {
  let turn = 0;
  let stopped = false;
  const tick = () => {
    turn++;
    if (!stopped) setImmediate(tick);
  };
  setImmediate(tick);
  return { now: () => turn, stop: () => (stopped = true) };
}

describe('inParseTurn', () => {
  it('handles large answers that arrive together one turn after another, in arrival order', async () => {
    const turns = turnCounter();
    const page = Math.floor(CHARS_PER_TURN * 0.6);
    const handled: Array<[number, number]> = [];
    await new Promise<void>((done) => {
      for (let i = 0; i < 10; i++)
        inParseTurn(page, () => {
          handled.push([i, turns.now()]);
          if (handled.length === 10) done();
        });
    });
    turns.stop();
    expect(handled.map(([i]) => i)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // The first at once; then never two in one turn (two pages are more than a turn parses).
    expect(handled[0]![1]).toBe(0);
    const perTurn = new Map<number, number>();
    for (const [, t] of handled) perTurn.set(t, (perTurn.get(t) ?? 0) + 1);
    expect(Math.max(...perTurn.values())).toBe(1);
  });

  it('never handles two large answers between two runs of the timers, the one parsed as it arrived in I/O included', async () => {
    // A timer due at every timers phase (each handler spins past its 1 ms): the count a handler sees
    // moves only when the timers ran since the previous handler.
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const spin = () => {
      const t = performance.now();
      while (performance.now() - t < 2);
    };
    const seen: number[] = [];
    await new Promise<void>((done) => {
      // Inside an I/O callback, as a listing's pages arrive together.
      readFile(import.meta.filename, () => {
        for (let i = 0; i < 6; i++)
          inParseTurn(Math.floor(CHARS_PER_TURN * 0.6), () => {
            spin();
            seen.push(ticks);
            if (seen.length === 6) done();
          });
      });
    });
    clearInterval(timer);
    for (let i = 1; i < seen.length; i++) expect(seen[i], `answer ${i} handled with no timers run since answer ${i - 1}`).toBeGreaterThan(seen[i - 1]!);
  });

  it('lets small answers through at once while nothing waits, and behind the waiting ones otherwise', async () => {
    const order: string[] = [];
    inParseTurn(100, () => order.push('small'));
    expect(order).toEqual(['small']); // at once
    await new Promise((r) => setImmediate(r)); // a new turn
    await new Promise<void>((done) => {
      inParseTurn(CHARS_PER_TURN, () => order.push('big 1'));
      inParseTurn(CHARS_PER_TURN, () => order.push('big 2'));
      inParseTurn(100, () => {
        order.push('small after');
        done();
      });
      expect(order).toEqual(['small', 'big 1']);
    });
    expect(order).toEqual(['small', 'big 1', 'big 2', 'small after']);
  });
});
