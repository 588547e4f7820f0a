/**
 * The rollback of one live member whose operation (or whose group's refresh) failed: undo, newest
 * first, what it did (undo.ts undoOf); publish nothing; re-read the names of the operations that were
 * sent and undo whatever of the failed one OVH shows done (reconcile.ts); generation + 1; journal
 * `failed` with per-operation detail. What it wrote is kept (RollbackRecord) to be written again when
 * its group's transaction goes back to before the group (publish.ts).
 */
import { messageOf } from '../../lib/error-message.js';
import type { OvhApi } from '../../ovh/client.js';
import { OvhError } from '../../ovh/errors.js';
import { describeOperation } from '../../ovh/ops.js';
import { refreshPath } from '../../ovh/types.js';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { ApplyFailedError, ShuttingDownError } from '../errors.js';
import type { ZonePlan } from '../plan/plan.js';
import type { Tenant } from '../tenants/tenants.js';
import type { Group, RollbackRecord, RolledBack } from './group.js';
import { opLabel } from './messages.js';
import { isFenceRefusal, journalPool, send, statusOf, touchedNames, type Done, type Failure } from './ops.js';
import { reconcileNames } from './reconcile.js';
import { scheduleRecovery } from './recovery.js';
import type { CallRecord } from './result.js';
import { recordAfter, undoOf } from './undo.js';

/** A member's sending, to roll back: what it planned and sent, and where it stopped. */
export interface Sending {
  tenant: Tenant;
  plan: ZonePlan;
  journalId: string;
  /** The operations that succeeded, in order. */
  done: Done[];
  /** The calls made so far; the undo's calls are added. */
  calls: CallRecord[];
  failure: Failure;
  /** The cached records of the touched names before the member (its intent's `before`). */
  before: store.RecordRow[];
}

/**
 * Rolls one member back. When an undo operation fails too, or the re-read does, the rollback is
 * left to the zone's next lock holder: the journal row stays in_flight and this transaction is rolled
 * back (ApplyFailedError, transient). When the refresh failed in a way that may have published (5xx,
 * no answer), the draft and the cache are rolled back here, and the row stays in_flight at stage
 * "refresh": the zone's next lock holder (an apply, the drift check) publishes the rolled-back draft
 * (recovery.ts). The undo stops as soon as the fence refuses a write (the lock lost, the shutdown
 * deadline passed): the rest is the next holder's.
 */
