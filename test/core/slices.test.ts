import { describe, expect, it } from 'vitest';
import { Slicer, SLICE_MS, stringifySliced, TURN_MS } from '../../src/core/slices.js';
import { until } from '../helpers/until.js';

describe('stringifySliced', () => {
  const cases: Array<[string, unknown]> = [
    ['plain values', [null, true, 0, -1.5, 'a"b\u0000', { a: undefined, b: () => 1, c: [undefined, () => 1, 2] }]],
    [
      'a long list of objects, members in insertion order',
      Array.from({ length: 300 }, (_, i) => ({ z: i, a: `x${i}`, nested: { k: [i, { deep: i }] }, d: new Date(i * 1000) })),
    ],
    [
      'an object holding long lists',
      { kind: 'desired', endpoints: Array.from({ length: 500 }, (_, i) => ({ dnsName: `h${i}`, labels: { '10': 'n', b: 'c' } })), empty: [], none: null },
    ],
    ['empty containers', { a: {}, b: [], c: [[]] }],
  ];
  it.each(cases)('%s: the same text as JSON.stringify', async (_what, value) => {
    for (const depth of [0, 1, 2, 3, 5]) expect(await stringifySliced(value, new Slicer(), depth)).toBe(JSON.stringify(value));
  });

  it('yields while it writes a long list', async () => {
    const slicer = new Slicer(0);
    await stringifySliced(
      Array.from({ length: 1000 }, (_, i) => ({ i })),
      slicer,
    );
    expect(slicer.yields).toBeGreaterThan(10);
  });
});

describe('Slicer: one budget per turn of the event loop for the whole process', () => {
  /** A unit of work of at least 1 ms (wall time: a preempted unit is only longer). */
  const unit = () => {
    const end = performance.now() + 1;
    while (performance.now() < end);
  };

  it('requests that each start a slicer in one turn let the loop turn once the turn budget is spent, not once each has spent its own', async () => {
    const slicers = 16;
    let turned = false;
    let unitsBeforeTheTurn = 0;
    // Each started by its own callback of one timers phase, as requests are by their sockets' reads in
    // one poll phase: each runs until its slicer yields before the next callback starts. The first one
    // marks the end of that turn of the loop (an immediate queued then runs in its check phase).
    const done = await Promise.all(
      Array.from(
        { length: slicers },
        (_, k) =>
          new Promise<number>((resolve) =>
            setTimeout(async () => {
              if (k === 0) setImmediate(() => (turned = true));
              const slicer = new Slicer();
              for (let i = 0; i < SLICE_MS + 2; i++) {
                await slicer.check();
                unit();
                if (!turned) unitsBeforeTheTurn++;
              }
              resolve(slicer.yields);
            }, 0),
          ),
      ),
    );
    // Each alone would run SLICE_MS units (of 1 ms or more) before its first yield: 16 × 8 before the
    // loop turned. Together they keep to TURN_MS, and the unit in hand.
    expect(unitsBeforeTheTurn).toBeLessThanOrEqual(TURN_MS + 1);
    // Every one of them went on to the end, each yielding at least once.
    expect(done.every((yields) => yields >= 1)).toBe(true);
  });

  it('a slicer that resumes in a spent turn waits for the next one, and runs there before those that began to wait after it', async () => {
    const spender = new Slicer();
    const late = new Slicer();
    const order: string[] = [];
    // Both resume in the same check phase, the spender first: it spends the whole turn and waits again
    // (after the late one). The late one waits for the next turn and runs first there: not passed over.
    const spending = (async () => {
      await spender.yield();
      for (let i = 0; i <= TURN_MS; i++) unit();
      order.push('spent');
      await spender.yield();
      order.push('spender again');
    })();
    const checking = (async () => {
      await late.yield();
      order.push('late');
    })();
    await Promise.all([spending, checking]);
    expect(order).toEqual(['spent', 'late', 'spender again']);
    expect(late.yields).toBe(1);
  });

  it('slicers resumed in one turn run about TURN_MS of it between two turns of the loop, not a step each', async () => {
    const slicers = 32;
    let done = false;
    // A timer that fires in every turn of the loop that lasts 1 ms or more: the steps between two of its
    // firings ran in one turn.
    let stepsSinceTimer = 0;
    const perTurn: number[] = [];
    const tick = () => {
      perTurn.push(stepsSinceTimer);
      stepsSinceTimer = 0;
      if (!done) setTimeout(tick, 0);
    };
    setTimeout(tick, 0);
    await Promise.all(
      Array.from({ length: slicers }, async () => {
        const slicer = new Slicer();
        await slicer.yield(); // every one waiting first, as requests between two chunks of their answers are
        for (let i = 0; i < 4; i++) {
          // A step of 2 ms or more, then the check.
          unit();
          unit();
          stepsSinceTimer++;
          await slicer.check();
        }
      }),
    );
    done = true;
    perTurn.push(stepsSinceTimer);
    expect(perTurn.reduce((a, b) => a + b, 0)).toBe(slicers * 4);
    // Steps of 2 ms: four in a turn of TURN_MS (8 ms), and the longest-waiting one's step in a spent turn.
    // Each resumed slicer making its step before its check ran all 32 in one turn.
    expect(Math.max(...perTurn)).toBeLessThanOrEqual(TURN_MS / 2 + 2);
  });

  it('a slicer waiting while new requests spend every turn still runs, in the second spent turn it meets', async () => {
    let arrivals = 0;
    let resumed: Promise<number> | undefined;
    // A request arrives in every turn of the loop and spends the turn before its first check; the
    // first one also starts a slicer waiting (its yield queued before that turn was spent).
    const arrive = () => {
      arrivals++;
      if (arrivals < 10) setTimeout(arrive, 0); // due when the loop next runs its timers
      if (arrivals === 1) resumed = new Slicer().yield().then(() => arrivals);
      void new Slicer().check();
      for (let i = 0; i <= TURN_MS; i++) unit();
    };
    setTimeout(arrive, 0);
    await until('the requests all arrived', () => arrivals === 10);
    // It resumed while the requests went on arriving (not once they stopped).
    expect(await resumed).toBeLessThanOrEqual(3);
  });

  it('two slicers resumed turn after turn share the turns between them, not one taking each turn whole', async () => {
    const order: string[] = [];
    const run = async (name: string) => {
      const slicer = new Slicer();
      for (let i = 0; i < 24; i++) {
        await slicer.check();
        unit();
        order.push(name);
      }
    };
    await Promise.all([run('a'), run('b')]);
    // Past the first turn (which both start in), each runs about half of every turn: the second one in
    // the queue got one step a turn when the first took each turn whole.
    const later = order.slice(TURN_MS, TURN_MS + 24);
    expect(later.filter((n) => n === 'b').length).toBeGreaterThanOrEqual(8);
    expect(later.filter((n) => n === 'a').length).toBeGreaterThanOrEqual(8);
  });
});
