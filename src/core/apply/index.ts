/**
 * Apply: what the rest of dnsplane calls (api/, webhook/, nsm/, core/drift/drift.ts, core/admin/) to
 * apply a stored plan or an inline request, and to roll back applies that died. Per zone, zones in
 * parallel, each on its own checked-out client:
 *  1. index.ts — refused while shutting down; a stored plan must be the tenant's, pending and not
 *     expired (approved by a second admin: not stopped by the threshold, core/plan/approvals.ts); each
 *     zone's outcome is settled into its own result, whatever the others did.
 *  2. batches.ts — the zone's request is applied in batches of at most DNSPLANE_APPLY_BATCH
 *     operations (batch-plan.ts cuts them), the lock released between batches; each batch measured.
 *  3. holder.ts — the batch joins the zone's in-process queue, then takes the advisory lock with the
 *     zone's fence in force (lock-queue.ts, core/zones/fence.ts), or is taken into the holder's group.
 *  4. recovery.ts — under the lock, first: applies left in flight are waited for and rolled back.
 *  5. prepare.ts — the plan is recomputed under the lock (ownership re-checked); a stale stored plan,
 *     conflicts of an all-or-nothing request, the change threshold, no changes and dry run
 *     (dry-run.ts) are answered without a call.
 *  6. send.ts — the intent is journalled in flight (undo.ts: autocommitted, fenced); the operations go
 *     out in order, each only while the lock is held (ops.ts); cache, ownership and generation + 1 are
 *     written into the transaction.
 *  7. group.ts, holder.ts — the next waiting apply joins the group when its record sets are disjoint
 *     from the group's and the bounds allow; it goes through 5 and 6 in turn.
 *  8. publish.ts — one refresh publishes the group; each journal row done; COMMIT (NOTIFY).
 *  9. rollback.ts — an operation failed: that member's successes are undone newest first (undo.ts),
 *     its names re-read and what OVH shows of the failed one undone (reconcile.ts), no refresh,
 *     generation + 1, journal failed. The refresh failed: publish.ts takes the group back to its
 *     savepoint and rolls every member back the same way.
 * 10. stop.ts — the lock lost, or a rollback that cannot finish: the group stops unpublished, its rows
 *     stay in flight, and the zone's next lock holder (step 4) rolls them back.
 * An apply counts iff its journal row is done. The answer's model is result.ts; operations are named
 * for people by messages.ts. A zone is never published half-applied.
 *
 * The frames a batch's work runs in, outermost first (holder.ts applyInGroup → runGroup):
 *  a. withZoneLockQueued (lock-queue.ts) — this process's FIFO queue per zone: one caller at a time
 *     takes a connection; the time queued counts towards DNSPLANE_LOCK_TIMEOUT; a coalescing holder
 *     may take a waiter over (its own callback then never runs).
 *  b. store.withZoneLock (store/lock.ts) — lock_timeout set, pg_advisory_xact_lock(zone) taken.
 *  c. withClientTransaction (store/internal.ts) — BEGIN on one pooled client … COMMIT / ROLLBACK; the
 *     lock is the transaction's, so it ends with it.
 *  d. fenced (lock-queue.ts) — the zone's fence opened on that session (core/zones/fence.ts ZoneFence);
 *     `fence.ovh` is the OVH client scoped to it (OvhApi.scoped, ovh/client/scope.ts): before every
 *     write attempt (retries included) it calls ZoneFence.beforeWrite, a `SELECT 1` on the lock's
 *     session. Nothing rides in async context: the client is handed down as an argument —
 *     HeldLock.ovh (the holder's, in its first member's share of the rate: recovery, the refresh, a
 *     rollback), a member's own client made from it in send.ts (its tenant's share), and from there to
 *     ops.ts send(), rollback.ts, reconcile.ts — so a reader sees at each call which fence a write
 *     goes through.
 * Inside them runGroup runs steps 4–10 and returns nothing: each member's answer is its `outcome`,
 * which applyInGroup returns (or throws), and a member taken over gets through its `answer` promise.
 */
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { ApplyFailedError, PermissionDeniedError, ResourceExhaustedError, ShuttingDownError, StalePlanError, ThresholdError } from '../errors.js';
import { approvalOf } from '../plan/approvals.js';
import { routeInput, type PlanInput } from '../plan/input.js';
import { getPlanWithRow } from '../plan/stored.js';
import type { Tenant } from '../tenants/tenants.js';
import { ensureSynced } from '../zones/zones.js';
import { applyZone } from './batches.js';
import type { ApplyResult, ZoneApplyResult } from './result.js';

export type { ApplyBatch, ApplyResult, CallRecord, ZoneApplyResult, ZoneApplyStatus } from './result.js';
export { NOT_SENT } from './dry-run.js';
export { recoverAll, recoverInFlight, recoverZone, waitForHolder } from './recovery.js';
/**
 * force (with planId): apply even over the change threshold, as PlanInput.force does. from: the client
 * address the request came from (behind a trusted proxy, the client's), written in its journal rows.
 */
