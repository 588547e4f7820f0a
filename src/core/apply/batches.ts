/**
 * One zone's apply as a request cut into batches of at most DNSPLANE_APPLY_BATCH operations: a
 * request larger than that is applied as successive batches, each one a complete apply of its own —
 * under the zone lock, re-planned from the request against the zone as it is then (ownership and
 * conflicts re-checked), journalled, sent, published by its own refresh, recorded — and the lock is
 * released between batches, so that other applies of the zone interleave and wait at most about one
 * batch. A batch is whole record sets (a set's operations never straddle two batches); deletions go
 * in the first batches (a CNAME replacing an A at the same name): batch-plan.ts. The result says
 * which batches were applied (`batches`); a batch that fails is rolled back alone, the earlier ones
 * stay applied and published, and the error says so: the caller (external-dns on its next loop)
 * plans the rest again. A stored plan is checked for staleness before its first batch only: the
 * later ones re-plan the same request, as the first one did under the lock.
 * Each batch is measured (duration, outcome, lock wait) and a database lost under it is translated here.
 */
import { messageOf } from '../../lib/error-message.js';
import type { CoreContext } from '../context.js';
import { ApplyFailedError, isDatabaseUnavailable, isRetryable, ShuttingDownError } from '../errors.js';
import type { ZonePlan } from '../plan/plan.js';
import type { RoutedInput } from '../plan/input.js';
import type { Tenant } from '../tenants/tenants.js';
import { DEFAULT_APPLY_BATCH, type PlanRest } from './batch-plan.js';
import type { BatchAnswer, ZoneBatch } from './group.js';
import { applyInGroup } from './holder.js';
import { scheduleRecovery } from './recovery.js';
import type { ApplyBatch, CallRecord, ZoneApplyResult } from './result.js';

/** A bound on the batches of one request (5,000 endpoints per request, a few operations each). */
const MAX_BATCHES = 500;

/** What one zone of an apply asks: who, the routed request, and the stored plan's zone plan when it applies one. */
export interface ZoneRequest {
  tenant: Tenant;
  zone: string;
  routed: RoutedInput;
  stored?: ZonePlan;
}

/** Applies one zone of a request, batch after batch; the zone's answer. */
export async function applyZone(ctx: CoreContext, request: ZoneRequest): Promise<ZoneApplyResult> {
  const { zone } = request;
  // A request that says it is uncut (a DNS UPDATE, a withdraw: core/plan/input.ts RoutedInput) is one batch.
  const max = 'uncut' in request.routed ? 0 : (ctx.settings.applyBatch ?? DEFAULT_APPLY_BATCH);
  const batches: ApplyBatch[] = [];
  let merged: ZoneApplyResult | undefined;
  let carried: PlanRest | undefined;
  for (let index = 1; ; index++) {
    let step: BatchAnswer;
    try {
      step = await applyBatchMeasured(ctx, {
        tenant: request.tenant,
        zone,
        routed: request.routed,
        ...(index === 1 && request.stored ? { stored: request.stored } : {}),
        index,
        max,
        ...(carried ? { carried } : {}),
      });
    } catch (e) {
      if (!merged) throw e;
      // A later batch ended in an error (a lock timeout, the database gone): the earlier ones stay.
      const error = e instanceof Error ? e : new Error(String(e));
      return partial(zone, merged, batches, index, error, isRetryable(error));
    }
    const { result, more } = step;
    if (index === 1 && !more) return result; // the common case: one batch, the answer as it always was
    // What the next batch plans if nothing else changes the zone meanwhile: the rest of this plan.
    carried = result.status === 'applied' && step.rest ? { generation: result.generation, plan: step.rest } : undefined;
    if (result.status === 'applied')
      batches.push({
        index,
        operations: result.calls.filter((call) => !call.path.endsWith('/refresh')).length,
        generation: result.generation,
        ...(result.journalId ? { journalId: result.journalId } : {}),
      });
    if (!merged) merged = { ...result, calls: [...result.calls], changes: [...result.changes] };
    else if (result.status === 'applied' || result.status === 'no_changes') {
      merged.calls.push(...result.calls);
      merged.changes.push(...result.changes);
      merged.generation = result.generation;
    }
    if (result.status !== 'applied' && result.status !== 'no_changes') {
      if (index === 1) return { ...result, batches: [] };
      return partial(zone, merged, batches, index, result.error ?? new Error(result.status), result.error ? isRetryable(result.error) : false, result.calls);
    }
    if (!more || result.status === 'no_changes') return { ...merged, status: 'applied', batches };
    if (ctx.lifecycle?.stopping) {
      return partial(zone, merged, batches, index + 1, new ShuttingDownError('dnsplane is shutting down, the batch was not started'), true);
    }
    if (index >= MAX_BATCHES) {
      return partial(zone, merged, batches, index + 1, new Error(`the request still plans operations after ${index} batches; stopped`), false);
    }
  }
}

/** The answer when batch `failedIndex` did not apply: the earlier batches stay applied and published. */
function partial(
  zone: string,
  merged: ZoneApplyResult,
  batches: ApplyBatch[],
  failedIndex: number,
  error: Error,
  transient: boolean,
  failedCalls: CallRecord[] = [],
): ZoneApplyResult {
  const ops = batches.reduce((n, batch) => n + batch.operations, 0);
  const head =
    batches.length === 0
      ? `apply to zone ${zone}: no batch was applied`
      : `apply to zone ${zone}: batch${batches.length > 1 ? `es 1-${batches.length}` : ' 1'} (${ops} operation(s)) applied and published, generation ${merged.generation}`;
  return {
    ...merged,
    status: 'failed',
    calls: [...merged.calls, ...failedCalls],
    batches,
    error: new ApplyFailedError(
      `${head}; batch ${failedIndex} was not applied (rolled back alone, nothing of it published): ${error.message}; the rest is planned again on the next try`,
      zone,
      transient,
      [...merged.calls, ...failedCalls],
    ),
  };
}

/** One batch through the zone lock (holder.ts), measured: duration and outcome per zone, lock wait (metrics); the database's loss translated. */
async function applyBatchMeasured(ctx: CoreContext, batch: ZoneBatch): Promise<BatchAnswer> {
  const { zone } = batch;
  const started = performance.now();
  const seconds = () => (performance.now() - started) / 1000;
  try {
    const step = await applyInGroup(ctx, batch, started);
    ctx.metrics?.applyDone(zone, step.result.status, seconds());
    return step;
  } catch (e) {
    ctx.metrics?.applyDone(zone, 'error', seconds());
    if (isDatabaseUnavailable(e) && !(e instanceof ApplyFailedError)) {
      // The lock's session went at COMMIT (or the database was unreachable before anything was sent).
      scheduleRecovery(ctx, zone);
      throw new ApplyFailedError(
        `apply to zone ${zone}: the database became unavailable (${messageOf(e)}); if operations had been sent, the zone's next lock holder rolls back whatever was not recorded as applied: retry`,
        zone,
        true,
      );
    }
    throw e;
  }
}
