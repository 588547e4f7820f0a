/**
 * Property-based tests of the whole write path: OVH records -> endpoints -> diff -> OVH operations ->
 * OVH records again.
 *
 * Minimal, as asserted in (d): for one record set, let E be the OVH records that hold it now
 * (compared by canonical target), D the desired targets and t the TTL OVH will store (ovhTtl).
 *   K = the desired targets some record of E already holds (kept),
 *   A = |D| - |K|             (targets to add),
 *   R = |E| - |K|             (records to get rid of: removed targets and duplicate copies),
 *   T = |{k in K : no record of E holding k has TTL t}|   (kept targets needing a TTL change).
 * Every added target needs a POST or a PUT, every surplus record a DELETE or a PUT, and one operation
 * (a PUT) serves at most one of each; a kept target without a record at the right TTL needs one more
 * write. So no sequence of single-record operations does it in fewer than max(A, R) + T, and the
 * builder must use exactly that many, without ever both POSTing and DELETEing in one set.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyChanges, diffDesired, type OwnerView } from '../../src/dns/diff.js';
import { endpointKey, normalizeEndpoint } from '../../src/dns/endpoint.js';
import { formatTxtPresentation } from '../../src/dns/txt.js';
import type { Change, Endpoint, Policy, RecordType } from '../../src/dns/types.js';
import { adjustEndpointForOvh, ovhRecordKey, ovhTargetToCanonical, ovhTtl, recordsToEndpoints } from '../../src/ovh/mapping.js';
import { applyOperationsToRecords, buildOperations, buildZoneOperations } from '../../src/ovh/ops.js';
import type { OvhOperation, OvhRecord } from '../../src/ovh/types.js';

const zone = 'example.com';
const NAMES = ['', 'www', 'api', 'a.b', '*'];
const TYPES = ['A', 'AAAA', 'TXT', 'MX', 'CNAME'] as const;
type T = (typeof TYPES)[number];

/** Targets as OVH may hold or answer them (several forms of one target on purpose). */
const OVH_TARGETS: Record<T, string[]> = {
  A: ['192.0.2.1', '192.0.2.2', '192.0.2.3', '192.0.2.4'],
  AAAA: ['2001:db8::1', '2001:DB8:0:0::1', '2001:db8::2', '::ffff:192.0.2.1'],
  // Plain (cache form), quoted with escapes, quoted without escaping inner quotes, split over 255.
  TXT: ['v=spf1 -all', '"v=spf1 -all"', 'say "hi"', '"say \\"hi\\""', '"say "hi""', 'x'.repeat(300), formatTxtPresentation('x'.repeat(300)), 'a b'],
  MX: ['10 mx1', '10 mx1.example.com.', '20 mx.example.org.', '0 .'],
  CNAME: ['lb', 'lb.example.com.', 'lb.example.org.', 'www.example.com.'],
};
/** Targets as tenants write them. */
const DESIRED_TARGETS: Record<T, string[]> = {
  A: ['192.0.2.1', '192.0.2.2', '192.0.2.3', '192.0.2.5'],
  AAAA: ['2001:DB8::1', '2001:db8::2', '2001:db8::3'],
  TXT: ['v=spf1 -all', 'say "hi"', 'x'.repeat(300), '"a b"', 'new'],
  MX: ['10 mx1.example.com', '20 mx.example.org', '30 mx3.example.com', '0 .'],
  CNAME: ['lb.example.com', 'lb.example.org', 'other.example.net'],
};
const OVH_TTLS = [0, 60, 300, 3600];
const DESIRED_TTLS = [0, 30, 60, 300, 3600];

