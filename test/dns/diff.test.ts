import { describe, expect, it } from 'vitest';
import {
  REASON_CREATE_ONLY,
  REASON_UNOWNED,
  SHARED_LABEL,
  applyChanges,
  diffChangeSet,
  diffDesired,
  type OwnerOf,
  type OwnerView,
} from '../../src/dns/diff.js';
import { InvalidInputError } from '../../src/dns/errors.js';
import type { ChangeSet, Endpoint, Policy, RecordType } from '../../src/dns/types.js';

const ep = (name: string, recordType: RecordType, targets: string[], ttl = 300): Endpoint => ({
  dnsName: `${name}example.com`,
  recordType,
  targets: [...targets].sort(),
  ttl,
});

/** Ownership from a table of `name type` -> owner ('self', 'none' by default, or another tenant). */
function owners(table: Record<string, string>): OwnerOf {
  return (key): OwnerView => {
    const o = table[key];
    if (o === undefined || o === 'none') return { kind: 'none' };
    if (o === 'self') return { kind: 'self' };
    return { kind: 'other', owner: o };
  };
}

const diff = (current: Endpoint[], desired: Endpoint[], table: Record<string, string>, policy: Policy = 'sync', scope?: (n: string) => boolean) =>
  diffDesired({ current, desired, policy, ownerOf: owners(table), ...(scope ? { scope } : {}) });

