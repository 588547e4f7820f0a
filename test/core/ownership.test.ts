/**
 * The pure parts of core/ownership/ownership.ts: the owner view of exclusive and shared sets, the operations of
 * a tenant's slice (its own records only, minimal), what Records shows, the shared flag's rules.
 */
import { describe, expect, it } from 'vitest';
import { buildPlanOperations, checkSharedLabel, ownerViewOf, visibleRecordSetsSteps } from '../../src/core/ownership/ownership.js';
import { drain } from '../../src/dns/steps.js';

const visibleRecordSets = (...args: Parameters<typeof visibleRecordSetsSteps>) => drain(visibleRecordSetsSteps(...args));
import type { Tenant } from '../../src/core/tenants/tenants.js';
import { InvalidInputError } from '../../src/dns/errors.js';
import type { Change, Endpoint } from '../../src/dns/types.js';
import { describeOperation } from '../../src/ovh/ops.js';
import type { OvhRecord } from '../../src/ovh/types.js';
import type { OwnershipRow } from '../../src/store/index.js';

const ZONE = 'example.com';
const tenant = (id: string, name: string): Tenant => ({
  id,
  name,
  scopes: [],
  zones: [ZONE],
  suffixes: [],
  disabled: false,
  createdAt: new Date(0),
  tokenRotatedAt: new Date(0),
  maxChangePercent: null,
});
const alice = tenant('1', 'alice');
const bob = tenant('2', 'bob');
const row = (dnsName: string, recordType: string, owner: Tenant, target = ''): OwnershipRow => ({
  zone: ZONE,
  dnsName,
  recordType,
  target,
  tenantId: owner.id,
  tenantName: owner.name,
  shared: target !== '',
  createdMs: 0,
});
const rec = (id: string, subDomain: string, fieldType: string, target: string, ttl = 300): OvhRecord => ({ id, zone: ZONE, subDomain, fieldType, target, ttl });

const rows = [
  row(`a.${ZONE}`, 'A', alice),
  row(`www.${ZONE}`, 'A', alice, '192.0.2.1'),
  row(`www.${ZONE}`, 'A', bob, '198.51.100.1'),
  row(`www.${ZONE}`, 'A', bob, '198.51.100.2'),
];
const records = [
  rec('11', 'a', 'A', '192.0.2.50'),
  rec('21', 'www', 'A', '192.0.2.1', 60),
  rec('22', 'www', 'A', '198.51.100.1', 300),
  rec('23', 'www', 'A', '198.51.100.2', 600),
  rec('24', 'www', 'A', '203.0.113.9', 300), // in the set, owned by nobody
  rec('31', 'manual', 'A', '192.0.2.99'),
];

describe('ownerViewOf', () => {
  it('exclusive sets: self, other, none', () => {
    expect(ownerViewOf(alice, ZONE, rows, records)(`a.${ZONE} A`)).toEqual({ kind: 'self' });
    expect(ownerViewOf(bob, ZONE, rows, records)(`a.${ZONE} A`)).toEqual({ kind: 'other', owner: 'alice' });
    expect(ownerViewOf(bob, ZONE, rows, records)(`manual.${ZONE} A`)).toEqual({ kind: 'none' });
  });

  it("a shared set: my targets with my records' TTL, the others' targets with their owner", () => {
    expect(ownerViewOf(bob, ZONE, rows, records)(`www.${ZONE} A`)).toEqual({
      kind: 'shared',
      mine: ['198.51.100.1', '198.51.100.2'],
      ttl: 300,
      others: new Map([['192.0.2.1', 'alice']]),
    });
    expect(ownerViewOf(tenant('3', 'carol'), ZONE, rows, records)(`www.${ZONE} A`)).toEqual({
      kind: 'shared',
      mine: [],
      others: new Map([
        ['192.0.2.1', 'alice'],
        ['198.51.100.1', 'bob'],
        ['198.51.100.2', 'bob'],
      ]),
    });
  });
});

