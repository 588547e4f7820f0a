/**
 * Recovery: applies that died, or lost their zone lock, with their journal row in flight are rolled
 * back by the zone's next lock holder before anything else (an apply, a drift check, a server start,
 * or this process in the background after it lost a lock), once none of their calls can still land.
 * Also the targeted re-read and compensation a live apply's rollback uses (core/apply.ts).
 */
import { describeOperation, recordPath } from '../../ovh/ops.js';
import type { OvhOperation, OvhRecord } from '../../ovh/types.js';
import { refreshPath } from '../../ovh/types.js';
import * as store from '../../store/index.js';
import type { CallRecord } from './result.js';
import { answered, journalPool, messageOf, nameKey, send, sendable, type TouchedName } from './ops.js';
import type { CoreContext } from '../context.js';
import { ShuttingDownError, ZoneLockLostError } from '../errors.js';
import type { ZoneFence } from '../fence.js';
import { sleepUnlessStopping } from '../lifecycle.js';
import { readRecords } from '../read-records.js';
import { toRow, tryZoneLockFenced, withZoneLockQueued } from '../zones.js';

/**
 * What OVH holds now for these names: per name one filtered read (readRecords with
 * `?fieldType=&subDomain=`: the records themselves in OVH's expanded mode, else the ids and one GET per
 * id, in order). OVH's subDomain filter is loose (case-insensitive `ilike`; an empty one, for the apex,
 * may match every name): ids the cache holds under another name are not fetched, and only records of
 * the names asked for are returned. Never the whole zone, one GET at a time.
 */
export async function readNames(ctx: CoreContext, tx: store.Queryable, zone: string, names: readonly TouchedName[]): Promise<OvhRecord[]> {
  const wanted = new Set(names.map(nameKey));
  const cachedUnder = new Map((await store.listRecords(tx, zone)).map((r) => [r.id, nameKey(r)]));
  const seen = new Set<string>();
  const out: OvhRecord[] = [];
  const elsewhere = (id: string) => seen.has(id) || (cachedUnder.has(id) && !wanted.has(cachedUnder.get(id)!));
  for (const n of names) {
    const { records } = await readRecords(ctx, zone, { fieldType: n.fieldType, subDomain: n.subDomain }, { concurrency: 1, skip: elsewhere });
    for (const r of records) {
      if (seen.has(r.id)) continue;
      seen.add(r.id);
      if (wanted.has(nameKey(r))) out.push(r);
    }
  }
  return out;
}

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
 * the next holder of the lock tries again.
 */
