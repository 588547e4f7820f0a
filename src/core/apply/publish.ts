/**
 * Publishing a group: one refresh publishes every member that succeeded, and their journal rows
 * become done. When the refresh fails (or is not sent: shutdown), the transaction goes back to before
 * the group (GROUP_SAVEPOINT), the members rolled back alone are written again, and every member that
 * had succeeded is rolled back as a lone apply would be, newest first (rollback.ts). The lock lost:
 * every one of them stops, for the next holder (stop.ts).
 */
import { messageOf } from '../../lib/error-message.js';
import { refreshPath } from '../../ovh/types.js';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { ApplyFailedError, isDatabaseUnavailable, ShuttingDownError, ZoneLockLostError } from '../errors.js';
import { scheduleRecovery } from './recovery.js';
import { batchNumber } from './batch-plan.js';
import { GROUP_SAVEPOINT, type Group, type Sent } from './group.js';
import { isFenceRefusal, journalPool, statusOf } from './ops.js';
import type { CallRecord } from './result.js';
import { rewriteRollback, rollBack } from './rollback.js';
import { changedSets } from './send.js';
import { GroupStopped, lockLostError } from './stop.js';
import { recordRefresh } from '../probe/record.js';

/** Publishes the group's members that sent something (none: nothing to do), or rolls them back; sets each one's outcome. */
export async function publish(ctx: CoreContext, group: Group): Promise<void> {
  if (group.sent.length === 0) return;
  const { zone, tx, fence } = group;
  const ids = group.sent.map((sent) => sent.journalId);
  const stopping = () => ctx.lifecycle?.shouldStop(performance.now() - (group.sendingSince ?? performance.now())) === true;
  let error: unknown;
  let notSent = false;
  let refreshCall: CallRecord | undefined;
  let publishedAt = new Date();
  if (stopping()) {
    error = new ShuttingDownError('dnsplane is shutting down');
    notSent = true;
  }
  if (error === undefined) {
    // Recovery must know whether these applies may have published: a dead apply that got this far is
    // rolled back and the zone published again. Fenced: never written once the lock is gone.
    const noted = await store.noteJournalProgressFenced(journalPool(ctx), ids, fence.session, { stage: 'refresh' }).catch((e: unknown) => {
      if (isDatabaseUnavailable(e)) return false;
      throw e;
    });
    if (!noted) {
      error = fence.lost ??= new ZoneLockLostError(zone, 'the database no longer shows its session holding it');
      notSent = true;
    }
  }
  if (error === undefined) {
    const passed = fence.writesAllowed;
    try {
      await group.ovh.refresh(zone);
      publishedAt = new Date();
      refreshCall = { method: 'POST', path: refreshPath(zone), body: '', status: 204 };
    } catch (e) {
      notSent = isFenceRefusal(e) && fence.writesAllowed === passed;
      if (!notSent) refreshCall = { method: 'POST', path: refreshPath(zone), body: '', status: statusOf(e), error: messageOf(e) };
      error = e;
    }
  }
  const callsOf = (sent: Sent) => (refreshCall ? [...sent.calls, refreshCall] : [...sent.calls]);

  if (error === undefined) {
    await recordPublished(ctx, group, callsOf, publishedAt);
    return;
  }

  if (error instanceof ZoneLockLostError || (fence.lost && error === fence.lost)) {
    for (const sent of group.sent) {
      const failure = { index: sent.plan.operations.length, error, notSent };
      sent.member.outcome = {
        error: lockLostError(ctx, { zone, ops: sent.plan.operations, journalId: sent.journalId, calls: callsOf(sent), done: sent.done, failure }),
      };
    }
    throw new GroupStopped(error);
  }

  // Back to before the group, then each member's own outcome: the ones rolled back alone as they were
  // recorded, the others rolled back now, newest first (each undoes only its own record sets). One
  // whose undo fails answers that error and leaves its journal row in flight for the next holder, as
  // a lone apply would; the others' rollbacks are committed.
  await store.rollbackToSavepoint(tx, GROUP_SAVEPOINT);
  for (const failed of group.failed) failed.result.generation = await rewriteRollback(tx, zone, failed.record);
  for (const sent of [...group.sent].reverse()) {
    try {
      const rolledBack = await rollBack(ctx, group.ovh, group, {
        tenant: sent.member.tenant,
        plan: sent.plan,
        journalId: sent.journalId,
        done: sent.done,
        calls: callsOf(sent),
        failure: { index: sent.plan.operations.length, error, notSent },
        before: sent.before,
      });
      sent.member.outcome = { step: { result: rolledBack.result, more: sent.more } };
    } catch (e) {
      sent.member.outcome = { error: e };
    }
  }
  // The zone's view as the transaction now holds it: every name the group touched, and the
  // ownership of every set a member had changed, re-read (the savepoint took them back).
  await group.memory?.reread(
    tx,
    [...group.sent.flatMap((sent) => sent.names), ...group.failed.flatMap((failed) => failed.record.names)],
    group.sent.flatMap((sent) => changedSets(sent.plan.changes)),
  );
}

