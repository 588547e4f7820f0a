/**
 * The plan of one owner's withdraws or restores of targets under the zone lock (the WithdrawPlanner
 * core/plan/ calls, core/ownership/withdraw-planner.ts): per record set, which targets leave OVH (a
 * DELETE of each of their records; never the last) or come back (one POST of what the row kept), the
 * change it makes of the set, and the withdrawal rows written in the apply's transaction after its
 * operations (recorded). What it decided of each item is read back by withdrawals.ts.
 */
import { recordSetKey, SHARED_LABEL, type Change, type Endpoint, type RecordType } from '../../dns/index.js';
import { recordsLookup, type ZoneRecords } from '../../ovh/mapping.js';
import { recordPath } from '../../ovh/ops.js';
import type { OvhOperation, OvhRecord } from '../../ovh/types.js';
import * as store from '../../store/index.js';
import type { WithdrawPlanner } from '../ownership/withdraw-planner.js';
import { canonicalOf } from '../ownership/ownership.js';
import { ownerLookup, targetKey, type Direction, type Item, type ItemOutcome, type KeptWhy } from './items.js';

/** Plans one owner's items under the zone lock; what it decided is read back by withdrawals.ts run(). */
export class Planner implements WithdrawPlanner {
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
            this.inserts.push(withdrawal(item, tenantId, detail, first));
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
          this.inserts.push(
            withdrawal(item, tenantId, detail, {
              subDomain: r.subDomain,
              fieldType: r.fieldType,
              ovhTarget: r.target,
              ttl: Math.min(...recs.map((x) => x.ttl)),
            }),
          );
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
    for (const reason of ['silent', 'health', 'drained'] as const) {
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

/** The row that keeps a withdrawn target (what a restore POSTs back: `published`, as OVH held it). */
function withdrawal(
  item: { name: string; type: string; target: string; reason: store.NewWithdrawal['reason'] },
  tenantId: string,
  detail: store.NewWithdrawal['detail'],
  published: Pick<store.NewWithdrawal, 'subDomain' | 'fieldType' | 'ovhTarget' | 'ttl'>,
): store.NewWithdrawal {
  const { subDomain, fieldType, ovhTarget, ttl } = published; // only these: a row passed as `published` holds another reason's fields
  return {
    dnsName: item.name,
    recordType: item.type,
    target: item.target,
    reason: item.reason,
    tenantId,
    detail,
    subDomain,
    fieldType,
    ovhTarget,
    ttl,
    journalId: null,
  };
}
