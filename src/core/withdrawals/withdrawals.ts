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
 */
import { normalizeName } from '../../dns/names.js';
import { recordSetKey, SHARED_LABEL, type Change, type Endpoint, type RecordType } from '../../dns/index.js';
import { isRecordType } from '../../dns/types.js';
import { InvalidInputError } from '../../dns/errors.js';
import { recordsLookup, type ZoneRecords } from '../../ovh/mapping.js';
import { recordPath } from '../../ovh/ops.js';
import type { OvhOperation, OvhRecord } from '../../ovh/types.js';
import * as store from '../../store/index.js';
import type { WithdrawPlanner } from '../ownership/withdraw-planner.js';
import { applyZone } from '../apply/batches.js';
import type { CallRecord, ZoneApplyStatus } from '../apply/result.js';
import type { CoreContext } from '../context.js';
import { canonicalOf } from '../ownership/ownership.js';
import type { RoutedInput } from '../plan/input.js';
import { ensureSynced } from '../zones/zones.js';

export type WithdrawReason = 'silent' | 'health';

/** The most items one withdraw/restore apply takes (its operations stay within one group's bound). */
export const ITEMS_PER_APPLY = 50;

export interface WithdrawItem {
  /** fqdn, normalized */
  name: string;
  type: string;
  /** canonical, as ownership rows hold it */
  target: string;
  reason: WithdrawReason;
  /** for people, journalled */
  detail: string;
  /** jsonb: e.g. a check's last answers */
  evidence?: unknown;
}

export interface RestoreItem {
  name: string;
  type: string;
  target: string;
  reason: WithdrawReason;
  detail: string;
}

/**
 * Why an item was kept as it was: never the last target of its set; not in ownership (or not the
 * owner's); already withdrawn for that reason; an exclusive set, for reason 'silent'; (restore) still withdrawn for another
 * reason, or not withdrawn for this one; not on OVH to withdraw; the apply did not go through.
 */
export type KeptWhy = 'last-target' | 'not-owned' | 'already' | 'not-shared' | 'still-withdrawn' | 'not-withdrawn' | 'not-published' | 'not-applied';

export interface ItemOutcome {
  name: string;
  type: string;
  target: string;
  reason: WithdrawReason;
  state: 'withdrawn' | 'restored' | 'kept';
  why?: KeptWhy;
  /** The target's owner (the tenant the apply ran as), when it has one. */
  tenant?: string;
}

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

type Item = WithdrawItem | RestoreItem;
type Direction = 'withdraw' | 'restore';

