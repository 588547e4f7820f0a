/**
 * Planning one member of a group under the zone lock, and every refusal that needs no OVH call: the
 * plan is recomputed against the zone's view in memory at the generation the lock's transaction sees
 * (core/reads/zone-memory.ts; it holds what the group's earlier members did), or taken from the rest its
 * request's previous batch left; then a stale stored plan, an all-or-nothing
 * request with conflicts, the change threshold, nothing to change, dry run and the tenant's write
 * quota are answered here.
 */
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { PermissionDeniedError, StalePlanError } from '../errors.js';
import { thresholdRefusal, zoneThreshold } from '../plan/guard.js';
import { takeWrites } from '../tenants/write-quota.js';
import { computeLockedZonePlan, type ZonePlan } from '../plan/plan.js';
import { samePlan, staleWhy } from '../plan/stored.js';
import { Slicer } from '../slices.js';
import { keptZoneMemory } from '../reads/zone-memory.js';
import { firstBatch, without } from './batch-plan.js';
import { dryRunApply } from './dry-run.js';
import type { Group, Member, Outcome, ToSend } from './group.js';
import { touchedNames } from './ops.js';
import { recordStatedChecks } from './health-checks.js';
import { recordWithoutCalls } from './send.js';
import type { ZoneApplyResult } from './result.js';

/** Around one member's planning: an error there is that member's alone. */
const PLAN_SAVEPOINT = 'coalesced_plan';

/** A member planned under the lock: answered without sending (stale, refused, no changes, dry run, its planning failed), or to send. */
export type Prepared = Outcome | { send: ToSend };

/**
 * Plans one member under the lock (against the zone's view: what the group's earlier members did
 * included) and decides what needs no call.
 */
export async function prepareMember(ctx: CoreContext, group: Group, member: Member): Promise<Prepared> {
  const { zone, tx } = group;
  let full: ZonePlan;
  try {
    await store.savepoint(tx, PLAN_SAVEPOINT);
    full = (await fromPlanRest(ctx, group, member)) ?? (await planLocked(ctx, group, member));
    await store.releaseSavepoint(tx, PLAN_SAVEPOINT);
  } catch (e) {
    // This member's error alone, unless the transaction itself is gone (then the group stops).
    await store.rollbackToSavepoint(tx, PLAN_SAVEPOINT).then(
      () => store.releaseSavepoint(tx, PLAN_SAVEPOINT),
      () => {
        throw e;
      },
    );
    return { error: e };
  }
  const groupBase = (group.base ??= full.baseGeneration);
  const plan = member.index === 1 ? full : { ...full, conflicts: [] }; // conflicts are reported once
  const batch = firstBatch(zone, plan, member.max);
  const more = batch.operations.length < plan.operations.length;
  const rest = more ? without(plan, batch) : plan;
  const answer = (result: ZoneApplyResult): Prepared => ({ step: { result, more } });
  const unsent = { zone, generation: plan.baseGeneration, calls: [], changes: plan.changes, conflicts: plan.conflicts };
  const { stored, routed, tenant } = member;
  if (stored) {
    // Stale when what the plan touches changed since it was made — the record sets at its names, their
    // ownership and withdrawn targets, the sets its tenant owns (a sync deletes those it no longer
    // wants): the plan recomputed now, under the lock and after the group's earlier members, must be
    // the one stored (its digest, the base generation left out). A change elsewhere in the zone (other
    // tenants' applies, a target's health state Records shows) leaves it valid: in a zone that a thousand
    // clusters write, a plan judged by the zone's generation would go stale before anyone applied it.
    if (!(await samePlan(plan, stored, new Slicer()))) {
      const why =
        plan.baseGeneration !== groupBase
          ? `an apply just before it (coalesced with it) changed what the plan touches in zone ${zone}`
          : staleWhy(zone, stored.baseGeneration, plan.baseGeneration);
      return answer({ ...unsent, status: 'stale', error: new StalePlanError(`${why}; nothing was sent, make a new plan`) });
    }
  }
  if (routed.kind === 'desired' && routed.allOrNothing && plan.conflicts.length > 0) {
    const what = plan.conflicts.map((c) => `${c.endpoint.dnsName} ${c.endpoint.recordType}`).join(', ');
    return answer({
      ...unsent,
      status: 'refused',
      error: new PermissionDeniedError(
        'endpoints',
        `${plan.conflicts.length} record set(s) in zone ${zone} conflict (${what}); the request is all or nothing, so nothing was sent`,
      ),
    });
  }
  // The change threshold, judged on the plan recomputed under the lock (core/plan/guard.ts).
  const overThreshold = thresholdRefusal(ctx, tenant, zone, plan.threshold, routed.approval !== undefined);
  if (overThreshold) return answer({ ...unsent, status: 'refused', error: overThreshold });
  if (plan.operations.length === 0) {
    if (ctx.settings.dryRun) return answer({ ...unsent, status: 'no_changes' });
    // Changes with no call (withdrawn targets, core/withdrawals/withdrawals.ts): recorded under the lock, no refresh.
    const rowsOnly = routed.kind === 'withdraw' ? routed.byZone.get(zone)!.pending() : plan.changes.length > 0;
    const recorded = rowsOnly ? await recordWithoutCalls(ctx, group, member, plan) : undefined;
    if (recorded) return answer(recorded);
    // A change of checks alone is still recorded (an ownership change, generation + 1; core/apply/health-checks.ts).
    const generation = await recordChecksAlone(group, member);
    return answer({ ...unsent, ...(generation === undefined ? {} : { generation }), status: 'no_changes' });
  }
  if (ctx.settings.dryRun) return answer(dryRunApply(ctx, tenant, plan));
  // The tenant's write quota (core/tenants/write-quota.ts), judged at the request's first batch on the
  // whole plan, so that an apply over it sends nothing at all (its later batches are covered by that
  // take); a withdrawal or its restore is dnsplane's doing, never counted.
  const overQuota = routed.kind === 'withdraw' || member.index > 1 ? undefined : await takeWrites(ctx, tenant, zone, plan.operations);
  if (overQuota) return answer({ ...unsent, status: 'refused', error: overQuota });
  return { send: { plan: batch, more, rest, names: touchedNames(batch.operations) } };
}

