/**
 * The Records answers of one base, cut once for every tenant (core/reads/read-cache.ts keeps them per
 * generation): the zone as includeForeign shows it — owner labels, shared sets split per owner
 * (core/ownership/ownership.ts), withdrawn targets shown to their owners with their state
 * (core/ownership/withdrawn-view.ts), checked targets with theirs (core/reads/health-view.ts) — and each
 * owner's slice of it, the same endpoint objects.
 *
 * Cut whole from a base read whole; from a patched base (core/reads/base-patch.ts), the previous
 * generation's answers with only the touched record sets cut again, when the withdrawn targets and the
 * targets' health are as they were outside those sets (otherwise cut whole: they may touch any set). Either way the same
 * answers, item for item and in the same order (test/core/base-patch.test.ts).
 */
import { isDeepStrictEqual } from 'node:util';
import { recordSetKey, type Endpoint, type RecordSetKey } from '../../dns/types.js';
import type { OvhRecord } from '../../ovh/types.js';
import { withHealthStates } from './health-view.js';
import { visibleRecordSetsSteps } from '../ownership/ownership.js';
import { withTargetStates, withWithdrawn } from '../ownership/withdrawn-view.js';
import type { Slicer } from '../slices.js';
import type { PatchedBase } from './base-patch.js';
import { replaceRuns, runOf } from './sorted.js';
import { compareSets, type ZoneBase } from './zone-base.js';

/** The answers of one base. Shared: never mutate them. */
export interface ZoneAnswers {
  generation: bigint;
  /** Every record set with labels.owner (shared sets split per owner): the includeForeign answer. */
  all: readonly Endpoint[];
  /** Each owner's endpoints, in the order of `all` and the same objects: a tenant's own answer. */
  byOwner: ReadonlyMap<string, readonly Endpoint[]>;
}

/** The answers of record sets `endpoints` (of `base`), with these ownership rows, withdrawn targets and health rows. */
async function cutSets(
  zone: string,
  base: { recordsByKey: ReadonlyMap<RecordSetKey, readonly OvhRecord[]> },
  endpoints: readonly Endpoint[],
  ownership: ZoneBase['ownership'],
  withdrawals: ZoneBase['withdrawals'],
  health: NonNullable<ZoneBase['health']>,
  slicer: Slicer,
): Promise<Endpoint[]> {
  const seen = withWithdrawn(zone, { recordsByKey: base.recordsByKey, endpoints }, withdrawals);
  // With includeForeign nothing depends on the tenant.
  const visible = await slicer.run(visibleRecordSetsSteps('', zone, seen.endpoints, ownership, seen.recordsByKey, true));
  return withHealthStates(withTargetStates(visible, withdrawals), health);
}

function ownerOf(e: Endpoint): string {
  return e.labels?.['owner'] ?? '';
}

/** Every set of the base, cut. */
export async function cutAnswers(zone: string, base: ZoneBase, slicer: Slicer): Promise<ZoneAnswers> {
  const all = await cutSets(zone, base, base.endpoints, base.ownership, base.withdrawals, base.health ?? [], slicer);
  const byOwner = new Map<string, Endpoint[]>();
  for (let i = 0; i < all.length; i++) {
    if (i % 1024 === 0) await slicer.check();
    const e = all[i]!;
    const owner = ownerOf(e);
    if (owner === '') continue;
    const list = byOwner.get(owner);
    if (list) list.push(e);
    else byOwner.set(owner, [e]);
  }
  return { generation: base.generation, all, byOwner };
}

/**
 * Whether the answers of `patched.base` can be patched from those of the base it was patched from
 * (`before`'s withdrawn targets and health rows): when those rows are the same outside the touched
 * sets (a health flip names its set: core/health/checker.ts); the touched sets are cut again with theirs.
 */
export function sideRowsKept(patched: PatchedBase, before: Pick<ZoneBase, 'withdrawals' | 'health'>): boolean {
  const keys = new Set(patched.touched.map((t) => t.key));
  const outside = <T extends { dnsName: string; recordType: string }>(rows: readonly T[]) =>
    rows.filter((r) => !keys.has(recordSetKey(r.dnsName, r.recordType)));
  const after = patched.base;
  return (
    isDeepStrictEqual(outside(before.withdrawals), outside(after.withdrawals)) && isDeepStrictEqual(outside(before.health ?? []), outside(after.health ?? []))
  );
}

/**
 * The answers of `patched.base`, from `previous` (the answers of the base it was patched from, whose
 * withdrawn targets and health rows were the same): the touched sets cut again and put in their
 * place; every owner's list a new array (an encoding is kept per array: core/reads/read-cache.ts), the
 * same endpoint objects.
 */
export async function patchAnswers(zone: string, previous: ZoneAnswers, patched: PatchedBase, slicer: Slicer): Promise<ZoneAnswers> {
  const { base, touched } = patched;
  const keys = new Set<RecordSetKey>(touched.map((t) => t.key));
  const inTouched = (row: { dnsName: string; recordType: string }) => keys.has(recordSetKey(row.dnsName, row.recordType));
  // Only the touched sets' records are looked up (shared sets' TTLs, withdrawn stand-ins).
  const recordsByKey = new Map<RecordSetKey, readonly OvhRecord[]>();
  for (const t of touched) {
    const records = base.recordsByKey.get(t.key);
    if (records) recordsByKey.set(t.key, records);
  }
  const ownership = touched.flatMap((t) => runOf(base.ownership, t, compareSets));
  const fresh = await cutSets(
    zone,
    { recordsByKey },
    patched.endpoints,
    ownership,
    base.withdrawals.filter(inTouched),
    (base.health ?? []).filter(inTouched),
    slicer,
  );
  const all = replaceRuns(previous.all, touched, fresh, compareSets);

  // The owners whose slice changed: of the answers removed or added.
  const changed = new Map<string, Endpoint[]>();
  for (const t of touched) for (const e of runOf(previous.all, t, compareSets)) if (ownerOf(e) !== '') changed.set(ownerOf(e), []);
  for (const e of fresh) if (ownerOf(e) !== '') changed.set(ownerOf(e), [...(changed.get(ownerOf(e)) ?? []), e]);
  const byOwner = new Map<string, readonly Endpoint[]>();
  for (const [owner, list] of previous.byOwner) {
    const now = changed.has(owner) ? replaceRuns(list, touched, changed.get(owner)!, compareSets) : list.slice();
    if (now.length > 0) byOwner.set(owner, now);
  }
  for (const [owner, list] of changed) if (!previous.byOwner.has(owner) && list.length > 0) byOwner.set(owner, list);
  return { generation: base.generation, all, byOwner };
}