let idCounter = 0;
const arbRecords: fc.Arbitrary<OvhRecord[]> = fc
  .array(
    fc.oneof(
      {
        weight: 12,
        arbitrary: fc.constantFrom(...TYPES).chain((type) =>
          fc.record({
            subDomain: fc.constantFrom(...NAMES),
            fieldType: fc.constant<string>(type),
            target: fc.constantFrom(...OVH_TARGETS[type]),
            ttl: fc.constantFrom(...OVH_TTLS),
          }),
        ),
      },
      // A type dnsplane does not manage: must come out untouched.
      {
        weight: 1,
        arbitrary: fc.record({
          subDomain: fc.constantFrom(...NAMES),
          fieldType: fc.constant('SVCB'),
          target: fc.constant('1 . alpn=h2'),
          ttl: fc.constant(300),
        }),
      },
    ),
    { maxLength: 18 },
  )
  .map((rows) => rows.map((r, i) => ({ id: String(5_000_000_000 + i), zone, ...r })));

/** A valid desired state: per name nothing, one CNAME (not at the apex), or some other types. */
const arbDesired: fc.Arbitrary<Endpoint[]> = fc
  .tuple(
    ...NAMES.map((name) =>
      fc.oneof(
        fc.constant<[T, string[], number][]>([]),
        name === ''
          ? fc.constant<[T, string[], number][]>([])
          : fc
              .tuple(fc.constantFrom(...DESIRED_TARGETS.CNAME), fc.constantFrom(...DESIRED_TTLS))
              .map(([t, ttl]) => [['CNAME', [t], ttl] as [T, string[], number]]),
        fc
          .subarray(['A', 'AAAA', 'TXT', 'MX'] as T[], { minLength: 1 })
          .chain((types) =>
            fc.tuple(
              ...types.map((type) => fc.tuple(fc.constant(type), fc.subarray(DESIRED_TARGETS[type], { minLength: 1 }), fc.constantFrom(...DESIRED_TTLS))),
            ),
          ),
      ),
    ),
  )
  .map((perName) =>
    perName.flatMap((sets, i) =>
      sets.map(([recordType, targets, ttl]) => {
        const name = NAMES[i] as string;
        const dnsName = name === '' ? zone : `${name}.${zone}`;
        return adjustEndpointForOvh(normalizeEndpoint({ dnsName, recordType, targets, ttl }, 'desired', { zone })).endpoint;
      }),
    ),
  );

const self = (): OwnerView => ({ kind: 'self' });
const newId = (): string => String(9_000_000_000 + idCounter++);
const keyOfChange = (c: Change): string => endpointKey((c.after ?? c.before) as Endpoint);

function recordsOf(records: readonly OvhRecord[], key: string): OvhRecord[] {
  return records.filter((r) => ovhRecordKey(r, zone) === key);
}

/** The lower bound of the module comment for one change. */
function minimalCount(change: Change, existing: readonly OvhRecord[]): number {
  const type = (change.after ?? change.before)?.recordType as RecordType;
  const desired = change.after?.targets ?? [];
  const ttl = change.after === undefined ? 0 : ovhTtl(change.after.ttl).ttl;
  const held = existing.map((r) => ({ target: ovhTargetToCanonical(type, r.target, zone) ?? r.target, ttl: r.ttl }));
  const kept = desired.filter((t) => held.some((h) => h.target === t));
  const added = desired.length - kept.length;
  const surplus = existing.length - kept.length;
  const ttlChanges = kept.filter((t) => !held.some((h) => h.target === t && h.ttl === ttl)).length;
  return Math.max(added, surplus) + ttlChanges;
}

