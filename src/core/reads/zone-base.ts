/**
 * A zone's base: its records, record sets, ownership rows, withdrawn targets and targets' health as one
 * snapshot saw them, made in slices — what the read cache keeps once per generation
 * (core/reads/read-cache.ts) and a Plan diffs against.
 */
import { compareStrings } from '../../dns/endpoint.js';
import { sortSteps } from '../../dns/steps.js';
import type { Endpoint } from '../../dns/types.js';
import { recordsToEndpointsSteps } from '../../ovh/mapping.js';
import { recordOf, type OvhRecord } from '../../ovh/types.js';
import * as store from '../../store/index.js';
import type { Slicer } from '../slices.js';
import { SetRecords } from './set-records.js';
import { compareRecords } from './sets-index.js';

/**
 * One zone as a snapshot saw it: the base every view of the zone at that generation is cut from, and
 * what a Plan diffs against (core/plan/plan.ts). Shared: never mutate it.
 */
export interface ZoneBase {
  generation: bigint;
  records: OvhRecord[];
  /** The records of each record set (RecordMapping.recordsByKey), kept beside `endpoints` (set-records.ts). */
  recordsByKey: SetRecords;
  endpoints: Endpoint[];
  ownership: store.OwnershipRow[];
  /**
   * The withdrawn targets (core/withdrawals/withdrawals.ts): owned, not on OVH, so not in records/endpoints (what
   * the DNS door and the served OVH API's published listing show); Plans and Records add them back
   * for their owners (core/ownership/withdrawn-view.ts).
   */
  withdrawals: store.WithdrawalRow[];
  /** The checked targets' states (core/health/): Records shows them (core/reads/health-view.ts). */
  health?: store.TargetHealthRow[];
}

/** The characters of a base's record strings, counted while it was made (baseBytes without a pass of its own). */
const textChars = new WeakMap<ZoneBase, number>();

/** A base's ownership rows' order (store.listOwnership's on a C collation): by name, type, then target. */
export function compareOwnershipRows(a: store.OwnershipRow, b: store.OwnershipRow): number {
  return compareSets(a, b) || compareStrings(a.target, b.target);
}

/** Record sets (or rows of one) by name, then type: the order of a base's endpoints and ownership rows. */
export function compareSets(a: { dnsName: string; recordType: string }, b: { dnsName: string; recordType: string }): number {
  return compareStrings(a.dnsName, b.dnsName) || compareStrings(a.recordType, b.recordType);
}

/** Notes the characters of a base made elsewhere (a patched one: base-patch.ts). */
export function noteTextChars(base: ZoneBase, chars: number): void {
  textChars.set(base, chars);
}

/** The characters baseBytes counts of one record. */
export function recordChars(r: Pick<OvhRecord, 'subDomain' | 'target'>): number {
  return r.subDomain.length + r.target.length;
}

/**
 * A zone's records (made from its rows as each page was read: readZoneRows; the base's own from now on)
 * and ownership rows (withdrawn targets and their health), made a ZoneBase in slices (a zone may hold
 * 50,000 records).
 */
export async function zoneBaseOf(
  zone: string,
  generation: bigint,
  records: OvhRecord[],
  ownership: store.OwnershipRow[],
  slicer: Slicer,
  withdrawals: store.WithdrawalRow[] = [],
  health: store.TargetHealthRow[] = [],
): Promise<ZoneBase> {
  let chars = 0;
  for (let i = 0; i < records.length; i++) {
    if (i % 1024 === 0) await slicer.check();
    chars += recordChars(records[i]!);
  }
  // In this process's order, whatever the database's collation (a patched base keeps it: base-patch.ts);
  // as read they are already in it on a C collation, and a sorted array is sorted in one pass. A first
  // sync's records (ReadCache.adopt) come in OVH's order: sorted in slices (50,000 at once held the loop).
  await slicer.run(sortSteps(records, compareRecords));
  await slicer.check();
  ownership.sort(compareOwnershipRows);
  await slicer.check();
  const { endpoints, recordsByKey } = await SetRecords.of(await slicer.run(recordsToEndpointsSteps(records, zone)), slicer);
  await shareNames(endpoints, ownership, slicer);
  const base = { generation, records, recordsByKey, endpoints, ownership, withdrawals, health };
  textChars.set(base, chars);
  return base;
}

