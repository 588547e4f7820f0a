/**
 * Which zones dnsplane manages, and the first sync of a zone's cache (list ids, GET each with bounded
 * concurrency, under the zone lock so that concurrent first readers sync once).
 */
import type pg from 'pg';
import * as store from '../store/index.js';
import { withOvhFlow } from '../ovh/ratelimit.js';
import type { OvhRecord } from '../ovh/types.js';
import type { CoreContext } from './context.js';
import { NotFoundError } from './errors.js';
import { readCacheOf } from './read-cache.js';
import { readRecords } from './read-records.js';
import { ZoneFence } from './fence.js';
import { describeSettling, settlingOf } from './settling.js';
import { Slicer } from './slices.js';

export { mapLimit } from './read-records.js';

/** Registers the managed zones in the database; asks OVH for the list only when none is configured. */
export async function registerZones(ctx: CoreContext): Promise<string[]> {
  const zones = ctx.settings.zones ?? (await ctx.ovh.listZones());
  await store.ensureZones(ctx.pool, zones);
  ctx.log.info({ zones, source: ctx.settings.zones ? 'DNSPLANE_ZONES' : 'GET /domain/zone' }, 'managing zones');
  return zones;
}

/** The managed zones' names, from the shared fresh read of core/read-cache.ts (on every request's path). */
export async function managedZoneNames(ctx: CoreContext): Promise<string[]> {
  return [...(await readCacheOf(ctx).zoneStates.get()).keys()];
}

/** Makes sure the zone's cache holds OVH's records; costs OVH calls only the first time. */
export async function ensureSynced(ctx: CoreContext, zone: string): Promise<store.Zone> {
  const z = await store.getZone(ctx.pool, zone);
  if (!z) throw new NotFoundError('zone', zone, `zone "${zone}" is not managed by dnsplane`);
  if (z.state === 'synced') return z;
  const waiting = performance.now();
  // The sync's OVH calls are this zone's in the rate limiter's fair share (ovh/ratelimit.ts).
  return withOvhFlow({ zone }, () => withZoneLockQueued(ctx, zone, async (tx) => {
    ctx.metrics?.lockWaited(zone, 'sync', (performance.now() - waiting) / 1000);
    const again = await store.getZone(tx, zone);
    if (again && again.state === 'synced') return again; // someone synced it while we waited
    ctx.metrics?.cacheRead(zone, 'miss');
    await syncZone(ctx, tx, zone);
    return (await store.getZone(tx, zone))!;
  }));
}

/**
 * Reads the whole zone from OVH into the cache (readRecords: a page of records per call in OVH's
 * expanded mode, else the ids and one GET per record). The caller holds the zone lock. The SOA serial
 * is read first: a change published while the records are read moves the serial past the one
 * recorded, so the next drift check reads the zone again instead of trusting a mixed read.
 */
export async function syncZone(ctx: CoreContext, tx: store.Queryable, zone: string): Promise<number> {
  const started = performance.now();
  const soa = await ctx.ovh.getSoa(zone);
  const { records, calls, mode } = await readRecords(ctx, zone, {}, {
    progress: (done, total) => {
      if (done % 500 === 0) ctx.log.info({ zone, done, total }, 'syncing zone');
    },
  });
  // 50,000 records made rows in slices (store writes them a batch per statement): nothing holds the event loop.
  await store.replaceZoneRecords(tx, zone, await new Slicer().map(records, toRow, 1024));
  await store.markSynced(tx, zone, { soaSerial: BigInt(soa.serial) });
  const generation = await store.bumpGeneration(tx, zone);
  await store.notifyZoneChanged(tx, zone, generation);
  ctx.log.info({ zone, records: records.length, calls: calls + 1, read: mode, generation: String(generation), ms: Math.round(performance.now() - started) }, 'zone synced');
  return records.length;
}

export function toRow(r: OvhRecord): store.RecordRow {
  return { id: r.id, subDomain: r.subDomain, fieldType: r.fieldType, target: r.target, ttl: r.ttl };
}

export function toOvhRecord(zone: string, r: store.RecordRow): OvhRecord {
  return { ...r, zone };
}

// --- the zone lock, queued in-process first ---

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
    const left = Math.max(1, Math.round(timeoutMs - (performance.now() - started)));
    // Who its OVH calls are for (ovh/ratelimit.ts withOvhFlow) is the caller's to set, once, around this.
    return await store.withZoneLock(ctx.pool, zone, { lockTimeoutMs: left }, (tx) => fenced(ctx, zone, tx, (t, fence) => fn(t, fence, view)));
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

/** The lock timeout's error, naming why when this process knows: the zone is settling (core/settling.ts). */
function lockTimeout(ctx: CoreContext, zone: string, timeoutMs: number): store.LockTimeoutError {
  const settling = settlingOf(ctx, zone);
  return settling ? new store.LockTimeoutError(zone, timeoutMs, `${describeSettling(settling)}; try again then`) : new store.LockTimeoutError(zone, timeoutMs);
}

/**
 * Runs fn under the zone lock `tx` holds with the zone's fence in force: every OVH write fn makes
 * (apply, undo, recovery) is sent only while that lock is still held (core/fence.ts).
 */
export async function fenced<T>(ctx: CoreContext, zone: string, tx: pg.PoolClient, fn: (tx: pg.PoolClient, fence: ZoneFence) => Promise<T>): Promise<T> {
  const fence = await ZoneFence.open(ctx, tx, zone);
  return ctx.ovh.guarded(fence, () => fn(tx, fence));
}

/** store.tryZoneLock (for background jobs) with the zone's fence in force, like withZoneLockQueued. */
export async function tryZoneLockFenced<T>(ctx: CoreContext, zone: string, fn: (tx: pg.PoolClient, fence: ZoneFence) => Promise<T>): Promise<T | undefined> {
  return store.tryZoneLock(ctx.pool, zone, (tx) => fenced(ctx, zone, tx, fn));
}
