/**
 * Recovery: applies that died, or lost their zone lock, with their journal row in flight are rolled
 * back by the zone's next lock holder before anything else (an apply, a drift check, a server start,
 * or this process in the background after it lost a lock), once none of their calls can still land.
 * The row's intent is read back by undo.ts (readIntent), and the names it touched are brought back by
 * reconcile.ts, as for the failed operation of a live apply.
 */
import { refreshPath } from '../../ovh/types.js';
import type { OvhApi } from '../../ovh/client.js';
import * as store from '../../store/index.js';
import { messageOf } from '../../lib/error-message.js';
import type { CoreContext } from '../context.js';
import { ShuttingDownError, ZoneLockLostError } from '../errors.js';
import type { ZoneFence } from '../zones/fence.js';
import { sleepUnlessStopping } from '../lifecycle.js';
import { toRow } from '../zones/zones.js';
import { tryZoneLockFenced, withZoneLockQueued } from '../zones/lock-queue.js';
import { journalPool, type TouchedName } from './ops.js';
import { readNames, reconcileNames } from './reconcile.js';
import type { CallRecord } from './result.js';
import { readIntent, stageOf } from './undo.js';

/**
 * Applies that died, or lost their zone lock, with their journal row in_flight. Holding the zone lock
 * does not prove they stopped (a lock is lost when its session ends, while its holder may still run):
 * each row is first waited for (waitForHolder: until none of its holder's calls can still land) and
 * taken over (our lease, fenced). Then it is rolled back —
 * its names re-read from OVH, then whatever of its operations OVH shows done is undone, and the zone
 * is published again if the dead apply may have published or anything had to be undone (a refresh by
 * someone else may have published its operations meanwhile) — so that the draft is never left
 * half-applied (the next refresh, by anyone, would publish it) and the records it created are not left
 * without an owner. The cache of those names then holds what OVH holds. Runs before anything else
 * under the lock: in every apply, every drift check, and at every server start (recoverAll).
 *
 * A compensating call that fails throws: the transaction is rolled back, the row stays in_flight, and
 * the next holder of the lock tries again. Its OVH calls go through `ovh`: the fence's client, or one
 * scoped further (an apply's group: its first member's share of the rate).
 */
export async function recoverInFlight(ctx: CoreContext, tx: store.Queryable, zone: string, fence: ZoneFence, ovh: OvhApi = fence.ovh): Promise<number> {
  const rows = await store.listInFlight(tx, zone);
  if (rows.length === 0) return 0;
  if (ctx.settings.dryRun) {
    // Rolling back writes to OVH; a dry-run server writes nothing and leaves that to a live one.
    ctx.log.warn({ zone, journal: rows.map((r) => r.id) }, 'dry run: applies that died in flight are left for a server without DNSPLANE_DRY_RUN to roll back');
    return 0;
  }
  const done: Array<{ row: store.JournalEntry; result: RecoveryResult }> = [];
  const leased: string[] = [];
  try {
    for (const row of rows) {
      // Its holder may still be running (it lost its lock, it did not die): wait until none of its
      // calls can still land, then take the row over (our lease, fenced) before touching OVH.
      await waitForHolder(ctx, tx, zone, row);
      if (!(await store.takeOverJournal(journalPool(ctx), row.id, fence.journalFence()))) {
        throw (fence.lost ??= new ZoneLockLostError(zone, 'the database no longer shows its session holding it'));
      }
      fence.lease(row.id);
      leased.push(row.id);
      done.push({ row, result: await rollBackDead(ctx, ovh, tx, zone, row) });
    }
    // One refresh for all the rows that need the zone published again (rollBackDead), sent while
    // their leases still hold: a group of coalesced applies that died is published once, not per row.
    const publishing = done.filter((rolledBack) => rolledBack.result.refreshed);
    if (publishing.length > 0) {
      await ovh.refresh(zone);
      publishing.at(-1)!.result.undo.push({ method: 'POST', path: refreshPath(zone), body: '', status: 204 });
    }
  } catch (e) {
    // This recovery stops: its leases end now (if it still holds the lock), the next holder retries at
    // once; the transaction rolls back, so every row stays in flight.
    for (const id of leased) fence.unlease(id);
    await store.renewJournalLease(journalPool(ctx), leased, fence.session, 0).catch(() => 0);
    throw e;
  }
  for (const { row, result } of done) {
    fence.unlease(row.id);
    await store.finishJournal(tx, row.id, 'recovered', { recoveredAt: new Date().toISOString(), ...result });
    ctx.log.warn(
      { zone, journal: row.id, names: result.names.length, undone: result.undo.length, refreshed: result.refreshed },
      'rolled back an apply that died in flight',
    );
  }
  const generation = await store.bumpGeneration(tx, zone);
  await store.notifyZoneChanged(tx, zone, generation);
  return rows.length;
}

/**
 * Waits (holding the zone lock) until none of the OVH calls of an in_flight row's holder can still
 * land: the holder may have lost its lock and still be running (store.recoveryWaitMs). Anything
 * that reads OVH to settle such a row (recovery, invalidating the zone) calls this first.
 */