describe('diffDesired', () => {
  const www = ep('www.', 'A', ['192.0.2.1']);
  const www2 = ep('www.', 'A', ['192.0.2.2']);

  it('creates a set that is absent and unowned', () => {
    expect(diff([], [www], {})).toEqual({ changes: [{ action: 'create', after: www }], conflicts: [] });
  });

  it('creates an own set that is empty', () => {
    expect(diff([], [www], { 'www.example.com A': 'self' }).changes).toEqual([{ action: 'create', after: www }]);
  });

  it('reports an empty set owned by another tenant as a conflict', () => {
    const r = diff([], [www], { 'www.example.com A': 'team-b' });
    expect(r.changes).toEqual([]);
    expect(r.conflicts).toEqual([
      { action: 'create', endpoint: www, owner: 'team-b', reason: 'www.example.com A is owned by tenant "team-b" (the set is empty)' },
    ]);
  });

  it('does nothing for an equal set, whoever owns it', () => {
    for (const owner of ['self', 'none', 'team-b']) {
      expect(diff([www], [{ ...www, labels: { a: 'b' } }], { 'www.example.com A': owner })).toEqual({ changes: [], conflicts: [] });
    }
  });

  it('updates an own set that differs, in targets or only in TTL', () => {
    expect(diff([www], [www2], { 'www.example.com A': 'self' }).changes).toEqual([{ action: 'update', before: www, after: www2 }]);
    const ttl = { ...www, ttl: 60 };
    expect(diff([www], [ttl], { 'www.example.com A': 'self' }).changes).toEqual([{ action: 'update', before: www, after: ttl }]);
  });

  it('reports a differing set owned by another tenant, or by no one', () => {
    expect(diff([www], [www2], { 'www.example.com A': 'team-b' }).conflicts).toEqual([
      { action: 'update', endpoint: www2, owner: 'team-b', reason: 'www.example.com A is owned by tenant "team-b"' },
    ]);
    expect(diff([www], [www2], {}).conflicts).toEqual([{ action: 'update', endpoint: www2, owner: '', reason: REASON_UNOWNED }]);
    expect(REASON_UNOWNED).toBe('exists in OVH without an owner; an admin must assign it');
  });

  it('sync deletes own sets in scope that are not desired, and nothing else', () => {
    const mine = ep('mine.', 'TXT', ['x']);
    const outOfScope = ep('far.', 'TXT', ['x']);
    const theirs = ep('theirs.', 'TXT', ['x']);
    const nobodys = ep('nobody.', 'TXT', ['x']);
    const r = diff(
      [mine, outOfScope, theirs, nobodys],
      [],
      { 'mine.example.com TXT': 'self', 'far.example.com TXT': 'self', 'theirs.example.com TXT': 'team-b' },
      'sync',
      (name) => name !== 'far.example.com',
    );
    expect(r).toEqual({ changes: [{ action: 'delete', before: mine }], conflicts: [] });
  });

  it('upsert-only never deletes', () => {
    const mine = ep('mine.', 'TXT', ['x']);
    expect(diff([mine, www], [www2, ep('new.', 'A', ['192.0.2.9'])], { 'mine.example.com TXT': 'self', 'www.example.com A': 'self' }, 'upsert-only')).toEqual({
      changes: [
        { action: 'create', after: ep('new.', 'A', ['192.0.2.9']) },
        { action: 'update', before: www, after: www2 },
      ],
      conflicts: [],
    });
  });

  it('create-only creates, reports existing differing sets, never deletes', () => {
    const mine = ep('mine.', 'TXT', ['x']);
    const r = diff([mine, www], [www2, ep('new.', 'A', ['192.0.2.9'])], { 'mine.example.com TXT': 'self', 'www.example.com A': 'self' }, 'create-only');
    expect(r.changes).toEqual([{ action: 'create', after: ep('new.', 'A', ['192.0.2.9']) }]);
    expect(r.conflicts).toEqual([{ action: 'update', endpoint: www2, owner: '', reason: REASON_CREATE_ONLY }]);
    expect(REASON_CREATE_ONLY).toBe('exists; policy create-only');
  });

  it('conflicts never block the other changes', () => {
    const a = ep('a.', 'A', ['192.0.2.1']);
    const b = ep('b.', 'A', ['192.0.2.1']);
    const c = ep('c.', 'A', ['192.0.2.1']);
    const r = diff(
      [
        { ...a, ttl: 1 },
        { ...b, ttl: 1 },
        { ...c, ttl: 1 },
      ],
      [a, b, c, ep('d.', 'A', ['192.0.2.1'])],
      { 'a.example.com A': 'team-b', 'b.example.com A': 'self' },
    );
    expect(r.changes.map((x) => `${x.action} ${x.after?.dnsName}`)).toEqual(['update b.example.com', 'create d.example.com']);
    expect(r.conflicts.map((x) => `${x.endpoint.dnsName} ${x.owner}`)).toEqual(['a.example.com team-b', 'c.example.com ']);
  });

  it('is deterministic: sorted by name then type, whatever the input order', () => {
    const desired = [ep('b.', 'TXT', ['1']), ep('a.', 'TXT', ['1']), ep('b.', 'A', ['192.0.2.1']), ep('a.', 'AAAA', ['::1'])];
    const current = [ep('z.', 'A', ['192.0.2.1']), ep('c.', 'A', ['192.0.2.1'])];
    const table = { 'z.example.com A': 'self', 'c.example.com A': 'self' };
    const one = diff(current, desired, table);
    const two = diff([...current].reverse(), [...desired].reverse(), table);
    expect(two).toEqual(one);
    expect(one.changes.map((c) => `${(c.after ?? c.before)?.dnsName} ${(c.after ?? c.before)?.recordType}`)).toEqual([
      'a.example.com AAAA',
      'a.example.com TXT',
      'b.example.com A',
      'b.example.com TXT',
      'c.example.com A',
      'z.example.com A',
    ]);
  });

  it('rejects a desired state with a repeated name and type', () => {
    expect(() => diff([], [www, www2], {})).toThrow(InvalidInputError);
    expect(() => diff([], [www, www2], {})).toThrow('desired[1]: duplicate record set www.example.com A');
  });

  describe('CNAME beside another type', () => {
    const cname = ep('www.', 'CNAME', ['lb.example.org']);

    it('is a conflict when the other set stays (owned by someone else)', () => {
      const r = diff([www], [cname], { 'www.example.com A': 'team-b' });
      expect(r.changes).toEqual([]);
      expect(r.conflicts).toEqual([
        { action: 'create', endpoint: cname, owner: 'team-b', reason: 'a CNAME cannot coexist with other record types; www.example.com keeps A' },
      ]);
    });

    it('is fine when sync deletes the own set it replaces', () => {
      const r = diff([www], [cname], { 'www.example.com A': 'self' });
      expect(r).toEqual({
        changes: [
          { action: 'delete', before: www },
          { action: 'create', after: cname },
        ],
        conflicts: [],
      });
    });

    it('is a conflict under upsert-only, which keeps the old set', () => {
      const r = diff([www], [cname], { 'www.example.com A': 'self' }, 'upsert-only');
      expect(r.changes).toEqual([]);
      expect(r.conflicts[0]?.reason).toMatch(/cannot coexist/);
    });

    it('is a conflict for a new type beside an existing CNAME', () => {
      const txt = ep('www.', 'TXT', ['x']);
      const r = diff([cname], [txt], {}, 'upsert-only');
      expect(r.conflicts).toEqual([
        { action: 'create', endpoint: txt, owner: '', reason: 'www.example.com keeps a CNAME; no other record type can be added beside it' },
      ]);
    });
  });
});

