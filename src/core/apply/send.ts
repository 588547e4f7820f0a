/**
 * Fenced sending of one member of a group: its intent journalled (undo.ts: autocommitted, fenced),
 * its operations sent in order, each only while the zone lock is still held (the OVH client runs the
 * zone's fence before every write attempt); then either recorded in the transaction (cache,
 * ownership, generation + 1: what the next member plans on), to be published by the group's refresh
 * (publish.ts), or — an operation failed — rolled back alone (rollback.ts). The lock lost, or a
 * rollback that cannot be finished, stops the whole group (stop.ts).
 */
import { messageOf } from '../../lib/error-message.js';
import { describeOperation } from '../../ovh/ops.js';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { ApplyFailedError, isDatabaseUnavailable, ShuttingDownError, ZoneLockLostError } from '../errors.js';
import type { Change } from '../../dns/types.js';
import { recordOwnership } from '../ownership/ownership.js';
import { recordStatedChecks } from './health-checks.js';
import type { OwnedSet } from '../reads/zone-memory.js';
import { batchNumber } from './batch-plan.js';
import { openGroup, type Group, type Member, type RolledBack, type ToSend } from './group.js';
import { isFenceRefusal, nameKey, send, statusOf, type Done, type Failure } from './ops.js';
import type { CallRecord, ZoneApplyResult } from './result.js';
import type { ZonePlan } from '../plan/plan.js';
import { rollBack } from './rollback.js';
import { lockLostError, stopGroup } from './stop.js';
import { intentFor, rowAfter, writeIntent } from './undo.js';

/** Sends one member's operations; sets its outcome when it was rolled back alone. Throws (the group stops) when its lock is lost, or when its rollback cannot be finished. */
export async function sendMember(ctx: CoreContext, group: Group, member: Member, toSend: ToSend): Promise<void> {
  const { zone, tx, fence, knownIds } = group;
  // Its operations (and their undo) take its own tenant's share of the rate: a coalesced member may be another tenant's.
  const ovh = group.ovh.scoped({ flow: { tenant: member.tenant.name } });
  const { plan, names } = toSend;
  const ops = plan.operations;
  await openGroup(group);
  const intent = await intentFor(tx, zone, {
    ops,
    names,
    batch: batchNumber(ctx, member.index, ops.length),
    summary: member.routed.origin,
    from: member.routed.from,
    account: ctx.accounts?.registry.accountOf(zone) ?? store.DEFAULT_ACCOUNT,
    approval: member.routed.approval,
    revertOf: member.routed.revertOf,
  });
  let journalId: string;
  try {
    journalId = await writeIntent(ctx, fence, { zone, tenantId: member.tenant.id, intent, ...(member.routed.planId ? { planId: member.routed.planId } : {}) });
  } catch (e) {
    if (!(e instanceof ZoneLockLostError) && !isDatabaseUnavailable(e)) throw e;
    throw new ApplyFailedError(`apply to zone ${zone} could not start: ${messageOf(e)}; nothing was sent: retry`, zone, true, []);
  }
  fence.lease(journalId);
  // The ids a lost POST's look-up must not take for the new record: it looks among the records of
  // the POST's own name and type only (OvhApi.createRecord), all of which are among the names this
  // apply touches, read above (`before`) — not the whole zone, which may hold 20,000 records.
  for (const r of intent.before) knownIds.add(r.id);
  const calls: CallRecord[] = [];
  const done: Done[] = [];
  let failure: Failure | undefined;
  const sendingSince = (group.sendingSince ??= performance.now());
  const stopping = () => ctx.lifecycle?.shouldStop(performance.now() - sendingSince) === true;

  for (const [index, op] of ops.entries()) {
    if (stopping()) {
      failure = { index, op, error: new ShuttingDownError(`dnsplane is shutting down`), notSent: true };
      break;
    }
    const passed = fence.writesAllowed;
    try {
      const created = await send(ovh, zone, op, knownIds);
      if (created) knownIds.add(created.id);
      done.push({ op, created });
      calls.push({ ...describeOperation(op), status: 200 });
    } catch (error) {
      // Refused by the fence before any attempt of it left: not sent at all.
      const notSent = isFenceRefusal(error) && fence.writesAllowed === passed;
      if (!notSent) calls.push({ ...describeOperation(op), status: statusOf(error), error: messageOf(error) });
      failure = { index, op, error, notSent };
      break;
    }
  }
  for (const n of names) group.names.add(nameKey(n));
  if (failure) {
    if (failure.error instanceof ZoneLockLostError || (fence.lost && failure.error === fence.lost)) {
      throw await stopGroup(ctx, group, lockLostError(ctx, { zone, ops, journalId, calls, done, failure }), member);
    }
    let rolledBack: RolledBack;
    try {
      rolledBack = await rollBack(ctx, ovh, group, { tenant: member.tenant, plan, journalId, done, calls, failure, before: intent.before });
    } catch (e) {
      throw await stopGroup(ctx, group, e, member);
    }
    group.failed.push(rolledBack);
    // The view as the rollback left the DB: its names' rows as re-read, the generation it bumped to.
    group.memory?.replaceSets(rolledBack.record.names, rolledBack.record.rows);
    if (group.memory) group.memory.generation = rolledBack.result.generation;
    member.outcome = { step: { result: rolledBack.result, more: toSend.more } };
    return;
  }
  // Recorded now, in the transaction, so that the next member of the group plans on it; undone with
  // the group (GROUP_SAVEPOINT) if the refresh fails.
  const after = cacheAfter(done);
  await updateCache(tx, zone, after);
  const written = after;
  // A withdraw/restore keeps ownership as it is and writes its withdrawal rows instead (core/withdrawals/withdrawals.ts).
  if (member.routed.kind === 'withdraw') await member.routed.byZone.get(zone)!.recorded(tx, journalId);
  else await recordOwnership(tx, zone, member.tenant, plan.changes);
  // The checks the request states, on the ownership rows just written (core/apply/health-checks.ts).
  const checked = await recordStatedChecks(tx, zone, member.tenant.id, member.routed);
  if (member.routed.kind === 'draft') {
    // A refresh of the served OVH API keeps, in the same transaction, the ids its records are served under.
    const records = new Map(intent.before.map((r) => [r.id, r] as const));
    for (const id of after.deletes) records.delete(id);
    for (const r of after.upserts) records.set(r.id, r);
    await member.routed.byZone.get(zone)!.recorded(tx, { records: [...records.values()].map((r) => ({ ...r, zone })), gone: after.deletes, more: toSend.more });
  }
  const generation = await store.bumpGeneration(tx, zone);
  const sets = [...changedSets(plan.changes), ...checked];
  // Another replica's view catches up on exactly these (core/reads/zone-memory.ts).
  await store.notifyZoneChanged(tx, zone, generation, { ids: [...written.upserts.map((r) => r.id), ...written.deletes], sets });
  // The zone's view, as the transaction now holds it: the rows just written, the ownership rows of
  // the sets changed (re-read: a shared set's other owners stay), the generation.
  if (group.memory) {
    group.memory.write(written.upserts, written.deletes, intent.before);
    group.memory.replaceOwnership(sets, await store.listOwnershipForSets(tx, zone, sets));
    group.memory.generation = generation;
  }
  group.sent.push({ ...toSend, member, journalId, calls, done, before: intent.before, generation });
  group.ops += ops.length;
}