/** The refresh went out: every member that sent is applied; its journal row done (with the group's size when coalesced), its answer. */
async function recordPublished(ctx: CoreContext, group: Group, callsOf: (sent: Sent) => CallRecord[], publishedAt: Date): Promise<void> {
  const { zone, fence } = group;
  const size = group.sent.length;
  ctx.metrics?.applyGroupPublished(zone, size);
  const coalesced = size > 1 ? { coalesced: { applies: size, first: group.sent[0]!.journalId } } : {};
  try {
    for (const sent of group.sent) {
      const calls = callsOf(sent);
      const batch = batchNumber(ctx, sent.member.index, sent.plan.operations.length);
      fence.unlease(sent.journalId);
      await store.finishJournal(group.tx, sent.journalId, 'done', { calls, generation: String(sent.generation), ...coalesced });
      ctx.log.info(
        {
          zone,
          tenant: sent.member.tenant.name,
          operations: sent.plan.operations.length,
          generation: String(sent.generation),
          ...(size > 1 ? { coalesced: size } : {}),
          ...(batch !== undefined ? { batch } : {}),
        },
        'applied',
      );
      sent.member.outcome = {
        step: {
          result: {
            zone,
            status: 'applied',
            generation: sent.generation,
            calls,
            changes: sent.plan.changes,
            conflicts: sent.plan.conflicts,
            journalId: sent.journalId,
          },
          more: sent.more,
          ...(sent.more ? { rest: sent.rest } : {}),
        },
      };
    }
    await recordProbe(ctx, group, publishedAt);
  } catch (e) {
    if (!isDatabaseUnavailable(e)) throw e;
    // Published, but not recorded: the journal rows stay in flight at stage "refresh", and the
    // zone's next lock holder rolls the applies back and publishes again.
    scheduleRecovery(ctx, zone);
    for (const sent of group.sent) {
      sent.member.outcome = {
        error: new ApplyFailedError(
          `apply to zone ${zone}: the ${sent.plan.operations.length} operation(s) were sent and published, but the database became unavailable before the apply was recorded (${messageOf(e)}); the zone's next lock holder rolls them back and publishes the zone again (journal ${sent.journalId}): retry`,
          zone,
          true,
          callsOf(sent),
        ),
      };
    }
    throw new GroupStopped(e);
  }
}

/**
 * The refresh's probe (core/probe/record.ts), in the transaction under a savepoint of its own: a probe
 * that cannot be recorded (other than the database going away) is logged, and the apply stays applied.
 */
async function recordProbe(ctx: CoreContext, group: Group, publishedAt: Date): Promise<void> {
  const { zone, tx } = group;
  await store.savepoint(tx, PROBE_SAVEPOINT);
  try {
    await recordRefresh(
      ctx,
      tx,
      zone,
      publishedAt,
      group.sent.map((sent) => ({ journalId: sent.journalId, changes: sent.plan.changes })),
    );
    await store.releaseSavepoint(tx, PROBE_SAVEPOINT);
  } catch (e) {
    if (isDatabaseUnavailable(e)) throw e;
    await store.rollbackToSavepoint(tx, PROBE_SAVEPOINT);
    ctx.log.error({ zone, err: messageOf(e) }, 'the probe of this refresh could not be recorded: its visibility stays unknown');
  }
}

const PROBE_SAVEPOINT = 'visibility_probe';
