/**
 * What a zone must hold after many applies, shared by the concurrency test and `npm run soak`.
 */
import { ChangeAction, type ZoneApplyResult } from '../../src/gen/dnsplane/v1/zone_pb.js';
import type { OvhSimulator, SimRecord } from '../../src/ovhsim/index.js';

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
