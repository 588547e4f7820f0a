/**
 * The in-process queue in front of the zone lock (core/zones/lock-queue.ts withZoneLockQueued): callers of one
 * process wait their turn without holding a pooled connection, in order, and the wait counts towards
 * DNSPLANE_LOCK_TIMEOUT.
 */
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { CoreContext } from '../../src/core/context.js';
import { withZoneLockQueued } from '../../src/core/zones/lock-queue.js';
import { LockTimeoutError } from '../../src/store/index.js';
import { startHarness, type Harness } from '../helpers/server.js';

const ZONE = 'queue.test';
let h: Harness;
let ctx: CoreContext;
/**
 * The pool these callers take the lock with, theirs alone: the server's own pool also serves its
 * background work (zone states, listeners, "last seen"), which may hold a connection at any moment and
 * would make "the waiter holds no connection" a race on a busy machine.
 */
let pool: pg.Pool;

function latch(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [] }, env: { DNSPLANE_DRIFT_INTERVAL: '0' } });
  pool = new pg.Pool({ connectionString: h.databaseUrl, max: 4 });
  ctx = { ...h.server.ctx, pool, settings: { ...h.server.ctx.settings, lockTimeoutMs: 300 } };
});

afterAll(async () => {
  await pool?.end();
  await h?.close();
});

it('a second caller waits in the queue without a connection, and times out there as LockTimeoutError', async () => {
  const release = latch();
  const inside = latch();
  const first = withZoneLockQueued(ctx, ZONE, async () => {
    inside.open();
    await release.promise;
  });
  try {
    await inside.promise;
    const checkedOut = () => pool.totalCount - pool.idleCount;
    expect(checkedOut()).toBe(1);
    const second = withZoneLockQueued(ctx, ZONE, async () => 'never').catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 100));
    expect(checkedOut()).toBe(1); // the waiter holds no connection
    expect(pool.waitingCount).toBe(0);
    const e = await second;
    expect(e).toBeInstanceOf(LockTimeoutError);
    expect((e as LockTimeoutError).message).toMatch(/lock not acquired within 300 ms/);
  } finally {
    // Released whatever failed above: a lock left held would time out the next test and the harness's close.
    release.open();
    await first;
  }
});

it('callers get the lock in the order they asked for it; other zones do not wait', async () => {
  const order: number[] = [];
  const release = latch();
  const first = withZoneLockQueued(ctx, ZONE, async () => {
    await release.promise;
    order.push(0);
  });
  const rest = [1, 2, 3, 4].map((i) =>
    withZoneLockQueued(ctx, ZONE, async () => {
      order.push(i);
    }),
  );
  const other = await withZoneLockQueued(ctx, 'other.queue.test', async () => 'free');
  expect(other).toBe('free');
  expect(order).toEqual([]);
  release.open();
  await Promise.all([first, ...rest]);
  expect(order).toEqual([0, 1, 2, 3, 4]);
});
