import { describe, expect, it } from 'vitest';
import { ResourceExhaustedError } from '../../src/core/errors.js';
import { PlanLimiter } from '../../src/core/plan-limit.js';

const alice = { id: '1', name: 'alice' };
const bob = { id: '2', name: 'bob' };

function deferred(): { promise: Promise<void>; resolve: () => void; reject: (e: Error) => void } {
  let resolve!: () => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('PlanLimiter', () => {
  it('runs at most `limit` plans per tenant; one more is refused at once, naming the setting', async () => {
    const events: string[] = [];
    const limiter = new PlanLimiter(2, { running: (t, d) => events.push(`${t} ${d}`), refused: (t) => events.push(`${t} refused`) });
    const [a, b] = [deferred(), deferred()];
    const first = limiter.run(alice, () => a.promise.then(() => 'first'));
    const second = limiter.run(alice, () => b.promise.then(() => 'second'));
    expect(limiter.inProgress(alice.id)).toBe(2);

    let ran = false;
    const third = limiter.run(alice, async () => {
      ran = true;
    });
    await expect(third).rejects.toBeInstanceOf(ResourceExhaustedError);
    await expect(third).rejects.toThrow(
      'tenant "alice" already has 2 plan(s) in progress, the most one tenant may have at once (DNSPLANE_PLAN_CONCURRENCY=2); retry when one has finished',
    );
    expect(ran).toBe(false);

    // Another tenant is not affected.
    await expect(limiter.run(bob, async () => 'bob')).resolves.toBe('bob');

    a.resolve();
    await expect(first).resolves.toBe('first');
    expect(limiter.inProgress(alice.id)).toBe(1);
    await expect(limiter.run(alice, async () => 'again')).resolves.toBe('again');
    b.resolve();
    await expect(second).resolves.toBe('second');
    expect(limiter.inProgress(alice.id)).toBe(0);
    expect(events).toEqual(['alice 1', 'alice 1', 'alice refused', 'bob 1', 'bob -1', 'alice -1', 'alice 1', 'alice -1', 'alice -1']);
  });

  it('frees the slot of a plan that fails', async () => {
    const limiter = new PlanLimiter(1);
    await expect(limiter.run(alice, async () => Promise.reject(new Error('bad input')))).rejects.toThrow('bad input');
    expect(limiter.inProgress(alice.id)).toBe(0);
    await expect(limiter.run(alice, async () => 'ok')).resolves.toBe('ok');
  });

  it('refuses a limit that is not a positive integer', () => {
    expect(() => new PlanLimiter(0)).toThrow(RangeError);
    expect(() => new PlanLimiter(1.5)).toThrow(RangeError);
  });
});