export async function waitForHolder(ctx: CoreContext, tx: store.Queryable, zone: string, row: store.JournalEntry): Promise<void> {
  for (let ms = await store.recoveryWaitMs(tx, row.id); ms > 0; ms = await store.recoveryWaitMs(tx, row.id)) {
    ctx.log.warn(
      { zone, journal: row.id, holder: row.holder, waitMs: ms },
      'an apply in flight may still be sending (its holder lost the zone lock): waiting before settling it',
    );
    if (!(await sleepUnlessStopping(ctx.lifecycle, ms)))
      throw new ShuttingDownError(`dnsplane is shutting down; journal ${row.id} in zone ${zone} is left to the zone's next lock holder`);
  }
}

interface RecoveryResult {
  names: TouchedName[];
  /** The compensating calls, as sent. */
  undo: CallRecord[];
  refreshed: boolean;
  /** The dead apply's progress note, if any. */
  progress: store.JsonValue | null;
}

async function rollBackDead(ctx: CoreContext, ovh: OvhApi, tx: store.Queryable, zone: string, row: store.JournalEntry): Promise<RecoveryResult> {
  const intent = readIntent(row.intent);
  const stage = stageOf(row.result);
  const now = await readNames(ctx, ovh, tx, zone, intent.names);
  const undo: CallRecord[] = [];
  if (!intent.ops) {
    // An intent without its operations (written before rollback existed): re-read only.
    await store.replaceRecordsForNames(tx, zone, intent.names, now.map(toRow));
    return { names: intent.names, undo, refreshed: false, progress: row.result };
  }
  const knownIds = new Set((await store.listRecords(tx, zone)).map((r) => r.id));
  undo.push(...(await reconcileNames(ctx, ovh, tx, zone, { ops: intent.ops, before: intent.before, names: intent.names }, knownIds, now)));
  // The rolled-back draft must be published again (recoverInFlight sends one refresh for all its
  // rows), so that OVH serves what the cache holds, when the dead apply may have published (stage
  // refresh), and also whenever something had to be undone: its operations were in OVH's draft, and
  // a refresh by anyone else while they were there (a hand publish, an external-dns of its own, OVH
  // itself) published them. Only a refresh after the undo takes them out of the published zone;
  // when nothing had been published it is one redundant call.
  const refreshed = stage === 'refresh' || undo.length > 0;
  return { names: intent.names, undo, refreshed, progress: row.result };
}

/**
 * At start: roll back dead applies in every zone that has some. A zone whose lock is held is skipped:
 * its holder runs the same recovery first. A failure (OVH down) is logged, not fatal: the zone's next
 * lock holder tries again.
 */
export async function recoverAll(ctx: CoreContext): Promise<number> {
  let n = 0;
  for (const zone of await store.listZonesWithInFlight(ctx.pool)) n += await recoverZone(ctx, zone);
  return n;
}

/** recoverAll for one zone: the rows rolled back (0 when its lock is held: its holder does it). Never throws. */
export async function recoverZone(ctx: CoreContext, zone: string): Promise<number> {
  try {
    return (await tryZoneLockFenced(ctx, zone, (tx, fence) => recoverInFlight(ctx, tx, zone, fence))) ?? 0;
  } catch (e) {
    ctx.log.error({ zone, err: messageOf(e) }, "could not roll back the applies that died in flight; the zone's next apply or drift check tries again");
    return 0;
  }
}

/** Per context: the zones whose background recovery is scheduled. */
const healing = new WeakMap<CoreContext, Set<string>>();

/**
 * After an apply lost its zone lock (or the database went away under it), this process rolls the
 * zone's in-flight applies back itself, in the background, as soon as the database answers again:
 * so that what the apply sent does not wait for the zone's next apply or drift check (which would do
 * the same). Retries with backoff for about 5 minutes; stops when shutdown begins. Idempotent per zone.
 */
export function scheduleRecovery(ctx: CoreContext, zone: string): void {
  if (ctx.settings.dryRun) return;
  let zones = healing.get(ctx);
  if (!zones) healing.set(ctx, (zones = new Set()));
  if (zones.has(zone)) return;
  zones.add(zone);
  const task = (async () => {
    for (let attempt = 0; attempt < 20; attempt++) {
      if (!(await sleepUnlessStopping(ctx.lifecycle, Math.min(250 * 2 ** attempt, 15_000)))) return;
      try {
        const n = await withZoneLockQueued(ctx, zone, (tx, fence) => recoverInFlight(ctx, tx, zone, fence));
        if (n > 0) ctx.log.warn({ zone, recovered: n }, 'rolled back the applies left in flight after a lost zone lock');
        return;
      } catch (e) {
        ctx.log.warn({ zone, attempt: attempt + 1, err: messageOf(e) }, 'rolling back the applies left in flight failed; trying again');
      }
    }
  })().finally(() => zones.delete(zone));
  ctx.lifecycle?.track(task);
}
