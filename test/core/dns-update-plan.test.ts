/**
 * The planning step of a DNS UPDATE (core/plan/dns-update-plan.ts) on zones held in memory: the RFC 2136
 * rules the end-to-end tests with nsupdate do not reach one by one.
 */
import { describe, expect, it } from 'vitest';
import {
  DnsUpdateRefused,
  planDnsUpdateSteps,
  type DnsPrerequisite,
  type DnsUpdate,
  type DnsUpdateOp,
  type UpdateContext,
} from '../../src/core/plan/dns-update-plan.js';
import type { Tenant } from '../../src/core/tenants/tenants.js';
import { drain } from '../../src/dns/steps.js';
import type { Endpoint, OwnerView } from '../../src/dns/index.js';
import type { OvhRecord } from '../../src/ovh/types.js';

const Z = 'example.test';
const tenant: Tenant = {
  id: '1',
  name: 'alice',
  scopes: [],
  zones: [Z],
  suffixes: [],
  disabled: false,
  createdAt: new Date(0),
  tokenRotatedAt: new Date(0),
  maxChangePercent: null,
};
const e = (name: string, recordType: Endpoint['recordType'], targets: string[], ttl = 300): Endpoint => ({ dnsName: name, recordType, targets, ttl });

function context(sets: Array<[Endpoint, OwnerView]>, extra: OvhRecord[] = []): UpdateContext {
  const owners = new Map(sets.map(([s, o]) => [`${s.dnsName} ${s.recordType}`, o]));
  const records: OvhRecord[] = [
    ...sets.flatMap(([s]) =>
      s.targets.map((t, i) => ({
        id: `${s.dnsName}-${s.recordType}-${i}`,
        zone: Z,
        subDomain: s.dnsName === Z ? '' : s.dnsName.slice(0, -(Z.length + 1)),
        fieldType: s.recordType,
        target: t,
        ttl: s.ttl,
      })),
    ),
    ...extra,
  ];
  return { zone: Z, tenant, records, current: sets.map(([s]) => s), ownerOf: (key) => owners.get(key) ?? { kind: 'none' } };
}

function plan(c: UpdateContext, updates: DnsUpdateOp[] | DnsUpdate['updates'], prerequisites: DnsPrerequisite[] = [], acmeOnly = false) {
  return drain(planDnsUpdateSteps(c, { zone: Z, prerequisites, updates, acmeOnly })).changes;
}

function refusal(fn: () => unknown): DnsUpdateRefused {
  try {
    fn();
  } catch (err) {
    if (err instanceof DnsUpdateRefused) return err;
    throw err;
  }
  throw new Error('not refused');
}

const self: OwnerView = { kind: 'self' };

