/**
 * LastUsed (core/keys/last-used.ts) at a stop: the uses waiting for their interval are written
 * when the Lifecycle's stop begins, a use after it is written at once, and the stop's settled() waits
 * for those writes — so nothing writes through a pool after server/server.ts ended it (a stop used to log
 * "Cannot use a pool after calling end on the pool" for the last interval's uses).
 */
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LastUsed } from '../../src/core/keys/last-used.js';
import { Lifecycle } from '../../src/core/lifecycle.js';

type Use = { id: string; at: Date; from?: string };

describe('LastUsed at a stop', () => {
  let now: number;
  let writes: Use[][];
  let release: Array<() => void>;
  let lifecycle: Lifecycle;
  let used: LastUsed;

  beforeEach(() => {
    vi.useFakeTimers();
    now = 1_000_000;
    writes = [];
    release = [];
    lifecycle = new Lifecycle();
    const write = (uses: Use[]) => {
      writes.push(uses);
      return new Promise<void>((resolve) => release.push(resolve));
    };
    used = new LastUsed(write, pino({ level: 'silent' }), 'test key', 60_000, () => now, lifecycle);
  });
  afterEach(() => vi.useRealTimers());

  it('writes the first use in the next batch, and holds a later one for its interval', async () => {
    used.note('k1', '192.0.2.1');
    expect(writes).toEqual([]);
    await vi.advanceTimersByTimeAsync(50);
    expect(writes).toEqual([[{ id: 'k1', at: new Date(1_000_000), from: '192.0.2.1' }]]);
    now += 1_000;
    used.note('k1', '192.0.2.2');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(writes).toHaveLength(1);
  });

  it('writes the uses waiting for their interval when the stop begins, and the stop waits for the write', async () => {
    used.note('k1');
    await vi.advanceTimersByTimeAsync(50);
    release.shift()!();
    now += 5_000;
    used.note('k1', '192.0.2.9');
    expect(writes).toHaveLength(1);

    lifecycle.beginShutdown(30_000);
    expect(writes).toEqual([[{ id: 'k1', at: new Date(1_000_000) }], [{ id: 'k1', at: new Date(1_005_000), from: '192.0.2.9' }]]);
    let settled: boolean | undefined;
    void lifecycle.settled(10_000).then((s) => (settled = s));
    await vi.advanceTimersByTimeAsync(100);
    expect(settled).toBeUndefined();
    release.shift()!();
    await vi.advanceTimersByTimeAsync(0);
    expect(settled).toBe(true);
    // Nothing is left on a timer to write after the pools end.
    await vi.advanceTimersByTimeAsync(120_000);
    expect(writes).toHaveLength(2);
  });

  it('writes a use at once once the stop has begun, tracked by it', async () => {
    lifecycle.beginShutdown(30_000);
    used.note('k2');
    now += 10;
    used.note('k2');
    expect(writes).toEqual([[{ id: 'k2', at: new Date(1_000_000) }], [{ id: 'k2', at: new Date(1_000_010) }]]);
    let settled: boolean | undefined;
    void lifecycle.settled(10_000).then((s) => (settled = s));
    await vi.advanceTimersByTimeAsync(10);
    expect(settled).toBeUndefined();
    for (const r of release) r();
    await vi.advanceTimersByTimeAsync(0);
    expect(settled).toBe(true);
  });
});
