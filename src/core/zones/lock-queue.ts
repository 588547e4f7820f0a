/**
 * The zone lock as this process takes it: callers queue here first, FIFO per zone, then one of them
 * takes a pooled connection, the advisory lock (store/lock.ts) and the zone's fence (core/zones/fence.ts).
 * Apply's concurrency core: a coalescing holder (core/apply/holder.ts) takes waiting applies over from this queue.
 * Also what the first sync of a zone (core/zones/zones.ts), recovery and the drift check lock with.
 */
import type pg from 'pg';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { Turns } from '../turns.js';
import { ZoneFence } from './fence.js';
import { describeSettling, settlingOf } from './settling.js';

interface Waiter {
  /** Its turn came (true), or the holder took it over (false). */
  wake: (turn: boolean) => void;
  /** What a holder that coalesces may take it over with (core/apply/holder.ts: a waiting apply). */
  joinable?: unknown;
}

/** One zone's queue in this process: whether a caller is in (holding or taking the lock), who waits, in order. */
interface ZoneQueue {
  busy: boolean;
  waiters: Waiter[];
}

/** Per pool (one database), per zone: this process's queue for the zone lock. */
const queues = new WeakMap<pg.Pool, Map<string, ZoneQueue>>();

/**
 * Per pool: the zone locks this process holds at once, across zones. Each holds a pooled connection
 * for its whole transaction (seconds, with OVH's calls in it): applies to twenty zones at once would
 * hold every connection, and the reads and the other holders would wait past the pool's connection
 * timeout and fail. At most 60% of the pool's connections hold zone locks; the others wait their turn
 * here, holding nothing.
 */
const holders = new WeakMap<pg.Pool, Turns>();

function holdersOf(pool: pg.Pool): Turns {
  let turns = holders.get(pool);
  if (!turns) holders.set(pool, (turns = new Turns(Math.max(1, Math.floor((pool.options.max ?? 10) * 0.6)))));
  return turns;
}

/** How many callers of this process wait for the zone's lock behind the one in it (metrics, tests). */
export function zoneLockWaiters(ctx: CoreContext, zone: string): number {
  return queues.get(ctx.pool)?.get(zone)?.waiters.length ?? 0;
}

/**
 * What the caller in the lock sees of the callers waiting behind it in this process (never other
 * processes'): it may take over the first one when that one came with `join` (withZoneLockQueued),
 * whose own fn then never runs.
 */
export interface ZoneQueueView<J> {
  /** The first waiter's `join.payload` when it came with one; undefined when nobody waits or it did not. */
  next(): J | undefined;
  /** Takes that first waiter over: it leaves the queue (and its lock timeout). False if it left meanwhile. */
  take(payload: J): boolean;
}

/**
 * store.withZoneLock, but callers of this process queue here (FIFO, per zone) before they take a
 * connection and wait in Postgres: N concurrent applies to one zone hold one pooled connection, not
 * N, so reads keep getting connections. Time spent in the queue counts towards lock_timeout
 * (DNSPLANE_LOCK_TIMEOUT): past it, LockTimeoutError (Aborted) as if Postgres had timed out.
 *
 * `join`: the caller may be taken over while it waits, by a caller in the lock that sees it first in
 * the queue (`queue.take`): then its fn never runs and it answers what `join.taken()` gives (the
 * coalesced applies of core/apply/holder.ts).
 */
export async function withZoneLockQueued<T, J = never>(
  ctx: CoreContext,
  zone: string,
  fn: (tx: pg.PoolClient, fence: ZoneFence, queue: ZoneQueueView<J>) => Promise<T>,
  join?: { payload: J; taken: () => Promise<T> },
): Promise<T> {
  const timeoutMs = ctx.settings.lockTimeoutMs;
  let byZone = queues.get(ctx.pool);
  if (!byZone) queues.set(ctx.pool, (byZone = new Map()));
  let q = byZone.get(zone);
  if (!q) byZone.set(zone, (q = { busy: false, waiters: [] }));
  const queue = q;
  const started = performance.now();
  if (queue.busy) {
    let timer: NodeJS.Timeout | undefined;
    const waiter: Waiter = { wake: () => undefined, ...(join ? { joinable: join.payload } : {}) };
    const turn = await new Promise<boolean | 'timeout'>((resolve) => {
      waiter.wake = (t) => {
        clearTimeout(timer);
        resolve(t);
      };
      timer = setTimeout(() => {
        const at = queue.waiters.indexOf(waiter);
        if (at >= 0) queue.waiters.splice(at, 1);
        resolve('timeout');
      }, timeoutMs);
      queue.waiters.push(waiter);
    });
    if (turn === 'timeout') throw lockTimeout(ctx, zone, timeoutMs);
    if (!turn) return join!.taken(); // a holder took it over: its answer is the holder's to give
  }
  queue.busy = true;
  const view: ZoneQueueView<J> = {
    next: () => queue.waiters[0]?.joinable as J | undefined,
    take: (payload) => {
      const w = queue.waiters[0];
      if (!w || w.joinable === undefined || w.joinable !== payload) return false;
      queue.waiters.shift();
      w.wake(false);
      return true;
    },
  };
  try {
    return await holdersOf(ctx.pool).run(() => {
      // The time queued (for the zone, then for a turn) counts towards the lock timeout.
      const left = Math.max(1, Math.round(timeoutMs - (performance.now() - started)));
      // Its OVH calls go through fence.ovh: this zone's share of the rate, the fence before each write.
      return store.withZoneLock(ctx.pool, zone, { lockTimeoutMs: left }, (tx) => fenced(ctx, zone, tx, (t, fence) => fn(t, fence, view)));
    });
  } catch (e) {
    throw e instanceof store.LockTimeoutError && e.zone === zone ? lockTimeout(ctx, zone, timeoutMs) : e;
  } finally {
    const next = queue.waiters.shift();
    if (next) next.wake(true);
    else {
      queue.busy = false;
      if (byZone.get(zone) === queue) byZone.delete(zone);
    }
  }
}

/** The lock timeout's error, naming why when this process knows: the zone is settling (core/zones/settling.ts). */
function lockTimeout(ctx: CoreContext, zone: string, timeoutMs: number): store.LockTimeoutError {
  const settling = settlingOf(ctx, zone);
  return settling ? new store.LockTimeoutError(zone, timeoutMs, `${describeSettling(settling)}; try again then`) : new store.LockTimeoutError(zone, timeoutMs);
}

/**
 * Runs fn under the zone lock `tx` holds with the zone's fence: every OVH write fn makes (apply,
 * undo, recovery) through `fence.ovh` is sent only while that lock is still held (core/zones/fence.ts).
 */
export async function fenced<T>(ctx: CoreContext, zone: string, tx: pg.PoolClient, fn: (tx: pg.PoolClient, fence: ZoneFence) => Promise<T>): Promise<T> {
  return fn(tx, await ZoneFence.open(ctx, tx, zone));
}

/** store.tryZoneLock (for background jobs) with the zone's fence in force, like withZoneLockQueued. */
export async function tryZoneLockFenced<T>(ctx: CoreContext, zone: string, fn: (tx: pg.PoolClient, fence: ZoneFence) => Promise<T>): Promise<T | undefined> {
  return store.tryZoneLock(ctx.pool, zone, (tx) => fenced(ctx, zone, tx, fn));
}