/**
 * The ownership rows of the base take their names from its endpoints (one string where Postgres
 * gave a second copy of each name): both are sorted by name, so one walk pairs them. Rows read from
 * Postgres for this base only, never shared yet, so changed in place.
 */
async function shareNames(endpoints: readonly Endpoint[], ownership: store.OwnershipRow[], slicer: Slicer): Promise<void> {
  let e = 0;
  for (let o = 0; o < ownership.length; o++) {
    if (o % 1024 === 0) await slicer.check();
    const row = ownership[o]!;
    while (e < endpoints.length && compareStrings(endpoints[e]!.dnsName, row.dnsName) < 0) e++;
    if (e < endpoints.length && endpoints[e]!.dnsName === row.dnsName) row.dnsName = endpoints[e]!.dnsName;
  }
}

/** The rows a base is made of (readZoneRows). */
export interface ZoneRows {
  generation: bigint;
  records: OvhRecord[];
  ownership: store.OwnershipRow[];
  withdrawals: store.WithdrawalRow[];
  health: store.TargetHealthRow[];
}

/** Reads a zone's base from `q` (a snapshot, or a transaction that sees its own changes). */
export async function readZoneBase(q: store.Queryable, zone: string, slicer: Slicer): Promise<ZoneBase> {
  const read = await readZoneRows(q, zone);
  return zoneBaseOf(zone, read.generation, read.records, read.ownership, slicer, read.withdrawals, read.health);
}

/**
 * What a base is made of, as `q` sees it: the generation, the records and the ownership rows, read
 * a page at a time (inside a transaction: a cursor), so that 50,000 rows are never parsed in one block;
 * and the withdrawn targets and the targets' health (small tables). Each page's rows are made the
 * base's records as the page arrives: a row then dies young, where rows kept until the last page
 * outlived a few scavenges each and were copied into the old generation only to be dropped there.
 */
export async function readZoneRows(
  q: store.Queryable,
  zone: string,
  /** The zone's generation, when the caller read its row through `q` already. */
  known?: bigint,
): Promise<ZoneRows> {
  const generation = known ?? (await store.getZone(q, zone))?.generation;
  if (generation === undefined) throw new Error(`zone "${zone}" vanished from the database`);
  const records: OvhRecord[] = [];
  await store.listRecordsInPages(q, zone, (page) => {
    for (const r of page) records.push(recordOf(zone, r));
  });
  return { generation, records, ...(await readSideRows(q, zone)) };
}

/** What a base holds beside its records, as `q` sees it: ownership rows (a page at a time), withdrawn targets, targets' health. */
export async function readSideRows(q: store.Queryable, zone: string): Promise<Omit<ZoneRows, 'generation' | 'records'>> {
  const ownership: store.OwnershipRow[] = [];
  await store.listOwnershipInPages(q, zone, (page) => void ownership.push(...page));
  return { ownership, withdrawals: await store.listWithdrawals(q, zone), health: await store.listTargetHealth(q, zone) };
}

/** The characters of the base's record strings, counted when it was made (undefined for a base made elsewhere). */
export function baseTextChars(b: ZoneBase): number | undefined {
  return textChars.get(b);
}

/*
 * Estimates of what the objects of a base and of its answers hold on V8's heap, per item, beyond the
 * characters of their strings (measured with bench/reads-scale.ts's zone: heap used before and after
 * building, after a GC). An estimate, not a measure: the bound is of the right size, not exact.
 */
const BASE_BYTES_PER_RECORD = 325;
const BASE_BYTES_PER_OWNERSHIP_ROW = 130;

export function baseBytes(b: ZoneBase): number {
  let chars = baseTextChars(b);
  if (chars === undefined) {
    chars = 0;
    for (const r of b.records) chars += recordChars(r);
  }
  return b.records.length * BASE_BYTES_PER_RECORD + b.ownership.length * BASE_BYTES_PER_OWNERSHIP_ROW + 2 * chars;
}
