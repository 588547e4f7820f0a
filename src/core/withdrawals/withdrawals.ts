/**
 * Withdrawn targets (issue 30; migrations 0019, 0022): a target that its owner still owns and still
 * desires, kept off OVH — its tenant went silent past its withdraw_after (core/withdrawals/liveness.ts, reason
 * 'silent'; targets of shared sets only), or its health check failed (reason 'health'; a target of a
 * shared set, or of an exclusive set of several targets: its row hangs on the set's ownership row). One row per
 * reason (store/withdrawals.ts): a target leaves OVH when its first reason appears and comes back when
 * its last goes. The ownership row stays while it is withdrawn; the cache row goes, as on OVH.
 *
 * A withdraw or a restore is an apply through core's apply path (core/apply/): an input of its own
 * kind, `withdraw`, planned under the zone lock against the zone as the group's earlier members left
 * it, coalesced with the zone's other applies, fenced, journalled (its summary: the reason, "tenant c2
 * silent since …"), one refresh, rolled back on failure — the withdrawal rows are written in the
 * apply's transaction after its operations (`recorded`), so a failed refresh takes them back with the
 * group. A withdraw is one DELETE per record of the target; a restore one POST of what the row kept.
 *
 * What the mechanism itself enforces, whatever the reason:
 * - never the last: a withdraw never leaves a record set with no published target (fail open): the
 *   items it keeps say 'last-target';
 * - only targets that exist in ownership (a shared set's target rows; an exclusive set's targets on
 *   OVH, for health only), owned by the tenant the apply runs as (the owner found here): no host
 *   anyone gives reaches OVH.
 * A withdrawal that needs no OVH call (a second reason for a target already withdrawn, one of two
 * reasons restored) is recorded under the lock without a call and without a refresh.
 *
 * Here: the items split by owner and applied, one apply after the other. What an item is and why one
 * is kept: items.ts; each apply's plan under the lock (the operations, the rows): planner.ts.
 */
import type { RecordType } from '../../dns/index.js';
import * as store from '../../store/index.js';
import { applyZone } from '../apply/batches.js';
import type { CallRecord, ZoneApplyStatus } from '../apply/result.js';
import type { CoreContext } from '../context.js';
import type { RoutedInput } from '../plan/input.js';
import { ensureSynced } from '../zones/zones.js';
import { normalized, ownerLookup, targetKey, type Direction, type Item, type ItemOutcome, type RestoreItem, type WithdrawItem } from './items.js';
import { Planner } from './planner.js';

/** The most items one withdraw/restore apply takes (its operations stay within one group's bound). */
export const ITEMS_PER_APPLY = 50;

export interface WithdrawOutcome {
  zone: string;
  items: ItemOutcome[];
  /** The journal row of the (first) apply that withdrew or restored something; absent when none did. */
  journalId?: string;
  /** Every apply's journal row (one per owner tenant). */
  journalIds: string[];
  /** The OVH calls made (operations and refreshes). */
  calls: CallRecord[];
  /** Each apply's status (one per owner tenant). */
  statuses: ZoneApplyStatus[];
  /** The first error of an apply that failed (its items say 'kept', 'not-applied'). */
  error?: Error;
}

export interface WithdrawOptions {
  /** Not stopped by the owner's change threshold (core/plan/guard.ts): the silent-tenant loop. */
  force?: boolean;
}

/** Withdraws targets from OVH (their rows written), never the last of a set; see the module comment. */
export async function withdrawTargets(ctx: CoreContext, zone: string, items: WithdrawItem[], opts: WithdrawOptions = {}): Promise<WithdrawOutcome> {
  return run(
    ctx,
    zone,
    'withdraw',
    items.map((item, i) => normalized(item, i)),
    opts,
  );
}

/** Restores withdrawn targets for one reason each (the POST once a target's last reason goes). */
export async function restoreTargets(ctx: CoreContext, zone: string, items: RestoreItem[], opts: WithdrawOptions = {}): Promise<WithdrawOutcome> {
  return run(
    ctx,
    zone,
    'restore',
    items.map((item, i) => normalized(item, i)),
    opts,
  );
}

