/**
 * The holder of a zone's lock, and its group. One batch of a request joins the zone's in-process queue
 * (lock-queue.ts) as a member; when its turn comes it holds the lock and runs a group: recover the
 * applies left in flight (recovery.ts), then its own member — planned (prepare.ts) and sent
 * (send.ts) — then, coalescing, the applies waiting behind it in this process's queue, in arrival
 * order, one at a time, while the group allows (group.ts: disjoint record sets, DNSPLANE_APPLY_BATCH
 * operations in all, DNSPLANE_APPLY_COALESCE of running time, not shutting down); then one refresh
 * publishes every member that succeeded (publish.ts). A member taken over this way never holds the
 * lock itself: its call answers what the holder decided for it, once the transaction has ended.
 * Each member keeps its own meaning:
 * - it is planned under the lock against the zone's view in memory as the members before it left it
 *   (core/reads/zone-memory.ts: their records and ownership are written into the transaction, and into the
 *   view, before it is planned), so ownership and conflicts are judged after them; the view is
 *   dropped when the transaction does not commit; a stored plan is stale unless the zone's
 *   generation at the group's start is its base and the plan recomputed now is the stored one (digest);
 * - its own journal row (intent before its first call, `done` or `failed` after), its own generation
 *   (one bump each, in order, all committed at once), its own result;
 * - a member whose operation fails is undone alone and the group goes on; when the refresh fails,
 *   every member that succeeded is rolled back as a lone apply would be (newest first).
 * Without coalescing (DNSPLANE_APPLY_COALESCE=0, dry run) the group is the holder's member alone.
 */
import { messageOf } from '../../lib/error-message.js';
import { OvhError } from '../../ovh/errors.js';
import type { CoreContext } from '../context.js';
import { ApplyFailedError } from '../errors.js';
import { dropZoneMemory } from '../reads/zone-memory.js';
import { withZoneLockQueued, type ZoneQueueView } from '../zones/lock-queue.js';
import { newGroup, joins, mayTakeMore, type Group, type HeldLock, type Member, type Outcome, type BatchAnswer, type ZoneBatch } from './group.js';
import { prepareMember, type Prepared } from './prepare.js';
import { publish } from './publish.js';
import { recoverInFlight } from './recovery.js';
import { sendMember } from './send.js';
import { GroupStopped, stopGroup } from './stop.js';
import { DEFAULT_APPLY_BATCH } from './batch-plan.js';

/** The waiting applies a coalescing holder may take over, and those it took (answered once the transaction has ended). */
interface Coalescing {
  queue: ZoneQueueView<Member>;
  taken: Member[];
}

/** Applies one batch of a request in its zone: as the lock's holder with its group, or taken into another holder's group. */
export async function applyInGroup(ctx: CoreContext, batch: ZoneBatch, waitingSince: number): Promise<BatchAnswer> {
  let answered!: (o: Outcome) => void;
  const answer = new Promise<Outcome>((resolve) => (answered = resolve));
  const me: Member = { ...batch, waitingSince, answer, answered };
  const coalesce = (ctx.settings.applyCoalesceMs ?? 0) > 0 && !ctx.settings.dryRun;
  // The applies this one's group took over: answered here, once the transaction has ended.
  const taken: Member[] = [];
  // Whether this one held the lock (its group wrote into the zone's view: kept only if it commits).
  let held = false;
  try {
    await withZoneLockQueued<void, Member>(
      ctx,
      batch.zone,
      (tx, fence, queue) => {
        held = true;
        // The holder's own calls (recovery, the refresh, a rollback) are its first member's tenant's share of the rate.
        return runGroup(
          ctx,
          { zone: batch.zone, tx, fence, ovh: fence.ovh.scoped({ flow: { tenant: me.tenant.name } }) },
          me,
          coalesce ? { queue, taken } : undefined,
        );
      },
      coalesce
        ? {
            payload: me,
            taken: async () => {
              me.outcome = await answer;
            },
          }
        : undefined,
    );
  } catch (e) {
    // The transaction did not commit (or may not have): the view may hold what it wrote.
    if (held) dropZoneMemory(ctx.pool, batch.zone);
    // The group stopped unpublished: each member answers its own outcome, or the cause. Anything
    // else (the wait for the lock, COMMIT) is everyone's answer.
    const stopped = e instanceof GroupStopped ? e : undefined;
    for (const member of taken) member.answered((stopped && member.outcome) || { error: stopped ? stopped.cause : e });
    const mine = stopped && me.outcome;
    if (mine && 'step' in mine) return mine.step;
    throw mine ? mine.error : stopped ? stopped.cause : e;
  }
  for (const member of taken) member.answered(member.outcome ?? { error: new Error('internal: a coalesced apply got no answer') });
  const mine = me.outcome!;
  if ('error' in mine) throw mine.error;
  return mine.step;
}

