/**
 * What a zone must hold after applies, shared by the tests (through expect.ts) and `npm run soak`:
 * plain values to compare, no assertion library.
 */
import { ChangeAction, type ZoneApplyResult } from '../../src/gen/dnsplane/v1/zone_pb.js';
import type { OvhSimulator, SimRecord } from '../../src/ovhsim/index.js';
import { txtForAnswer } from '../../src/ovhwire/records.js';
import * as store from '../../src/store/index.js';

type RecordFields = { id: string; subDomain: string; fieldType: string; target: string; ttl: number };
const line = (r: RecordFields): string => `${r.id} ${r.subDomain} ${r.fieldType} ${r.target} ${r.ttl}`;

/** Records as sorted "name type target ttl" lines, ids left out: a draft and what is published compare so. */
export function recordContents(records: readonly Omit<RecordFields, 'id'>[]): string[] {
  return records.map((r) => `${r.subDomain} ${r.fieldType} ${r.target} ${r.ttl}`).sort();
}

/** The cache of a zone as sorted "id name type target ttl" lines. */
export async function cachedLines(q: store.Queryable, zone: string): Promise<string[]> {
  return (await store.listRecords(q, zone)).map(line).sort();
}

/**
 * The simulator's draft of a zone as the cache must hold it: sorted "id name type target ttl" lines,
 * each target as OVH answers it (a TXT target quoted, in 255-character strings, ovhwire's txtForAnswer).
 */
export function answeredLines(sim: OvhSimulator, zone: string): string[] {
  return sim
    .draftRecords(zone)
    .map((r) => line({ ...r, target: r.fieldType === 'TXT' ? txtForAnswer(r.target) : r.target }))
    .sort();
}

/** The record sets the accepted applies leave, folded in generation order: "name type" -> sorted targets. */
export function foldAccepted(applied: readonly ZoneApplyResult[]): Map<string, string> {
  const expected = new Map<string, string>();
  for (const z of [...applied].sort((a, b) => (a.generation < b.generation ? -1 : 1))) {
    for (const c of z.changes) {
      const e = c.after ?? c.before!;
      const key = `${e.dnsName} ${e.recordType}`;
      if (c.action === ChangeAction.DELETE) expected.delete(key);
      else expected.set(key, [...c.after!.targets].sort().join(','));
    }
  }
  return expected;
}

/** The simulator's published record sets of a zone, "name type" -> targets, leaving out what `skip` says. */
export function publishedSets(sim: OvhSimulator, zone: string, skip: (r: SimRecord) => boolean): Map<string, string[]> {
  const published = new Map<string, string[]>();
  for (const r of sim.publishedRecords(zone)) {
    if (skip(r)) continue;
    const key = `${r.subDomain}.${zone} ${r.fieldType}`;
    published.set(key, [...(published.get(key) ?? []), r.target]);
  }
  return published;
}

/** publishedSets with each target list sorted and joined, comparable with foldAccepted. */
export function joined(sets: Map<string, string[]>): Map<string, string> {
  return new Map([...sets].map(([k, v]) => [k, [...v].sort().join(',')]));
}