describe('diffChangeSet', () => {
  const a1 = ep('a.', 'A', ['192.0.2.1']);
  const a2 = ep('a.', 'A', ['192.0.2.2']);
  const a3 = ep('a.', 'A', ['192.0.2.3']);
  const cs = (p: Partial<ChangeSet>): ChangeSet => ({ create: [], updateOld: [], updateNew: [], delete: [], ...p });
  const self = { 'a.example.com A': 'self' };

  it('create: absent -> create; equal -> nothing; own and different -> update; others -> conflict', () => {
    expect(diffChangeSet([], cs({ create: [a1] }), owners({})).changes).toEqual([{ action: 'create', after: a1 }]);
    expect(diffChangeSet([a1], cs({ create: [a1] }), owners({}))).toEqual({ changes: [], conflicts: [] });
    expect(diffChangeSet([a1], cs({ create: [a2] }), owners(self)).changes).toEqual([{ action: 'update', before: a1, after: a2 }]);
    expect(diffChangeSet([a1], cs({ create: [a2] }), owners({ 'a.example.com A': 'team-b' })).conflicts[0]?.owner).toBe('team-b');
    expect(diffChangeSet([a1], cs({ create: [a2] }), owners({})).conflicts[0]?.reason).toBe(REASON_UNOWNED);
  });

  it('update is computed against the current set, not updateOld', () => {
    // external-dns believes a1, OVH holds a3: the update goes from a3 to a2.
    expect(diffChangeSet([a3], cs({ updateOld: [a1], updateNew: [a2] }), owners(self)).changes).toEqual([{ action: 'update', before: a3, after: a2 }]);
    // Already what updateNew says: nothing.
    expect(diffChangeSet([a2], cs({ updateOld: [a1], updateNew: [a2] }), owners(self)).changes).toEqual([]);
  });

  it('update of an absent own set is a create; of an absent set of someone else a conflict', () => {
    expect(diffChangeSet([], cs({ updateOld: [a1], updateNew: [a2] }), owners(self)).changes).toEqual([{ action: 'create', after: a2 }]);
    expect(diffChangeSet([], cs({ updateOld: [a1], updateNew: [a2] }), owners({ 'a.example.com A': 'team-b' })).conflicts).toHaveLength(1);
  });

  it('update of a set owned by someone else is a conflict', () => {
    const r = diffChangeSet([a1], cs({ updateOld: [a1], updateNew: [a2] }), owners({ 'a.example.com A': 'team-b' }));
    expect(r).toEqual({ changes: [], conflicts: [{ action: 'update', endpoint: a2, owner: 'team-b', reason: 'a.example.com A is owned by tenant "team-b"' }] });
  });

  it('delete removes the current own set; absent -> nothing; others -> conflict', () => {
    expect(diffChangeSet([a3], cs({ delete: [a1] }), owners(self)).changes).toEqual([{ action: 'delete', before: a3 }]);
    expect(diffChangeSet([], cs({ delete: [a1] }), owners(self))).toEqual({ changes: [], conflicts: [] });
    expect(diffChangeSet([a1], cs({ delete: [a1] }), owners({ 'a.example.com A': 'team-b' })).conflicts).toEqual([
      { action: 'delete', endpoint: a1, owner: 'team-b', reason: 'a.example.com A is owned by tenant "team-b"' },
    ]);
    expect(diffChangeSet([a1], cs({ delete: [a1] }), owners({})).conflicts[0]?.reason).toBe(REASON_UNOWNED);
  });

  it('checks update pairs', () => {
    expect(() => diffChangeSet([], cs({ updateOld: [a1], updateNew: [] }), owners({}))).toThrow(
      'changes.updateNew: updateOld and updateNew must have the same length (got 1 and 0)',
    );
    expect(() => diffChangeSet([], cs({ updateOld: [a1], updateNew: [ep('b.', 'A', ['192.0.2.1'])] }), owners({}))).toThrow(
      'changes.updateNew[0]: must have the same name and type as updateOld[0] (a.example.com A), got b.example.com A',
    );
  });

  it('rejects a record set named twice', () => {
    expect(() => diffChangeSet([], cs({ create: [a1], delete: [a2] }), owners({}))).toThrow(
      'changes.delete[0]: record set a.example.com A appears more than once in the change set (also changes.create[0])',
    );
  });

  it('applies a policy when given one', () => {
    expect(diffChangeSet([a1], cs({ delete: [a1] }), owners(self), { policy: 'upsert-only' }).conflicts).toEqual([
      { action: 'delete', endpoint: a1, owner: '', reason: 'policy upsert-only never deletes' },
    ]);
    expect(diffChangeSet([a1], cs({ updateOld: [a1], updateNew: [a2] }), owners(self), { policy: 'create-only' }).conflicts[0]?.reason).toBe(
      REASON_CREATE_ONLY,
    );
  });

  it('replaces an A by a CNAME in one change set; refuses both at once', () => {
    const cname = ep('a.', 'CNAME', ['lb.example.org']);
    expect(diffChangeSet([a1], cs({ create: [cname], delete: [a1] }), owners(self)).changes).toEqual([
      { action: 'delete', before: a1 },
      { action: 'create', after: cname },
    ]);
    const both = diffChangeSet([], cs({ create: [cname, a1] }), owners({}));
    expect(both.changes).toEqual([]);
    expect(both.conflicts.map((c) => c.endpoint.recordType)).toEqual(['A', 'CNAME']);
  });

  it('keeps going past conflicts', () => {
    const b = ep('b.', 'TXT', ['x']);
    const r = diffChangeSet([a1], cs({ create: [b], updateOld: [a1], updateNew: [a2] }), owners({ 'a.example.com A': 'team-b' }));
    expect(r.changes).toEqual([{ action: 'create', after: b }]);
    expect(r.conflicts).toHaveLength(1);
  });
});