export type ApplySource = ({ planId: string; force?: boolean } | { input: PlanInput }) & { from?: string };

/**
 * Applies a stored plan or an inline request. Zones are applied in parallel, each on its own, and the
 * result holds every zone's outcome, whatever happened to the others: an error inside one zone (OVH
 * refused, the lock was lost, the database went away) becomes that zone's `failed` result with its
 * error, so a zone that was applied and published is never hidden behind another zone's error.
 * Refused while dnsplane is shutting down (ShuttingDownError, nothing sent).
 */
export async function apply(ctx: CoreContext, tenant: Tenant, source: ApplySource): Promise<ApplyResult> {
  if (ctx.lifecycle?.stopping) throw new ShuttingDownError('dnsplane is shutting down; nothing was sent: retry (another replica, or this one once restarted)');
  const run = applySource(ctx, tenant, source);
  return ctx.lifecycle ? ctx.lifecycle.track(run) : run;
}

async function applySource(ctx: CoreContext, tenant: Tenant, source: ApplySource): Promise<ApplyResult> {
  if ('planId' in source) {
    const { plan: stored, row } = await getPlanWithRow(ctx, tenant, source.planId);
    if (stored.tenantId !== tenant.id)
      throw new PermissionDeniedError('planId', `plan "${stored.id}" belongs to tenant "${stored.tenant}"; only it may apply the plan`);
    if (stored.status !== 'pending') throw new StalePlanError(`plan "${stored.id}" is ${stored.status}; make a new plan`);
    if (stored.expiresAt.getTime() < Date.now()) {
      await store.setPlanStatus(ctx.pool, stored.id, 'expired');
      throw new StalePlanError(`plan "${stored.id}" expired at ${stored.expiresAt.toISOString()}; make a new plan`);
    }
    const routed = await routeInput(ctx, tenant, stored.input);
    if (source.force) routed.force = true;
    // Approved by a second admin (core/plan/approvals.ts): the threshold does not stop it; its journal rows name the approval.
    const approval = await approvalOf(ctx, row);
    if (approval) Object.assign(routed, { force: true, approval });
    if (stored.input.kind === 'changes' && stored.input.revertOf) routed.revertOf = stored.input.revertOf;
    routed.planId = stored.id;
    if (source.from !== undefined) routed.from = source.from;
    const settled = await Promise.all(
      stored.zones.map((zonePlan) => asZoneResult(zonePlan.zone, applyZone(ctx, { tenant, zone: zonePlan.zone, routed, stored: zonePlan }))),
    );
    const zones = settled.map((one) => one.result);
    // Every zone ended in an error before it did anything (a lock timeout, say): the plan stays pending.
    if (settled.every((one) => one.thrown) && zones.every((result) => result.calls.length === 0)) throw zones[0]!.error!;
    const ok = zones.every((result) => result.status === 'applied' || result.status === 'no_changes');
    // A dry run applied nothing: the plan stays pending. So does a plan the change threshold refused
    // with nothing sent anywhere: a second admin may approve it (core/plan/approvals.ts).
    if (!zones.some((result) => result.status === 'dry_run') && !refusedByThresholdAlone(zones))
      await store.setPlanStatus(ctx.pool, stored.id, ok ? 'applied' : zones.some((result) => result.status === 'stale') ? 'stale' : 'failed', {
        appliedAt: new Date(),
      });
    return { planId: stored.id, zones };
  }
  const routed = await routeInput(ctx, tenant, source.input);
  if (source.from !== undefined) routed.from = source.from;
  const zones = [...routed.byZone.keys()].sort();
  for (const zone of zones) await ensureSynced(ctx, zone);
  return { zones: (await Promise.all(zones.map((zone) => asZoneResult(zone, applyZone(ctx, { tenant, zone, routed }))))).map((one) => one.result) };
}

/** Some zone was refused by the change threshold, and every other had nothing to change: nothing was sent. */
function refusedByThresholdAlone(zones: readonly ZoneApplyResult[]): boolean {
  // The write quota's refusal too (core/tenants/write-quota.ts): applied later, once the quota refilled.
  const byThreshold = (r: ZoneApplyResult) =>
    r.status === 'refused' && (r.error instanceof ThresholdError || r.error instanceof ResourceExhaustedError) && r.calls.length === 0;
  return zones.some(byThreshold) && zones.every((r) => byThreshold(r) || r.status === 'no_changes');
}

/** A zone's apply, its error (if it threw) turned into a `failed` result with that error. */
async function asZoneResult(zone: string, applying: Promise<ZoneApplyResult>): Promise<{ result: ZoneApplyResult; thrown: boolean }> {
  try {
    return { result: await applying, thrown: false };
  } catch (e) {
    const error = e instanceof Error ? e : new Error(String(e));
    const calls = error instanceof ApplyFailedError && error.calls ? [...error.calls] : [];
    return { result: { zone, status: 'failed', generation: 0n, calls, changes: [], conflicts: [], error }, thrown: true };
  }
}