describe('a DNS UPDATE planned', () => {
  it('checks prerequisites before anything else, against every record OVH holds (unmanaged types too)', () => {
    const c = context(
      [[e(`www.${Z}`, 'A', ['192.0.2.1']), { kind: 'other', owner: 'bob' }]],
      [{ id: 'loc', zone: Z, subDomain: 'geo', fieldType: 'LOC', target: '52 22 N 4 53 E 0m', ttl: 0 }],
    );
    expect(
      plan(
        c,
        [],
        [
          { kind: 'name-in-use', name: `geo.${Z}` },
          { kind: 'rrset-exists', name: `geo.${Z}`, type: 'LOC' },
          { kind: 'rrset-exists', name: Z, type: 'SOA' },
        ],
      ),
    ).toEqual([]);
    // A failed prerequisite wins over a malformed update section and over a refusal (RFC order).
    const r = refusal(() =>
      plan(c, { malformed: 'x', rcode: 'FORMERR' }, [{ kind: 'rrset-equals', name: `www.${Z}`, type: 'A', targets: ['192.0.2.1', '192.0.2.2'] }]),
    );
    expect(r.rcode).toBe('NXRRSET');
    expect(refusal(() => plan(c, { malformed: 'bad class', rcode: 'FORMERR' })).rcode).toBe('FORMERR');
    expect(refusal(() => plan(c, [], [{ kind: 'rrset-equals', name: `www.${Z}`, type: 'A', targets: [null] }])).rcode).toBe('NXRRSET');
  });

  it('ignores a CNAME beside other data and data beside a CNAME (RFC 2136 §3.4.2.2)', () => {
    const c = context([
      [e(`a.${Z}`, 'A', ['192.0.2.1']), self],
      [e(`c.${Z}`, 'CNAME', ['a.example.test']), self],
    ]);
    expect(plan(c, [{ kind: 'add', name: `a.${Z}`, type: 'CNAME', target: 'x.example.test', ttl: 60 }])).toEqual([]);
    expect(plan(c, [{ kind: 'add', name: `c.${Z}`, type: 'TXT', target: 'v', ttl: 60 }])).toEqual([]);
    // A CNAME replaces a CNAME; after its A is deleted in the same message, a name may take a CNAME.
    expect(plan(c, [{ kind: 'add', name: `c.${Z}`, type: 'CNAME', target: 'b.example.test', ttl: 300 }]).map((ch) => ch.after?.targets)).toEqual([
      ['b.example.test'],
    ]);
    expect(
      plan(c, [
        { kind: 'delete-rrset', name: `a.${Z}`, type: 'A' },
        { kind: 'add', name: `a.${Z}`, type: 'CNAME', target: 'x.example.test', ttl: 60 },
      ])
        .map((ch) => ch.action)
        .sort(),
    ).toEqual(['create', 'delete']);
  });

  it('an add takes the TTL given for the whole set; a value already there at that TTL is no change', () => {
    const c = context([[e(`t.${Z}`, 'TXT', ['one']), self]]);
    expect(plan(c, [{ kind: 'add', name: `t.${Z}`, type: 'TXT', target: 'one', ttl: 300 }])).toEqual([]);
    const [change] = plan(c, [{ kind: 'add', name: `t.${Z}`, type: 'TXT', target: 'two', ttl: 120 }]);
    expect(change).toMatchObject({ action: 'update', after: { targets: ['one', 'two'], ttl: 120 } });
    // OVH stores TTL 1-59 as 60.
    expect(plan(c, [{ kind: 'add', name: `t.${Z}`, type: 'TXT', target: 'one', ttl: 5 }])[0]?.after?.ttl).toBe(60);
  });

  it('deletes every set at a name but the apex NS; refuses a name holding another tenant set', () => {
    const c = context([
      [e(Z, 'NS', ['dns1.sim.test']), { kind: 'none' }],
      [e(Z, 'MX', ['10 mx.example.test']), self],
      [e(`x.${Z}`, 'A', ['192.0.2.1']), self],
      [e(`x.${Z}`, 'TXT', ['t']), { kind: 'other', owner: 'bob' }],
    ]);
    expect(plan(c, [{ kind: 'delete-name', name: Z }]).map((ch) => `${ch.action} ${ch.before?.recordType}`)).toEqual(['delete MX']);
    expect(refusal(() => plan(c, [{ kind: 'delete-name', name: `x.${Z}` }])).reason).toMatch(/owned by tenant "bob"/);
  });

  it('a shared TXT set: "delete the RRset" deletes the own values; deleting another tenant value is refused', () => {
    const shared: OwnerView = { kind: 'shared', mine: ['mine'], others: new Map([['theirs', 'bob']]), ttl: 60 };
    const c = context([[e(`_acme-challenge.${Z}`, 'TXT', ['mine', 'theirs'], 60), shared]]);
    expect(plan(c, [{ kind: 'delete-rrset', name: `_acme-challenge.${Z}`, type: 'TXT' }])).toMatchObject([{ action: 'delete', before: { targets: ['mine'] } }]);
    expect(
      plan(c, [
        { kind: 'delete-rrset', name: `_acme-challenge.${Z}`, type: 'TXT' },
        { kind: 'add', name: `_acme-challenge.${Z}`, type: 'TXT', target: 'new', ttl: 60 },
      ]),
    ).toMatchObject([{ action: 'update', before: { targets: ['mine'] }, after: { targets: ['new'] } }]);
    expect(refusal(() => plan(c, [{ kind: 'delete-record', name: `_acme-challenge.${Z}`, type: 'TXT', target: 'theirs' }])).reason).toMatch(
      /owned by tenant "bob"/,
    );
    // A new TXT set is created shared, so that others can add beside it.
    expect(plan(context([]), [{ kind: 'add', name: `_acme-challenge.n.${Z}`, type: 'TXT', target: 'v', ttl: 60 }])[0]?.after?.labels).toEqual({
      'dnsplane/shared': 'true',
    });
  });

  it('an ACME-only key adds and deletes TXT at _acme-challenge.* only; suffixes hold', () => {
    const c = context([]);
    expect(plan(c, [{ kind: 'add', name: `_acme-challenge.www.${Z}`, type: 'TXT', target: 'v', ttl: 60 }], [], true)).toHaveLength(1);
    for (const op of [
      { kind: 'add', name: `www.${Z}`, type: 'TXT', target: 'v', ttl: 60 },
      { kind: 'add', name: `_acme-challenge.${Z}`, type: 'A', target: '192.0.2.1', ttl: 60 },
      { kind: 'delete-name', name: `_acme-challenge.${Z}` },
    ] as DnsUpdateOp[]) {
      expect(refusal(() => plan(c, [op], [], true)).reason).toMatch(/ACME-only/);
    }
    const narrow = { ...c, tenant: { ...tenant, suffixes: [`dev.${Z}`] } };
    expect(refusal(() => plan(narrow, [{ kind: 'add', name: `www.${Z}`, type: 'A', target: '192.0.2.1', ttl: 60 }])).reason).toMatch(
      /outside tenant "alice"'s allowed suffixes/,
    );
  });
});