describe('applyChanges', () => {
  it('applies creates, updates and deletes, sorted', () => {
    const a = ep('a.', 'A', ['192.0.2.1']);
    const b = ep('b.', 'A', ['192.0.2.1']);
    const b2 = ep('b.', 'A', ['192.0.2.2']);
    const c = ep('c.', 'A', ['192.0.2.1']);
    expect(
      applyChanges(
        [c, b],
        [
          { action: 'create', after: a },
          { action: 'update', before: b, after: b2 },
          { action: 'delete', before: c },
        ],
      ),
    ).toEqual([a, b2]);
    expect(() => applyChanges([a], [{ action: 'create', after: a }])).toThrow(/cannot create/);
    expect(() => applyChanges([], [{ action: 'delete', before: a }])).toThrow(/cannot delete/);
  });
});

describe('shared record sets', () => {
  const L = { [SHARED_LABEL]: 'true' };
  const www = (targets: string[], ttl = 300, labels: Record<string, string> | null = L): Endpoint => ({
    ...ep('www.', 'A', targets, ttl),
    ...(labels ? { labels } : {}),
  });
  /** The owner table for www A as a shared set: my targets, the others' (target -> owner), my TTL. */
  const sharedView =
    (mine: string[], others: Record<string, string> = {}, ttl?: number): OwnerOf =>
    (key): OwnerView =>
      key === 'www.example.com A' ? { kind: 'shared', mine, others: new Map(Object.entries(others)), ...(ttl === undefined ? {} : { ttl }) } : { kind: 'none' };
  const union = www(['192.0.2.1', '192.0.2.2'], 300, null);

  it("adds the tenant's targets as a create of its slice beside the others' targets", () => {
    const r = diffDesired({
      current: [www(['192.0.2.1'], 300, null)],
      desired: [www(['192.0.2.2'], 300, null)],
      policy: 'sync',
      ownerOf: sharedView([], { '192.0.2.1': 'team-a' }),
    });
    expect(r).toEqual({ changes: [{ action: 'create', after: www(['192.0.2.2']) }], conflicts: [] });
  });

  it('an equal slice is no change, whatever the others hold and whatever their TTL', () => {
    const current = [{ ...union, ttl: 60 }];
    const r = diffDesired({
      current,
      desired: [www(['192.0.2.2'], 300, null)],
      policy: 'sync',
      ownerOf: sharedView(['192.0.2.2'], { '192.0.2.1': 'team-a' }, 300),
    });
    expect(r).toEqual({ changes: [], conflicts: [] });
  });

  it("updates only the slice: before and after hold the tenant's targets, never the others'", () => {
    const r = diffDesired({
      current: [union],
      desired: [www(['192.0.2.3'])],
      policy: 'upsert-only',
      ownerOf: sharedView(['192.0.2.2'], { '192.0.2.1': 'team-a' }, 300),
    });
    expect(r).toEqual({ changes: [{ action: 'update', before: www(['192.0.2.2']), after: www(['192.0.2.3']) }], conflicts: [] });
  });

  it('a desired target owned by another tenant, or by nobody, is a conflict; the rest applies', () => {
    const current = [www(['192.0.2.1', '192.0.2.7'], 300, null)];
    const r = diffDesired({
      current,
      desired: [www(['192.0.2.1', '192.0.2.7', '192.0.2.9'])],
      policy: 'sync',
      ownerOf: sharedView([], { '192.0.2.1': 'team-a' }),
    });
    expect(r.changes).toEqual([{ action: 'create', after: www(['192.0.2.9']) }]);
    expect(r.conflicts).toEqual([
      {
        action: 'create',
        endpoint: www(['192.0.2.7']),
        owner: '',
        reason: 'target 192.0.2.7 of shared set www.example.com A exists in OVH without an owner; an admin must assign it',
      },
      {
        action: 'create',
        endpoint: www(['192.0.2.1']),
        owner: 'team-a',
        reason: 'target 192.0.2.1 of shared set www.example.com A is owned by tenant "team-a"',
      },
    ]);
  });

  it("sync deletes only the tenant's slice, and reports nothing about the others'", () => {
    const r = diffDesired({ current: [union], desired: [], policy: 'sync', ownerOf: sharedView(['192.0.2.2'], { '192.0.2.1': 'team-a' }, 300) });
    expect(r).toEqual({ changes: [{ action: 'delete', before: www(['192.0.2.2']) }], conflicts: [] });
    // Nothing of mine there: nothing to delete.
    expect(diffDesired({ current: [union], desired: [], policy: 'sync', ownerOf: sharedView([], { '192.0.2.1': 'team-a', '192.0.2.2': 'team-b' }) })).toEqual({
      changes: [],
      conflicts: [],
    });
  });

  it("an explicit delete naming the whole set removes the slice and reports the others' targets", () => {
    const r = diffChangeSet([union], { create: [], updateOld: [], updateNew: [], delete: [union] }, sharedView(['192.0.2.2'], { '192.0.2.1': 'team-a' }, 300));
    expect(r.changes).toEqual([{ action: 'delete', before: www(['192.0.2.2']) }]);
    expect(r.conflicts).toEqual([
      {
        action: 'delete',
        endpoint: www(['192.0.2.1']),
        owner: 'team-a',
        reason: 'target 192.0.2.1 of shared set www.example.com A is owned by tenant "team-a"',
      },
    ]);
  });

  it('policies still hold: create-only never updates a slice, upsert-only never deletes one', () => {
    const view = sharedView(['192.0.2.2'], { '192.0.2.1': 'team-a' }, 300);
    expect(diffDesired({ current: [union], desired: [www(['192.0.2.3'])], policy: 'create-only', ownerOf: view }).conflicts).toEqual([
      { action: 'update', endpoint: www(['192.0.2.3']), owner: '', reason: REASON_CREATE_ONLY },
    ]);
    expect(
      diffChangeSet([union], { create: [], updateOld: [], updateNew: [], delete: [www(['192.0.2.2'])] }, view, { policy: 'upsert-only' }).conflicts,
    ).toEqual([{ action: 'delete', endpoint: www(['192.0.2.2']), owner: '', reason: 'policy upsert-only never deletes' }]);
  });

  it('the shared label creates a shared set only where the set is absent and unowned', () => {
    const flagged = www(['192.0.2.1']);
    expect(diff([], [flagged], {}).changes).toEqual([{ action: 'create', after: flagged }]);
    // An own (exclusive) set, or one that exists: the label is dropped, the set stays exclusive.
    const own = diff([www(['192.0.2.9'], 300, null)], [flagged], { 'www.example.com A': 'self' });
    expect(own.changes).toEqual([{ action: 'update', before: www(['192.0.2.9'], 300, null), after: www(['192.0.2.1'], 300, null) }]);
    // Never for a CNAME.
    const cname = { ...ep('c.', 'CNAME', ['lb.example.org']), labels: L };
    expect(diff([], [cname], {}).changes).toEqual([{ action: 'create', after: ep('c.', 'CNAME', ['lb.example.org']) }]);
  });

  it("a CNAME may not replace a shared set that keeps other tenants' targets", () => {
    const cname = ep('www.', 'CNAME', ['lb.example.org']);
    const table = (key: string): OwnerView =>
      key === 'www.example.com A' ? { kind: 'shared', mine: ['192.0.2.2'], others: new Map([['192.0.2.1', 'team-a']]), ttl: 300 } : { kind: 'none' };
    const r = diffDesired({ current: [union], desired: [cname], policy: 'sync', ownerOf: table });
    expect(r.changes).toEqual([{ action: 'delete', before: www(['192.0.2.2']) }]);
    expect(r.conflicts.map((c) => c.reason)).toEqual(['a CNAME cannot coexist with other record types; www.example.com keeps A']);
  });

  it('applyChanges merges a slice into the union and drops the set with its last target', () => {
    const after = applyChanges([www(['192.0.2.1'], 300, null)], [{ action: 'create', after: www(['192.0.2.2']) }]);
    expect(after).toEqual([www(['192.0.2.1', '192.0.2.2'], 300, null)]);
    expect(applyChanges(after, [{ action: 'delete', before: www(['192.0.2.2']) }])).toEqual([www(['192.0.2.1'], 300, null)]);
    expect(applyChanges([www(['192.0.2.2'], 300, null)], [{ action: 'delete', before: www(['192.0.2.2']) }])).toEqual([]);
  });
});
