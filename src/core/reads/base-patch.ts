/**
 * A zone's base at a new generation made from the previous generation's base and what the generations
 * in between changed (core/reads/heard-changes.ts): the records of the ids they named and the ownership
 * rows of the sets they named, as re-read in one snapshot, with the withdrawn targets and the targets'
 * health (small tables) read whole. Only the record sets touched are mapped again (ovh/mapping.ts
 * setEndpoint); every other record, record set, endpoint and ownership row is the previous base's own
 * object, and the arrays are merged in order rather than sorted. The result is the base a full read of
 * that snapshot makes (zoneBaseOf), item for item and in the same order (test/core/base-patch.test.ts):
 * what a change costs follows what it touched, not what the zone holds — apart from copying references.
 */
import { isRecordType, recordSetKey, type Endpoint, type RecordSetKey, type RecordType } from '../../dns/types.js';
import { ovhRecordKey, setEndpoint } from '../../ovh/mapping.js';
import { recordOf, type OvhRecord } from '../../ovh/types.js';
import * as store from '../../store/index.js';
import type { HeardChanges } from './heard-changes.js';
import type { Slicer } from '../slices.js';
import { compareRecords } from './sets-index.js';
import { SetRecords } from './set-records.js';
import { mergeSorted, replaceRuns, runOf, walkReplacedRuns } from './sorted.js';
import { baseTextChars, compareOwnershipRows, compareSets, noteTextChars, readZoneRows, recordChars, type ZoneBase } from './zone-base.js';

/** What the generations since a base changed, as one snapshot shows it now. */
export interface ReadChange {
  /** The record ids the generations named, and the records of those ids that exist now. */
  ids: readonly string[];
  rows: readonly store.RecordRow[];
  /** The ownership sets they named, and those sets' ownership rows now. */
  sets: ReadonlyArray<{ dnsName: string; recordType: string }>;
  ownership: readonly store.OwnershipRow[];
  /** Read whole. */
  withdrawals: store.WithdrawalRow[];
  health: store.TargetHealthRow[];
}

/**
 * What the zone's base at the generation `q` sees is made from (in `q`'s snapshot): what changed since
 * `previous`, when every generation since was heard with what it changed (`heard`); else the whole
 * zone — `reserve` told first the generation and how many records that brings (the read cache counts
 * the build against its bound before it is made).
 */
export async function readForBase(
  q: store.Queryable,
  zone: string,
  previous: ZoneBase | undefined,
  heard: HeardChanges | undefined,
  reserve: (generation: bigint, records: number) => void,
): Promise<{ whole: Awaited<ReturnType<typeof readZoneRows>> } | { whole?: undefined; generation: bigint; previous: ZoneBase; change: ReadChange }> {
  const current = await store.getZone(q, zone);
  if (!current) throw new Error(`zone "${zone}" vanished from the database`);
  const change = previous && heard?.between(previous.generation, current.generation);
  if (!previous || !change) {
    reserve(current.generation, await store.countZoneRecords(q, zone));
    return { whole: await readZoneRows(q, zone, current.generation) };
  }
  const [rows, ownership] = [await store.listRecordsByIds(q, zone, change.ids), await store.listOwnershipForSets(q, zone, change.sets)];
  const [withdrawals, health] = [await store.listWithdrawals(q, zone), await store.listTargetHealth(q, zone)];
  return { generation: current.generation, previous, change: { ...change, rows, ownership, withdrawals, health } };
}

export interface PatchedBase {
  base: ZoneBase;
  /** The record sets whose records or ownership rows changed, by name then type. */
  touched: Array<{ key: RecordSetKey; dnsName: string; recordType: string }>;
  /** The endpoints of the touched sets that exist now (the base's own objects), in the base's order. */
  endpoints: Endpoint[];
  /** The records the change removed (the previous base's) and added (the new base's), and the same of ownership rows. */
  removed: OvhRecord[];
  added: OvhRecord[];
  ownersRemoved: store.OwnershipRow[];
  ownersAdded: store.OwnershipRow[];
}