export async function rollBack(ctx: CoreContext, ovh: OvhApi, group: Pick<Group, 'zone' | 'tx' | 'fence' | 'knownIds'>, sending: Sending): Promise<RolledBack> {
  const { zone, tx, fence, knownIds } = group;
  const { plan, failure, calls, done, journalId } = sending;
  const ops = plan.operations;
  const undoOutcome = new Map<number, CallRecord>();
  let refused: unknown;
  for (let i = done.length - 1; i >= 0; i--) {
    const undo = undoOf(zone, done[i]!.op, recordAfter(done[i]!));
    if (refused) {
      undoOutcome.set(i, { ...describeOperation(undo), status: 0, error: `not sent: ${messageOf(refused)}` });
      continue;
    }
    const passed = fence.writesAllowed;
    try {
      const created = await send(ovh, zone, undo, knownIds);
      if (created) knownIds.add(created.id);
      undoOutcome.set(i, { ...describeOperation(undo), status: 200 });
    } catch (error) {
      if (isFenceRefusal(error)) refused = error;
      const notSent = isFenceRefusal(error) && fence.writesAllowed === passed;
      undoOutcome.set(i, { ...describeOperation(undo), status: statusOf(error), error: notSent ? `not sent: ${messageOf(error)}` : messageOf(error) });
      ctx.log.error({ zone, op: describeOperation(undo), err: messageOf(error) }, 'undo of a failed apply failed');
    }
  }
  calls.push(
    ...[...undoOutcome.entries()]
      .sort(([a], [b]) => b - a)
      .map(([, call]) => call)
      .filter((call) => !call.error?.startsWith('not sent: ')),
  );
  const undoFailed = [...undoOutcome.values()].filter((call) => call.error !== undefined).length;

  const failedWhat = failure.op
    ? `operation ${failure.index + 1} of ${ops.length}, ${opLabel(failure.op)}`
    : `the refresh after ${ops.length} operation(s), POST ${refreshPath(zone)}`;
  const head =
    failure.error instanceof ShuttingDownError && failure.notSent
      ? `apply to zone ${zone} stopped before ${failedWhat}: dnsplane is shutting down`
      : `apply to zone ${zone} failed at ${failedWhat}: ${messageOf(failure.error)}`;
  const transient = !(failure.error instanceof OvhError) || failure.error.transient;
  // Operations sent: up to the failed one, unless that one was not sent at all.
  const lastSent = failure.notSent ? failure.index - 1 : failure.index;
  const detail = {
    error: messageOf(failure.error),
    failedOperation: failure.op
      ? { index: failure.index + 1, ...describeOperation(failure.op), ...(failure.notSent ? { notSent: true } : {}) }
      : { index: failure.index + 1, method: 'POST', path: refreshPath(zone), body: '', ...(failure.notSent ? { notSent: true } : {}) },
    operations: ops.map((op, i) => {
      const sent = calls[i];
      const undo = undoOutcome.get(i);
      const outcome = i > lastSent ? 'not_sent' : i === failure.index ? 'failed' : undo?.error === undefined ? 'undone' : 'undo_failed';
      return {
        index: i + 1,
        ...describeOperation(op),
        outcome,
        ...(sent && i <= lastSent ? { status: sent.status } : {}),
        ...(i === failure.index && !failure.notSent ? { error: messageOf(failure.error) } : {}),
        ...(undo?.error ? { undoError: undo.error } : {}),
      };
    }),
    calls,
  };

  if (undoFailed > 0) {
    fence.unlease(journalId);
    // The holder stops here: its lease ends (if it still holds the lock), the next holder need not wait.
    await store
      .noteJournalProgressFenced(journalPool(ctx), journalId, fence.session, { stage: 'undo_failed', ...detail }, { release: true })
      .catch(() => false);
    if (fence.lost) scheduleRecovery(ctx, zone);
    const why = refused ? ` (${messageOf(refused)})` : '';
    throw new ApplyFailedError(
      `${head}; undoing the ${done.length} operation(s) that had succeeded failed for ${undoFailed} of them${why}; nothing was published, and the zone's next apply or drift check finishes the rollback (journal ${journalId} stays in flight)`,
      zone,
      true,
      calls,
    );
  }
  // Re-read the names of the operations that were sent, and undo what OVH shows of the failed one (its
  // answer may have been lost after it was done: a creation that timed out, say).
  const sent = ops.slice(0, lastSent + 1);
  const sentNames = touchedNames(sent);
  try {
    calls.push(...(await reconcileNames(ctx, ovh, tx, zone, { ops: sent, before: sending.before, names: sentNames }, knownIds)));
  } catch (error) {
    fence.unlease(journalId);
    await store
      .noteJournalProgressFenced(journalPool(ctx), journalId, fence.session, { stage: 'reread_failed', ...detail }, { release: true })
      .catch(() => false);
    if (fence.lost) scheduleRecovery(ctx, zone);
    throw new ApplyFailedError(
      `${head}; the ${done.length} operation(s) that had succeeded were undone and nothing was published, but re-reading the touched names failed (${messageOf(error)}); the zone's next apply or drift check re-reads them`,
      zone,
      true,
      calls,
    );
  }
  const mayHavePublished =
    !failure.op && !failure.notSent && !(failure.error instanceof OvhError && (failure.error.kind === 'rate_limited' || !failure.error.transient));
  // What this rollback writes into the transaction, to write again if its group's refresh fails after
  // it (the transaction then goes back to before the group).
  const record: RollbackRecord = {
    journalId,
    names: sentNames,
    rows: await store.listRecordsForNames(tx, zone, sentNames),
    ...(mayHavePublished ? {} : { failed: { ...detail, reread: sentNames } }),
  };
  fence.unlease(journalId);
  if (mayHavePublished) {
    await store.noteJournalProgressFenced(journalPool(ctx), journalId, fence.session, { stage: 'refresh', ...detail, reread: sentNames }, { release: true });
  }
  const generation = await recordRollback(tx, zone, record);
  ctx.log.warn({ zone, tenant: sending.tenant.name, failed: failedWhat, err: messageOf(failure.error) }, 'apply failed and was rolled back');
  return {
    result: {
      zone,
      status: 'failed',
      generation,
      calls,
      changes: plan.changes,
      conflicts: plan.conflicts,
      error: new ApplyFailedError(`${head}; the ${done.length} operation(s) that had succeeded were undone and nothing was published`, zone, transient, calls),
    },
    record,
  };
}

/** Writes a rollback's end into the transaction: generation + 1 (NOTIFY), and its journal row `failed` unless it stays in flight. */
export async function recordRollback(tx: store.Queryable, zone: string, record: RollbackRecord): Promise<bigint> {
  const generation = await store.bumpGeneration(tx, zone);
  await store.notifyZoneChanged(tx, zone, generation);
  if (record.failed) await store.finishJournal(tx, record.journalId, 'failed', record.failed);
  return generation;
}

/** Writes a rollback again after its group's transaction went back to before the group: the names' cache rows, then its end. */
export async function rewriteRollback(tx: store.Queryable, zone: string, record: RollbackRecord): Promise<bigint> {
  await store.replaceRecordsForNames(tx, zone, record.names, record.rows);
  return recordRollback(tx, zone, record);
}