export async function recoverInFlight(ctx: CoreContext, tx: store.Queryable, zone: string, fence: ZoneFence): Promise<number> {
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
      done.push({ row, result: await rollBackDead(ctx, tx, zone, row) });
    }
    // One refresh for all the rows that need the zone published again (rollBackDead), sent while
    // their leases still hold: a batch of coalesced applies that died is published once, not per row.
    const publishing = done.filter((d) => d.result.refreshed);
    if (publishing.length > 0) {
      await ctx.ovh.refresh(zone);
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
    ctx.log.warn({ zone, journal: row.id, names: result.names.length, undone: result.undo.length, refreshed: result.refreshed }, 'rolled back an apply that died in flight');
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
    ctx.log.warn({ zone, journal: row.id, holder: row.holder, waitMs: ms }, 'an apply in flight may still be sending (its holder lost the zone lock): waiting before settling it');
    if (!(await sleepUnlessStopping(ctx.lifecycle, ms))) throw new ShuttingDownError(`dnsplane is shutting down; journal ${row.id} in zone ${zone} is left to the zone's next lock holder`);
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

async function rollBackDead(ctx: CoreContext, tx: store.Queryable, zone: string, row: store.JournalEntry): Promise<RecoveryResult> {
  const intent = parseIntent(row.intent);
  const stage = isObject(row.result) ? row.result['stage'] : undefined;
  const now = await readNames(ctx, tx, zone, intent.names);
  const undo: CallRecord[] = [];
  if (!intent.ops) {
    // An intent without its operations (written before rollback existed): re-read only.
    await store.replaceRecordsForNames(tx, zone, intent.names, now.map(toRow));
    return { names: intent.names, undo, refreshed: false, progress: row.result };
  }
  undo.push(...(await reconcileNames(ctx, tx, zone, intent.ops, intent.before, intent.names, new Set((await store.listRecords(tx, zone)).map((r) => r.id)), now)));
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
 * Reads what OVH holds for `names` (unless given as `now`), sends the compensating operations for
 * `ops` (compensate), and writes the result into the cache for those names. Returns the calls sent.
 */
export async function reconcileNames(
  ctx: CoreContext,
  tx: store.Queryable,
  zone: string,
  ops: readonly OvhOperation[],
  before: readonly store.RecordRow[],
  names: TouchedName[],
  knownIds: Set<string>,
  now?: OvhRecord[],
): Promise<CallRecord[]> {
  const current = now ?? (await readNames(ctx, tx, zone, names));
  for (const r of current) knownIds.add(r.id);
  const rows = new Map(current.map((r) => [r.id, toRow(r)]));
  const sent: CallRecord[] = [];
  for (const op of compensate(zone, ops, before, current)) {
    const created = await send(ctx, zone, op, knownIds);
    sent.push({ ...describeOperation(op), status: 200 });
    if (op.method === 'DELETE') rows.delete(op.id);
    else if (op.method === 'PUT') rows.set(op.id, toRow({ ...op.before, target: answered(op.before.fieldType, op.body.target), ttl: op.body.ttl }));
    else if (created) {
      knownIds.add(created.id);
      rows.set(created.id, toRow(created));
    }
  }
  await store.replaceRecordsForNames(tx, zone, names, [...rows.values()]);
  return sent;
}

/**
 * The operations that take the touched names from what OVH holds now back to what they held before
 * the dead apply, touching only what that apply could have done:
 * - a record it updated (PUT) that no longer holds its old value gets it back (PUT);
 * - a record it deleted that is gone is created again — unless a record of the same name, type and
 *   target that was not there before exists (an undo that was under way already re-created it);
 * - a record that was not there before and holds the target of one of its creations is deleted (one
 *   per creation). Records of those names made by someone else are left alone.
 * Ordered DELETE, PUT, POST, like every apply.
 */
function compensate(zone: string, ops: readonly OvhOperation[], before: readonly store.RecordRow[], now: readonly OvhRecord[]): OvhOperation[] {
  const beforeIds = new Set(before.map((r) => r.id));
  const nowById = new Map(now.map((r) => [r.id, r]));
  const unknown = now.filter((r) => !beforeIds.has(r.id));
  const take = (match: (r: OvhRecord) => boolean): OvhRecord | undefined => {
    const i = unknown.findIndex(match);
    return i < 0 ? undefined : unknown.splice(i, 1)[0];
  };
  const same = (a: { subDomain: string; fieldType: string; target: string }, b: { subDomain: string; fieldType: string; target: string }) =>
    a.subDomain.toLowerCase() === b.subDomain.toLowerCase() && a.fieldType === b.fieldType && sendable(a.fieldType, a.target).toLowerCase() === sendable(b.fieldType, b.target).toLowerCase();

  const deletes: OvhOperation[] = [];
  const puts: OvhOperation[] = [];
  const posts: OvhOperation[] = [];
  for (const op of ops) {
    if (op.method === 'DELETE' && !nowById.has(op.id)) {
      if (take((r) => same(r, op.before))) continue;
      const b = op.before;
      posts.push({ method: 'POST', path: recordPath(zone), body: { fieldType: b.fieldType, subDomain: b.subDomain, target: sendable(b.fieldType, b.target), ttl: b.ttl } });
    }
  }
  for (const op of ops) {
    if (op.method === 'PUT') {
      const cur = nowById.get(op.id);
      if (cur && (!same(cur, op.before) || cur.ttl !== op.before.ttl)) {
        puts.push({ method: 'PUT', path: op.path, id: op.id, body: { target: sendable(op.before.fieldType, op.before.target), ttl: op.before.ttl }, before: cur });
      }
    } else if (op.method === 'POST') {
      const made = take((r) => same(r, op.body));
      if (made) deletes.push({ method: 'DELETE', path: recordPath(zone, made.id), id: made.id, before: made });
    }
  }
  return [...deletes, ...puts, ...posts];
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The journal intent, checked: a malformed one is recovered as "re-read these names" only. */
function parseIntent(v: unknown): { names: TouchedName[]; ops?: OvhOperation[]; before: store.RecordRow[] } {
  const o = isObject(v) ? v : {};
  const names = (Array.isArray(o['names']) ? o['names'] : [])
    .filter(isObject)
    .filter((n): n is Record<string, string> => typeof n['subDomain'] === 'string' && typeof n['fieldType'] === 'string')
    .map((n) => ({ subDomain: n['subDomain']!, fieldType: n['fieldType']! }));
  const before = (Array.isArray(o['before']) ? o['before'] : []).filter(
    (r): r is store.RecordRow => isObject(r) && typeof r['id'] === 'string' && typeof r['subDomain'] === 'string' && typeof r['fieldType'] === 'string' && typeof r['target'] === 'string' && typeof r['ttl'] === 'number',
  );
  const ops = Array.isArray(o['ops']) && Array.isArray(o['before']) ? o['ops'].filter(isOperation) : undefined;
  return { names, before, ...(ops && ops.length === (o['ops'] as unknown[]).length ? { ops } : {}) };
}

function isOperation(v: unknown): v is OvhOperation {
  if (!isObject(v) || typeof v['path'] !== 'string') return false;
  const rec = (r: unknown) => isObject(r) && typeof r['subDomain'] === 'string' && typeof r['fieldType'] === 'string' && typeof r['target'] === 'string' && typeof r['ttl'] === 'number';
  switch (v['method']) {
    case 'POST':
      return rec(v['body']);
    case 'PUT':
      return typeof v['id'] === 'string' && isObject(v['body']) && rec(v['before']);
    case 'DELETE':
      return typeof v['id'] === 'string' && rec(v['before']);
    default:
      return false;
  }
}

/**
 * At start: roll back dead applies in every zone that has some. A zone whose lock is held is skipped:
 * its holder runs the same recovery first. A failure (OVH down) is logged, not fatal: the zone's next
 * lock holder tries again.
 */
export async function recoverAll(ctx: CoreContext): Promise<number> {
  let n = 0;
  for (const zone of await store.listZonesWithInFlight(ctx.pool)) {
    try {
      n += (await tryZoneLockFenced(ctx, zone, (tx, fence) => recoverInFlight(ctx, tx, zone, fence))) ?? 0;
    } catch (e) {
      ctx.log.error({ zone, err: messageOf(e) }, 'could not roll back the applies that died in flight; the zone\'s next apply or drift check tries again');
    }
  }
  return n;
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