/** A record's set, as recordsToEndpoints groups it; undefined for a type dnsplane does not manage. */
export function setKeyOf(r: OvhRecord, zone: string): RecordSetKey | undefined {
  return isRecordType(r.fieldType.toUpperCase()) ? ovhRecordKey(r, zone) : undefined;
}

/** The base at `generation`: `old` with `change` applied. */
export async function patchBase(old: ZoneBase, zone: string, generation: bigint, change: ReadChange, slicer: Slicer): Promise<PatchedBase> {
  const changedIds = new Set(change.ids);
  const added = change.rows.map((r): OvhRecord => recordOf(zone, r)).sort(compareRecords);
  let chars = baseTextChars(old) ?? 0;
  const kept: OvhRecord[] = [];
  const removed: OvhRecord[] = [];
  for (let i = 0; i < old.records.length; i++) {
    if (i % 4096 === 0) await slicer.check();
    const r = old.records[i]!;
    if (changedIds.has(r.id)) removed.push(r);
    else kept.push(r);
  }
  const records = mergeSorted(kept, added, compareRecords);
  for (const r of removed) chars -= recordChars(r);
  for (const r of added) chars += recordChars(r);

  // The sets touched: those of the records removed or added, and those whose ownership changed.
  const touchedByKey = new Map<RecordSetKey, { key: RecordSetKey; dnsName: string; recordType: string }>();
  const touch = (key: RecordSetKey) => {
    if (touchedByKey.has(key)) return;
    const space = key.lastIndexOf(' ');
    touchedByKey.set(key, { key, dnsName: key.slice(0, space), recordType: key.slice(space + 1) });
  };
  for (const r of [...removed, ...added]) {
    const key = setKeyOf(r, zone);
    if (key !== undefined) touch(key);
  }
  for (const s of change.sets) touch(recordSetKey(s.dnsName, s.recordType));
  const touched = [...touchedByKey.values()].sort(compareSets);

  // Their records now: the old ones not named, and the ones read (in record order, as grouping gives).
  const addedByKey = new Map<RecordSetKey, OvhRecord[]>();
  for (const r of added) {
    const key = setKeyOf(r, zone);
    if (key !== undefined) addedByKey.set(key, [...(addedByKey.get(key) ?? []), r]);
  }
  const groups: OvhRecord[][] = [];
  const endpoints: Endpoint[] = [];
  for (const t of touched) {
    const before = (old.recordsByKey.get(t.key) ?? []).filter((r) => !changedIds.has(r.id));
    const group = mergeSorted(before, addedByKey.get(t.key) ?? [], compareRecords);
    if (group.length === 0) continue;
    groups.push(group);
    endpoints.push(setEndpoint(t.key, t.dnsName, t.recordType as RecordType, group, zone));
  }
  await slicer.check();

  // The endpoints with the touched ones in their place, and each set's records beside its endpoint.
  const allEndpoints: Endpoint[] = [];
  const setRecords: (readonly OvhRecord[])[] = [];
  walkReplacedRuns(old.endpoints, touched, endpoints, compareSets, (from, i) => {
    allEndpoints.push(from === 'old' ? old.endpoints[i]! : endpoints[i]!);
    setRecords.push(from === 'old' ? old.recordsByKey.at(i) : groups[i]!);
  });
  await slicer.check();

  const changedSets = sortedSets(change.sets);
  const ownersAdded = [...change.ownership].sort(compareOwnershipRows);
  const base: ZoneBase = {
    generation,
    records,
    recordsByKey: new SetRecords(allEndpoints, setRecords),
    endpoints: allEndpoints,
    ownership: replaceRuns(old.ownership, changedSets, ownersAdded, compareSets),
    withdrawals: change.withdrawals,
    health: change.health,
  };
  noteTextChars(base, chars);
  const ownersRemoved = changedSets.flatMap((set) => runOf(old.ownership, set, compareSets));
  return { base, touched, endpoints, removed, added, ownersRemoved, ownersAdded };
}

function sortedSets(sets: ReadonlyArray<{ dnsName: string; recordType: string }>): Array<{ dnsName: string; recordType: string }> {
  return [...sets].sort(compareSets);
}