/**
 * Under the lock: recovery first, then the group, member by member, and its one refresh. Who the OVH
 * calls are for (ovh/ratelimit.ts: fair shares per tenant and zone) rides with the client each is
 * handed: the holder's own calls (recovery, the refresh, a rollback) go through `held.ovh`, its first
 * member's share; each member's operations through a client of its own tenant's (send.ts), since a
 * coalesced member may be another tenant's.
 */
async function runGroup(ctx: CoreContext, held: HeldLock, first: Member, coalescing: Coalescing | undefined): Promise<void> {
  endLockWait(ctx, first);
  try {
    await recoverInFlight(ctx, held.tx, held.zone, held.fence, held.ovh);
  } catch (e) {
    // OVH refused or failed a compensating call: not this apply's doing, and nothing of it was sent.
    if (!(e instanceof OvhError)) throw e;
    throw new ApplyFailedError(
      `apply to zone ${held.zone}: rolling back the applies left in flight failed (${messageOf(e)}); nothing was sent for this apply, and the zone's next lock holder tries the rollback again: retry`,
      held.zone,
      true,
      [],
    );
  }
  // The group's bound comes from the settings, not from its first member (an UPDATE's own bound is 0).
  const group = newGroup(held, ctx.settings.applyBatch ?? DEFAULT_APPLY_BATCH);
  try {
    let member = first;
    let prepared = await prepareMember(ctx, group, member);
    for (;;) {
      if ('send' in prepared) {
        const { send } = prepared;
        await sendMember(ctx, group, member, send);
      } else member.outcome = prepared;
      const next = coalescing ? await takeNext(ctx, group, coalescing) : undefined;
      if (!next) break;
      [member, prepared] = next;
    }
    await publish(ctx, group);
  } catch (e) {
    if (e instanceof GroupStopped) throw e;
    throw await stopGroup(ctx, group, e);
  }
}

/** The next waiting apply, planned, if it joins the group (it is then taken off the queue). */
async function takeNext(ctx: CoreContext, group: Group, coalescing: Coalescing): Promise<[Member, Prepared] | undefined> {
  for (;;) {
    if (!mayTakeMore(ctx, group)) return undefined;
    const candidate = coalescing.queue.next();
    if (!candidate) return undefined;
    const prepared = await prepareMember(ctx, group, candidate);
    if ('send' in prepared && !joins(group, prepared.send)) return undefined; // it begins the next group
    if (!coalescing.queue.take(candidate)) continue; // it left the queue (its lock timeout) while it was planned
    endLockWait(ctx, candidate);
    coalescing.taken.push(candidate);
    return [candidate, prepared];
  }
}

/** A member got the lock, or a holder took it: its wait ends (metrics). */
function endLockWait(ctx: CoreContext, member: Member): void {
  ctx.metrics?.lockWaited(member.zone, 'apply', (performance.now() - member.waitingSince) / 1000);
}
