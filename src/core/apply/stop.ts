/**
 * Stopping unpublished, leaving the rollback to the zone's next lock holder: a member that lost the
 * zone lock (lockLostError: nothing more may be sent), and a group that stops before its refresh
 * (stopGroup: the lock lost, a rollback left unfinished, the database gone). Their journal rows stay
 * in flight and the next holder's recovery (recovery.ts) rolls them back.
 */
import * as store from '../../store/index.js';
import { messageOf } from '../../lib/error-message.js';
import type { OvhOperation } from '../../ovh/types.js';
import type { CoreContext } from '../context.js';
import { ApplyFailedError } from '../errors.js';
import type { ZoneFence } from '../zones/fence.js';
import type { Group, Member } from './group.js';
import { listOps, opLabel } from './messages.js';
import { journalPool, type Done, type Failure } from './ops.js';
import { scheduleRecovery } from './recovery.js';
import type { CallRecord } from './result.js';

/**
 * Thrown inside the lock to end its transaction without COMMIT when a group stops before it could
 * be recorded: each member it took answers its `outcome`, those without one answer `cause`.
 */
export class GroupStopped extends Error {
  constructor(override readonly cause: unknown) {
    super(messageOf(cause));
  }
}

/**
 * The group stops before it could be published: nothing of it is committed. The members that had
 * sent their operations answer that those were not published and that the zone's next lock holder
 * rolls them back (their journal rows stay in flight, leases released when the lock is still ours);
 * `culprit` answers `cause`.
 */
export async function stopGroup(ctx: CoreContext, group: Group, cause: unknown, culprit?: Member): Promise<GroupStopped> {
  for (const sent of group.sent) {
    if (sent.member.outcome) continue;
    sent.member.outcome = {
      error: new ApplyFailedError(
        `apply to zone ${group.zone}: its ${sent.plan.operations.length} operation(s) were sent, but the group of applies it was coalesced into stopped before its refresh (${messageOf(cause)}); nothing of it was published, and the zone's next lock holder rolls them back (journal ${sent.journalId}): retry`,
        group.zone,
        true,
        sent.calls,
      ),
    };
  }
  if (culprit) culprit.outcome = { error: cause };
  await releaseLeases(
    ctx,
    group.fence,
    group.sent.map((sent) => sent.journalId),
  );
  return new GroupStopped(cause);
}

/** This holder stopped sending for these rows: their leases end now (fenced: only while the lock is ours), the next holder need not wait. */
async function releaseLeases(ctx: CoreContext, fence: ZoneFence, ids: string[]): Promise<void> {
  for (const id of ids) fence.unlease(id);
  if (ids.length === 0 || fence.lost) return;
  await store.renewJournalLease(journalPool(ctx), ids, fence.session, 0).catch(() => 0);
}

/** A member's sending when its lock was lost: its operations, what succeeded, and where it stopped. */
export interface Cut {
  zone: string;
  ops: readonly OvhOperation[];
  journalId: string;
  calls: CallRecord[];
  done: Done[];
  failure: Failure;
}

/**
 * The zone lock was lost while a member ran: nothing more may be sent (no undo, no re-read, no
 * refresh), and nothing can be written through this transaction. The journal row stays in flight
 * with its lease: the zone's next lock holder waits until none of this apply's calls can still land,
 * then rolls back what it did (recovery.ts). This process schedules that itself (scheduleRecovery) so
 * that a lone replica heals without waiting for the next apply or drift check. Returns the member's
 * error: what it had sent, the operation in doubt, whether its refresh could have gone out.
 */
export function lockLostError(ctx: CoreContext, cut: Cut): ApplyFailedError {
  const { zone, ops, journalId, failure } = cut;
  scheduleRecovery(ctx, zone);
  const sentOps = cut.done.map((done) => done.op);
  const inDoubt = failure.notSent ? undefined : (failure.op ?? (failure.index === ops.length ? undefined : ops[failure.index]));
  const refreshInDoubt = !failure.notSent && failure.index === ops.length;
  const sent =
    sentOps.length === 0 && !inDoubt
      ? 'before any operation was sent'
      : `after sending ${sentOps.length} of ${ops.length} operation(s)${sentOps.length ? ` (${listOps(sentOps)})` : ''}${inDoubt ? `; operation ${failure.index + 1} (${opLabel(inDoubt)}) was in flight and may have been done` : ''}`;
  const published = refreshInDoubt
    ? "its refresh was in flight and may have published: the zone's next lock holder rolls the apply back and publishes the zone again"
    : `the refresh was not sent, nothing was published; the zone's next lock holder rolls back what was sent`;
  ctx.log.warn(
    { zone, journal: journalId, sent: sentOps.length, operations: ops.length, err: messageOf(failure.error) },
    'apply lost its zone lock and stopped',
  );
  return new ApplyFailedError(
    `apply to zone ${zone} stopped: ${messageOf(failure.error)}, ${sent}; ${published} (journal ${journalId}): retry`,
    zone,
    true,
    cut.calls,
  );
}