/**
 * A member whose plan changes what dnsplane holds but calls nothing (a withdrawn target its owner no
 * longer desires, a second reason of a withdrawn target): recorded in the transaction — ownership or
 * withdrawal rows, generation + 1, a finished journal row with its reason — with no OVH call and no
 * refresh (core/withdrawals/withdrawals.ts).
 */
export async function recordWithoutCalls(ctx: CoreContext, group: Group, member: Member, plan: ZonePlan): Promise<ZoneApplyResult | undefined> {
  const { zone, tx } = group;
  // Written before the group's savepoint only, so that a failed refresh of the members after it does
  // not take it back; after a member that sent, it waits for the next apply (nothing is lost: the
  // same plan is made again).
  if (group.savepoint) return undefined;
  const summary = member.routed.origin ?? `${plan.changes.length} change(s) with no OVH call (withdrawn targets)`;
  const journalId = await store.insertAdminAction(tx, {
    zone,
    tenantId: member.tenant.id,
    intent: { kind: 'withdrawn-targets', summary, operations: [], names: [] },
    result: { summary, calls: [] },
  });
  if (member.routed.kind === 'withdraw') await member.routed.byZone.get(zone)!.recorded(tx, journalId);
  else await recordOwnership(tx, zone, member.tenant, plan.changes);
  const checked = await recordStatedChecks(tx, zone, member.tenant.id, member.routed);
  const generation = await store.bumpGeneration(tx, zone);
  const sets = [...changedSets(plan.changes), ...checked];
  await store.notifyZoneChanged(tx, zone, generation, { ids: [], sets });
  if (group.memory) {
    group.memory.replaceOwnership(sets, await store.listOwnershipForSets(tx, zone, sets));
    group.memory.generation = generation;
  }
  ctx.log.info({ zone, tenant: member.tenant.name, generation: String(generation), journalId }, 'recorded with no OVH call');
  return { zone, status: 'applied', generation, calls: [], changes: plan.changes, conflicts: plan.conflicts, journalId };
}

/** The record sets (as ownership names them) that changes touch. */
export function changedSets(changes: readonly Change[]): OwnedSet[] {
  return changes.map((c) => {
    const e = c.after ?? c.before!;
    return { dnsName: e.dnsName, recordType: e.recordType };
  });
}

/** What the operations that succeeded leave in the cache (undo.ts rowAfter: what each left). */
function cacheAfter(done: Done[]): { upserts: store.RecordRow[]; deletes: string[] } {
  const upserts: store.RecordRow[] = [];
  const deletes: string[] = [];
  for (const finished of done) {
    const row = rowAfter(finished);
    if (row) upserts.push(row);
    else if (finished.op.method === 'DELETE') deletes.push(finished.op.id);
  }
  return { upserts, deletes };
}

async function updateCache(tx: store.Queryable, zone: string, { upserts, deletes }: { upserts: store.RecordRow[]; deletes: string[] }): Promise<void> {
  if (deletes.length) await store.deleteRecords(tx, zone, deletes);
  if (upserts.length) await store.upsertRecords(tx, zone, upserts);
}
