/**
 * The plan of one batch of a request (DNSPLANE_APPLY_BATCH): its first whole record sets up to the
 * batch size, the rest left for the next batch, and that rest carried to the next batch, which plans
 * from it when the zone has not moved since (prepare.ts). Pure: no I/O.
 */
import { endpointKey } from '../../dns/endpoint.js';
import type { Change } from '../../dns/types.js';
import { operationSetKey, operationsByRecordSet } from '../../ovh/ops.js';
import type { CoreContext } from '../context.js';
import type { ZonePlan } from '../plan/plan.js';

/** DNSPLANE_APPLY_BATCH's default. */
export const DEFAULT_APPLY_BATCH = 100;

/**
 * The first batch of a zone plan: whole record sets, in the plan's order with the sets that only
 * delete first, until at least `max` operations (a set larger than `max` is a batch of its own).
 * The plan itself when it is no larger than `max` (or `max` is 0: batching off).
 */
export function firstBatch(zone: string, plan: ZonePlan, max: number): ZonePlan {
  if (max <= 0 || plan.operations.length <= max) return plan;
  const bySet = operationsByRecordSet(zone, plan.operations);
  const deleteOnly = (k: string) => bySet.get(k)?.every((op) => op.method === 'DELETE') === true;
  const changeKey = (c: Change) => endpointKey(c.after ?? c.before!);
  const ordered = [...plan.changes.filter((c) => deleteOnly(changeKey(c))), ...plan.changes.filter((c) => !deleteOnly(changeKey(c)))];
  const chosen = new Set<string>();
  const changes: Change[] = [];
  let n = 0;
  for (const c of ordered) {
    if (n >= max) break;
    const k = changeKey(c);
    changes.push(c);
    if (!chosen.has(k)) {
      chosen.add(k);
      n += bySet.get(k)?.length ?? 0;
    }
  }
  return { ...plan, changes, operations: plan.operations.filter((op) => chosen.has(operationSetKey(zone, op))) };
}

/** A plan without a batch of it (the batch's changes and operations are some of the plan's own objects). */
export function without(plan: ZonePlan, batch: ZonePlan): ZonePlan {
  const changes = new Set(batch.changes);
  const operations = new Set(batch.operations);
  return { ...plan, changes: plan.changes.filter((c) => !changes.has(c)), operations: plan.operations.filter((op) => !operations.has(op)), conflicts: [] };
}

/**
 * The rest of a request's plan after one of its batches, and the generation that batch committed. The
 * next batch plans from it instead of reading and diffing the whole zone again — what a zone holds at
 * a generation never changes, so if the zone is still at that generation, re-planning the request
 * would give exactly this — and plans again from the zone otherwise (another apply, a drift check or
 * an admin changed it in between).
 */
export interface PlanRest {
  generation: bigint;
  plan: ZonePlan;
}

/**
 * The batch number a journal row and a log line carry: set when the request goes in batches (a later
 * batch, or a first one that filled the batch size), absent for a request applied in one go.
 */
export function batchNumber(ctx: CoreContext, index: number, operations: number): number | undefined {
  return index > 1 || operations >= (ctx.settings.applyBatch ?? DEFAULT_APPLY_BATCH) ? index : undefined;
}