describe('buildPlanOperations', () => {
  const L = { 'dnsplane/shared': 'true' };
  const slice = (targets: string[], ttl = 300): Endpoint => ({ dnsName: `www.${ZONE}`, recordType: 'A', targets, ttl, labels: L });

  it("a slice change uses only the tenant's own records: one PUT to swap a target", () => {
    const change: Change = { action: 'update', before: slice(['198.51.100.1', '198.51.100.2']), after: slice(['198.51.100.1', '198.51.100.3']) };
    expect(buildPlanOperations(ZONE, [change], records).map(describeOperation)).toEqual([
      { method: 'PUT', path: `/domain/zone/${ZONE}/record/23`, body: '{"target":"198.51.100.3","ttl":300}' },
    ]);
  });

  it("deleting a slice deletes the tenant's records only; creating one only POSTs", () => {
    const del: Change = { action: 'delete', before: slice(['192.0.2.1'], 60) };
    expect(buildPlanOperations(ZONE, [del], records).map((o) => `${o.method} ${o.path}`)).toEqual([`DELETE /domain/zone/${ZONE}/record/21`]);
    const add: Change = { action: 'create', after: slice(['192.0.2.7']) };
    expect(buildPlanOperations(ZONE, [add], records).map(describeOperation)).toEqual([
      { method: 'POST', path: `/domain/zone/${ZONE}/record`, body: '{"fieldType":"A","subDomain":"www","target":"192.0.2.7","ttl":300}' },
    ]);
  });

  it('exclusive sets keep the whole-set rule, and everything is ordered DELETE, PUT, POST', () => {
    const changes: Change[] = [
      { action: 'create', after: slice(['192.0.2.8']) },
      {
        action: 'update',
        before: { dnsName: `a.${ZONE}`, recordType: 'A', targets: ['192.0.2.50'], ttl: 300 },
        after: { dnsName: `a.${ZONE}`, recordType: 'A', targets: ['192.0.2.51'], ttl: 300 },
      },
      { action: 'delete', before: slice(['192.0.2.1'], 60) },
    ];
    expect(buildPlanOperations(ZONE, changes, records).map((o) => `${o.method} ${o.path}`)).toEqual([
      `DELETE /domain/zone/${ZONE}/record/21`,
      `PUT /domain/zone/${ZONE}/record/11`,
      `POST /domain/zone/${ZONE}/record`,
    ]);
  });
});

describe('visibleRecordSets', () => {
  const endpoints: Endpoint[] = [
    { dnsName: `a.${ZONE}`, recordType: 'A', targets: ['192.0.2.50'], ttl: 300 },
    { dnsName: `manual.${ZONE}`, recordType: 'A', targets: ['192.0.2.99'], ttl: 300 },
    { dnsName: `www.${ZONE}`, recordType: 'A', targets: ['192.0.2.1', '198.51.100.1', '198.51.100.2', '203.0.113.9'], ttl: 60 },
  ];
  const show = (es: Endpoint[]) =>
    es.map((e) => `${e.dnsName} ${e.labels?.['owner'] || '-'} ${e.targets.join(',')} ${e.ttl}${e.labels?.['dnsplane/shared'] ? ' shared' : ''}`);

  it("own sets only, a shared set as the tenant's slice", () => {
    expect(show(visibleRecordSets('bob', ZONE, endpoints, rows, records, false))).toEqual([`www.${ZONE} bob 198.51.100.1,198.51.100.2 300 shared`]);
    expect(show(visibleRecordSets('alice', ZONE, endpoints, rows, records, false))).toEqual([
      `a.${ZONE} alice 192.0.2.50 300`,
      `www.${ZONE} alice 192.0.2.1 60 shared`,
    ]);
  });

  it('with include_foreign, one endpoint per owner, the unowned ones labelled ""', () => {
    expect(show(visibleRecordSets('bob', ZONE, endpoints, rows, records, true))).toEqual([
      `a.${ZONE} alice 192.0.2.50 300`,
      `manual.${ZONE} - 192.0.2.99 300`,
      `www.${ZONE} - 203.0.113.9 300 shared`,
      `www.${ZONE} alice 192.0.2.1 60 shared`,
      `www.${ZONE} bob 198.51.100.1,198.51.100.2 300 shared`,
    ]);
  });
});

describe('checkSharedLabel', () => {
  it('accepts "true" on A, AAAA, TXT, MX, SRV and "false" anywhere; refuses the rest naming the field', () => {
    for (const t of ['A', 'AAAA', 'TXT', 'MX', 'SRV'] as const)
      expect(() => checkSharedLabel({ recordType: t, labels: { 'dnsplane/shared': 'true' } }, 'e')).not.toThrow();
    expect(() => checkSharedLabel({ recordType: 'CNAME', labels: { 'dnsplane/shared': 'false' } }, 'e')).not.toThrow();
    expect(() => checkSharedLabel({ recordType: 'CNAME', labels: { 'dnsplane/shared': 'true' } }, 'e')).toThrow(
      new InvalidInputError('e.labels["dnsplane/shared"]', 'a CNAME record set cannot be shared (shared sets: A, AAAA, TXT, MX, SRV)'),
    );
    expect(() => checkSharedLabel({ recordType: 'A', labels: { 'dnsplane/shared': 'yes' } }, 'e')).toThrow('must be "true" or "false", got "yes"');
  });
});