/** The checks a member states with nothing to send (core/apply/health-checks.ts): written, the generation bumped when any changed. */
async function recordChecksAlone(group: Group, member: Member): Promise<bigint | undefined> {
  const { zone, tx } = group;
  const sets = await recordStatedChecks(tx, zone, member.tenant.id, member.routed);
  if (sets.length === 0) return undefined;
  const generation = await store.bumpGeneration(tx, zone);
  await store.notifyZoneChanged(tx, zone, generation, { ids: [], sets });
  if (group.memory) {
    group.memory.replaceOwnership(sets, await store.listOwnershipForSets(tx, zone, sets));
    group.memory.generation = generation;
  }
  return generation;
}

/**
 * The member's plan against the zone's view in memory (core/reads/zone-memory.ts) as the group's earlier
 * members left it: the group keeps that view, and writes into it what each member changes.
 */
async function planLocked(ctx: CoreContext, group: Group, member: Member): Promise<ZonePlan> {
  const { plan, memory } = await computeLockedZonePlan(ctx, group.tx, member.tenant, group.zone, member.routed);
  group.memory = memory;
  return plan;
}

/**
 * The plan of a later batch from the rest its previous batch left (PlanRest), when this member is the
 * first of its transaction and the zone is still at the generation that batch committed; undefined
 * otherwise (then the zone is planned again). The change threshold is judged again, on the rest,
 * with the owned sets and the limit as they are now.
 */
async function fromPlanRest(ctx: CoreContext, group: Group, member: Member): Promise<ZonePlan | undefined> {
  const { carried } = member;
  const { zone, tx } = group;
  if (!carried || group.sent.length > 0 || group.failed.length > 0) return undefined;
  const now = await store.getZone(tx, zone);
  if (now?.generation !== carried.generation) return undefined;
  // The view the previous batch left, when it is at this generation (else the next member reads one).
  const kept = keptZoneMemory(ctx.pool, zone);
  if (kept?.generation === now.generation) group.memory = kept;
  const owned = await store.countOwnedSets(tx, zone, member.tenant.id);
  const threshold = await zoneThreshold(ctx, tx, member.tenant, zone, owned, carried.plan.changes, member.routed.force ?? false);
  ctx.log.debug(
    { zone, tenant: member.tenant.name, batch: member.index, generation: String(now.generation) },
    'batch planned from the rest of the previous one (zone unchanged since)',
  );
  return { ...carried.plan, baseGeneration: now.generation, threshold };
}