function normalized<T extends Item>(item: T, i: number): T & { type: RecordType } {
  const type = item.type.toUpperCase();
  if (!isRecordType(type)) throw new InvalidInputError(`items[${i}].type`, `"${item.type}" is not a record type dnsplane manages`);
  if (item.reason !== 'silent' && item.reason !== 'health')
    throw new InvalidInputError(`items[${i}].reason`, `must be "silent" or "health", got ${JSON.stringify(item.reason)}`);
  return { ...item, name: normalizeName(item.name, `items[${i}].name`, { allowUnderscore: true, allowWildcard: true }), type } as T & { type: RecordType };
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

function targetKey(name: string, type: string, target: string): string {
  return `${name} ${type} ${target}`;
}

/**
 * The ownership row an item hangs on: its target's own in a shared set; in an exclusive set the set's
 * one row (target ''), for health only (a silent tenant's exclusive set has no other target to send
 * anyone to: 'not-shared'). Whether the target is the set's is judged on OVH's records (withdraw) or
 * the withdrawal rows (restore): no other host reaches OVH.
 */
function ownerLookup(rows: readonly store.OwnershipRow[]): (item: Item) => store.OwnershipRow | 'not-shared' | undefined {
  const byKey = new Map(rows.map((r) => [targetKey(r.dnsName, r.recordType, r.target), r] as const));
  return (item) => {
    const own = byKey.get(targetKey(item.name, item.type, item.target));
    if (own?.shared) return own;
    const set = byKey.get(targetKey(item.name, item.type, ''));
    if (!set || set.shared) return undefined;
    return item.reason === 'health' ? set : 'not-shared';
  };
}

/** Plans one owner's items under the zone lock; what it decided is read back by run(). */
class Planner implements WithdrawPlanner {
  decided = new Map<string, { state: ItemOutcome['state']; why?: KeptWhy }>();
  /** The targets the last plan takes off OVH (a DELETE each; not a second reason of one already off). */
  leaving = new Set<string>();
  private inserts: store.NewWithdrawal[] = [];
  private deletes: Array<{ dnsName: string; recordType: string; target: string; reason: store.WithdrawalReason }> = [];

  constructor(
    private readonly zone: string,
    private readonly direction: Direction,
    private readonly items: ReadonlyArray<Item & { type: RecordType }>,
  ) {}

  names(): string[] {
    return [...new Set(this.items.map((i) => i.name))];
  }

  pending(): boolean {
    return this.inserts.length > 0 || this.deletes.length > 0;
  }

  async plan(
    q: store.Queryable,
    source: { recordsByKey: ZoneRecords; ownership: readonly store.OwnershipRow[] },
    tenantId: string,
  ): Promise<{ changes: Change[]; operations: OvhOperation[] }> {
    const { zone } = this;
    this.decided = new Map();
    this.leaving = new Set();
    this.inserts = [];
    this.deletes = [];
    const sets = [...new Map(this.items.map((i) => [recordSetKey(i.name, i.type), { dnsName: i.name, recordType: i.type }] as const)).values()];
    const withdrawals = await store.listWithdrawalsForSets(q, zone, sets);
    const recordsOf = recordsLookup(source.recordsByKey, zone);
    const ownerOf = ownerLookup(source.ownership);
    const operations: OvhOperation[] = [];
    const changes: Change[] = [];
    for (const set of sets) {
      const key = recordSetKey(set.dnsName, set.recordType);
      const type = set.recordType as RecordType;
      const records = recordsOf(key);
      const published = new Map<string, OvhRecord[]>();
      for (const r of records) {
        const t = canonicalOf(r, type, zone);
        published.set(t, [...(published.get(t) ?? []), r]);
      }
      const before = [...published.keys()].sort();
      const after = new Set(before);
      let exclusive = false;
      const rowsOf = (target: string) => withdrawals.filter((w) => w.dnsName === set.dnsName && w.recordType === set.recordType && w.target === target);
      for (const item of this.items.filter((i) => i.name === set.dnsName && i.type === set.recordType)) {
        const k = targetKey(item.name, item.type, item.target);
        const owner = ownerOf(item);
        const decide = (state: ItemOutcome['state'], why?: KeptWhy) => this.decided.set(k, why ? { state, why } : { state });
        if (!owner || typeof owner === 'string' || owner.tenantId !== tenantId) {
          decide('kept', owner === 'not-shared' ? 'not-shared' : 'not-owned');
          continue;
        }
        if (!owner.shared) exclusive = true;
        const rows = rowsOf(item.target);
        const same = rows.find((w) => w.reason === item.reason);
        if (this.direction === 'withdraw') {
          if (same) {
            decide('kept', 'already');
            continue;
          }
          const detail = { detail: item.detail, ...('evidence' in item && item.evidence !== undefined ? { evidence: item.evidence } : {}) };
          if (rows.length > 0) {
            // Already off OVH for another reason: one more row, no call.
            const first = rows[0]!;
            this.inserts.push({
              dnsName: item.name,
              recordType: item.type,
              target: item.target,
              reason: item.reason,
              tenantId,
              detail,
              subDomain: first.subDomain,
              fieldType: first.fieldType,
              ovhTarget: first.ovhTarget,
              ttl: first.ttl,
              journalId: null,
            });
            decide('withdrawn');
            continue;
          }
          const recs = published.get(item.target);
          if (!recs || recs.length === 0 || !after.has(item.target)) {
            decide('kept', 'not-published');
            continue;
          }
          if (after.size <= 1) {
            decide('kept', 'last-target');
            continue;
          }
          after.delete(item.target);
          this.leaving.add(k);
          for (const r of recs) operations.push({ method: 'DELETE', path: recordPath(zone, r.id), id: r.id, before: { ...r } });
          const r = recs[0]!;
          this.inserts.push({
            dnsName: item.name,
            recordType: item.type,
            target: item.target,
            reason: item.reason,
            tenantId,
            detail,
            subDomain: r.subDomain,
            fieldType: r.fieldType,
            ovhTarget: r.target,
            ttl: Math.min(...recs.map((x) => x.ttl)),
            journalId: null,
          });
          decide('withdrawn');
        } else {
          if (!same) {
            decide('kept', 'not-withdrawn');
            continue;
          }
          this.deletes.push({ dnsName: item.name, recordType: item.type, target: item.target, reason: item.reason });
          if (rows.length > 1) {
            decide('kept', 'still-withdrawn');
            continue;
          }
          if (!after.has(item.target)) {
            after.add(item.target);
            operations.push({
              method: 'POST',
              path: recordPath(zone),
              body: { fieldType: same.fieldType, subDomain: same.subDomain, target: same.ovhTarget, ttl: same.ttl },
            });
          }
          decide('restored');
        }
      }
      const afterTargets = [...after].sort();
      if (afterTargets.join('\n') !== before.join('\n')) {
        const ttl = records.length > 0 ? Math.min(...records.map((r) => r.ttl)) : 0;
        const endpoint = (targets: string[]): Endpoint => ({
          dnsName: set.dnsName,
          recordType: type,
          targets,
          ttl,
          ...(exclusive ? {} : { labels: { [SHARED_LABEL]: 'true' } }),
        });
        changes.push(
          before.length === 0
            ? { action: 'create', after: endpoint(afterTargets) }
            : { action: 'update', before: endpoint(before), after: endpoint(afterTargets) },
        );
      }
    }
    return { changes, operations };
  }

  async recorded(tx: store.Queryable, journalId: string | undefined): Promise<void> {
    for (const reason of ['silent', 'health'] as const) {
      await store.deleteWithdrawals(
        tx,
        this.zone,
        reason,
        this.deletes.filter((d) => d.reason === reason),
      );
    }
    await store.insertWithdrawals(
      tx,
      this.zone,
      this.inserts.map((w) => ({ ...w, journalId: journalId ?? null })),
    );
  }
}