describe('plan and operations, everything owned, policy sync', () => {
  it('reach exactly the desired state with the minimal number of operations', () => {
    fc.assert(
      fc.property(arbRecords, arbDesired, (records, desired) => {
        const current = recordsToEndpoints(records, zone).endpoints;
        const { changes, conflicts } = diffDesired({ current, desired, policy: 'sync', ownerOf: self });
        expect(conflicts).toEqual([]);

        // (a) the changes turn the current endpoints into the desired ones.
        expect(applyChanges(current, changes)).toEqual(sorted(desired));

        // (b) the operations turn the current records into records that map to the desired endpoints.
        const ops = buildZoneOperations(zone, changes, records);
        const after = applyOperationsToRecords(records, ops, newId);
        expect(recordsToEndpoints(after, zone).endpoints).toEqual(sorted(desired));
        // Unmanaged types are untouched.
        expect(after.filter((r) => r.fieldType === 'SVCB')).toEqual(records.filter((r) => r.fieldType === 'SVCB'));
        // Every changed set is clean afterwards: one record per target, all at the desired TTL.
        for (const c of changes) {
          const held = recordsOf(after, keyOfChange(c));
          expect(held).toHaveLength(c.after?.targets.length ?? 0);
          for (const r of held) expect(r.ttl).toBe(ovhTtl(c.after?.ttl ?? 0).ttl);
        }

        // (c) planning again from the result: no change, no operation.
        const again = diffDesired({ current: recordsToEndpoints(after, zone).endpoints, desired, policy: 'sync', ownerOf: self });
        expect(again).toEqual({ changes: [], conflicts: [] });
        expect(buildZoneOperations(zone, again.changes, after)).toEqual([]);

        // (d) minimal: per set, exactly max(A, R) + T operations, never POST and DELETE together.
        let total = 0;
        for (const c of changes) {
          const existing = recordsOf(records, keyOfChange(c));
          const setOps: OvhOperation[] = buildOperations(zone, c, existing);
          expect(setOps.length).toBe(minimalCount(c, existing));
          expect(setOps.some((o) => o.method === 'POST') && setOps.some((o) => o.method === 'DELETE')).toBe(false);
          total += setOps.length;
        }
        expect(ops.length).toBe(total);
        // An unchanged zone costs nothing.
        if (changes.length === 0) expect(ops).toEqual([]);
      }),
      { numRuns: 200 },
    );
  });
});

function sorted(endpoints: Endpoint[]): Endpoint[] {
  return [...endpoints].sort((a, b) =>
    a.dnsName < b.dnsName ? -1 : a.dnsName > b.dnsName ? 1 : a.recordType < b.recordType ? -1 : a.recordType > b.recordType ? 1 : 0,
  );
}

describe('ownership, any policy', () => {
  const arbOwner = fc.constantFrom<OwnerView>({ kind: 'self' }, { kind: 'none' }, { kind: 'other', owner: 'team-b' });

  it('never touches what self does not own, and accounts for every desired set', () => {
    fc.assert(
      fc.property(
        arbRecords,
        arbDesired,
        fc.func(arbOwner),
        fc.constantFrom<Policy>('sync', 'upsert-only', 'create-only'),
        (records, desired, ownerFn, policy) => {
          const ownerOf = (key: string): OwnerView => ownerFn(key);
          const current = recordsToEndpoints(records, zone).endpoints;
          const byKey = new Map(current.map((e) => [endpointKey(e), e]));
          const { changes, conflicts } = diffDesired({ current, desired, policy, ownerOf });

          for (const c of changes) {
            const key = keyOfChange(c);
            const owner = ownerOf(key).kind;
            if (c.action === 'create') {
              expect(byKey.has(key)).toBe(false);
              expect(owner).not.toBe('other');
            } else {
              expect(owner).toBe('self');
              expect(c.before).toEqual(byKey.get(key));
            }
            if (c.action === 'delete') expect(policy).toBe('sync');
            if (c.action === 'update') expect(policy).not.toBe('create-only');
          }
          // Each desired set is already there, changed, or reported — exactly one of them.
          for (const d of desired) {
            const key = endpointKey(d);
            const cur = byKey.get(key);
            const same = cur !== undefined && cur.ttl === d.ttl && cur.targets.join('\n') === d.targets.join('\n');
            const changed = changes.filter((c) => c.after !== undefined && endpointKey(c.after) === key).length;
            const reported = conflicts.filter((c) => endpointKey(c.endpoint) === key).length;
            expect(Number(same) + changed + reported).toBe(1);
          }
          // The changes still fit the current state, and their operations apply.
          applyChanges(current, changes);
          applyOperationsToRecords(records, buildZoneOperations(zone, changes, records), newId);
        },
      ),
      { numRuns: 200 },
    );
  });
});
