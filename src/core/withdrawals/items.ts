/**
 * What a withdraw or a restore of targets (withdrawals.ts) is asked, item by item, and what becomes of
 * each: the items, why one is kept as it was; how an item is read (normalized: its name and type, its
 * reason) and which ownership row it hangs on (ownerLookup), judged before the apply and again under
 * the zone lock (planner.ts).
 */
import { normalizeName } from '../../dns/names.js';
import type { RecordType } from '../../dns/index.js';
import { isRecordType } from '../../dns/types.js';
import { InvalidInputError } from '../../dns/errors.js';
import type * as store from '../../store/index.js';

export type WithdrawReason = 'silent' | 'health' | 'drained';

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

export type Item = WithdrawItem | RestoreItem;
export type Direction = 'withdraw' | 'restore';

export function normalized<T extends Item>(item: T, i: number): T & { type: RecordType } {
  const type = item.type.toUpperCase();
  if (!isRecordType(type)) throw new InvalidInputError(`items[${i}].type`, `"${item.type}" is not a record type dnsplane manages`);
  if (item.reason !== 'silent' && item.reason !== 'health' && item.reason !== 'drained')
    throw new InvalidInputError(`items[${i}].reason`, `must be "silent", "health" or "drained", got ${JSON.stringify(item.reason)}`);
  return { ...item, name: normalizeName(item.name, `items[${i}].name`, { allowUnderscore: true, allowWildcard: true }), type } as T & { type: RecordType };
}

/** One target of a set, as items, decisions and ownership rows are matched by it. */
export function targetKey(name: string, type: string, target: string): string {
  return `${name} ${type} ${target}`;
}

/**
 * The ownership row an item hangs on: its target's own in a shared set; in an exclusive set the set's
 * one row (target ''), for health only (a silent tenant's exclusive set has no other target to send
 * anyone to: 'not-shared'). Whether the target is the set's is judged on OVH's records (withdraw) or
 * the withdrawal rows (restore): no other host reaches OVH.
 */
export function ownerLookup(rows: readonly store.OwnershipRow[]): (item: Item) => store.OwnershipRow | 'not-shared' | undefined {
  const byKey = new Map(rows.map((r) => [targetKey(r.dnsName, r.recordType, r.target), r] as const));
  return (item) => {
    const own = byKey.get(targetKey(item.name, item.type, item.target));
    if (own?.shared) return own;
    const set = byKey.get(targetKey(item.name, item.type, ''));
    if (!set || set.shared) return undefined;
    return item.reason === 'health' ? set : 'not-shared';
  };
}