async function run(
  ctx: CoreContext,
  zone: string,
  direction: Direction,
  items: Array<Item & { type: RecordType }>,
  opts: WithdrawOptions,
): Promise<WithdrawOutcome> {
  const out: WithdrawOutcome = { zone, items: [], journalIds: [], calls: [], statuses: [] };
  if (items.length === 0) return out;
  await ensureSynced(ctx, zone);
  // The owner of each item, as ownership holds it now (judged again under the lock).
  const rows = await store.listOwnershipForSets(
    ctx.pool,
    zone,
    items.map((i) => ({ dnsName: i.name, recordType: i.type })),
  );
  const ownerOf = ownerLookup(rows);
  const byTenant = new Map<string, Array<Item & { type: RecordType }>>();
  for (const item of items) {
    const row = ownerOf(item);
    if (!row || typeof row === 'string') {
      out.items.push({ ...base(item), state: 'kept', why: row ?? 'not-owned' });
      continue;
    }
    const list = byTenant.get(row.tenantId);
    if (list) list.push(item);
    else byTenant.set(row.tenantId, [item]);
  }
  // One apply per owner (and per ITEMS_PER_APPLY of its items: an apply is never cut into batches),
  // one after the other: each judges never-the-last after the ones before it.
  const applies: Array<[string, Array<Item & { type: RecordType }>]> = [];
  for (const [tenantId, all] of byTenant) for (let i = 0; i < all.length; i += ITEMS_PER_APPLY) applies.push([tenantId, all.slice(i, i + ITEMS_PER_APPLY)]);
  for (const [tenantId, mine] of applies) {
    const tenant = await store.getTenantById(ctx.pool, tenantId);
    if (!tenant) {
      for (const item of mine) out.items.push({ ...base(item), state: 'kept', why: 'not-owned' });
      continue;
    }
    const planner = new Planner(zone, direction, mine);
    const summary = `${direction === 'withdraw' ? 'withdraw' : 'restore'} ${mine.map((i) => `${i.name} ${i.type} ${i.target}`).join(', ')} (${[...new Set(mine.map((i) => i.detail))].join('; ')})`;
    const routed: RoutedInput = {
      kind: 'withdraw',
      policy: 'sync',
      byZone: new Map([[zone, planner]]),
      uncut: true,
      warnings: new Map(),
      origin: summary,
      ...(opts.force ? { force: true } : {}),
    };
    const result = await applyZone(ctx, { tenant, zone, routed });
    out.statuses.push(result.status);
    out.calls.push(...result.calls);
    if (result.journalId) out.journalIds.push(result.journalId);
    // no_changes with rows still to write: recorded by nobody (it came after a member that sent; core/apply/send.ts recordWithoutCalls).
    const ok = result.status === 'applied' || (result.status === 'no_changes' && !planner.pending());
    if (!ok && !out.error) out.error = result.error ?? new Error(`the ${direction} apply of zone ${zone} ended ${result.status}`);
    for (const item of mine) {
      const k = targetKey(item.name, item.type, item.target);
      const decided = planner.decided.get(k);
      if (!ok && decided?.state !== 'kept') out.items.push({ ...base(item), state: 'kept', why: 'not-applied', tenant: tenant.name });
      else out.items.push({ ...base(item), state: decided?.state ?? 'kept', ...(decided?.why ? { why: decided.why } : {}), tenant: tenant.name });
      // Counted once it left OVH (dnsplane_target_withdrawals_total).
      if (ok && planner.leaving.has(k)) ctx.metrics?.targetWithdrawn(item.reason);
    }
  }
  if (out.journalIds[0]) out.journalId = out.journalIds[0];
  return out;
}

function base(item: Item): Pick<ItemOutcome, 'name' | 'type' | 'target' | 'reason'> {
  return { name: item.name, type: item.type, target: item.target, reason: item.reason };
}
