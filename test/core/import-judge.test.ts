/**
 * A TXT-registry import judged (core/admin/import-judge.ts): each claimed set's outcome against the
 * ownership rows, sorted; what a real import writes gathered from the outcomes, its audit's sample
 * bounded; and both passes made in slices that let the event loop turn, into the same result as in
 * one go.
 */
import { describe, expect, it } from 'vitest';
import { AUDIT_SAMPLE, adoptedSteps, judgeSteps, type Adoption, type Claim } from '../../src/core/admin/import-judge.js';
import type { Tenant } from '../../src/core/tenants/tenants.js';
import { drain } from '../../src/dns/steps.js';
import type { OwnershipRow } from '../../src/store/index.js';
import { aTenant, pauses, sliced } from '../helpers/steps.js';

const ZONE = 'example.com';
const alice = aTenant('1', 'alice', [ZONE]);
const bob = aTenant('2', 'bob', [ZONE], { suffixes: [`eu.${ZONE}`] });
const tenants = new Map([
  ['c1', alice],
  ['c2', bob],
]);

const claim = (name: string, recordType: string, ownerId: string): Claim => ({
  ownerId,
  registryName: `${recordType.toLowerCase()}-${name}`,
  endpoint: { dnsName: name, recordType },
});
const row = (dnsName: string, recordType: string, t: Tenant, shared = false): OwnershipRow => ({
  zone: ZONE,
  dnsName,
  recordType,
  target: '',
  tenantId: t.id,
  tenantName: t.name,
  shared,
  createdMs: 0,
});

describe('judgeSteps', () => {
  it('gives each claimed set its outcome, sorted by name and type', () => {
    const claims = [
      claim(`www.${ZONE}`, 'A', 'c1'),
      claim(`api.${ZONE}`, 'CNAME', 'c1'),
      claim(`mine.${ZONE}`, 'A', 'c1'),
      claim(`taken.${ZONE}`, 'A', 'c1'),
      claim(`pool.${ZONE}`, 'A', 'c1'),
      claim(`x.${ZONE}`, 'A', 'c9'),
      claim(`www.${ZONE}`, 'AAAA', 'c2'),
      claim(`app.eu.${ZONE}`, 'A', 'c2'),
    ];
    const rows = [row(`mine.${ZONE}`, 'A', alice), row(`taken.${ZONE}`, 'A', bob), row(`pool.${ZONE}`, 'A', alice, true), row(`pool.${ZONE}`, 'A', bob, true)];
    const got = drain(judgeSteps(ZONE, claims, rows, tenants)).map((a) => `${a.dnsName} ${a.recordType} ${a.tenant || '?'} ${a.outcome}: ${a.reason}`);
    expect(got).toEqual([
      `api.${ZONE} CNAME alice adopted: no owner in dnsplane`,
      `app.eu.${ZONE} A bob adopted: no owner in dnsplane`,
      `mine.${ZONE} A alice already_owned: already owned by alice`,
      `pool.${ZONE} A alice conflict: a shared set (owners: alice, bob); use AssignOwnership`,
      `taken.${ZONE} A alice conflict: owned by tenant "bob"; use AssignOwnership to move it`,
      `www.${ZONE} A alice adopted: no owner in dnsplane`,
      `www.${ZONE} AAAA bob not_allowed: "www.${ZONE}" is outside tenant "bob"'s allowed suffixes (eu.${ZONE})`,
      `x.${ZONE} A ? unmapped_owner: owner id "c9" is not mapped to a tenant`,
    ]);
  });

  it('pauses while it indexes the rows, judges and sorts a zone of 20,000 claims, and lets the event loop turn', async () => {
    const claims = Array.from({ length: 20_000 }, (_, i) => claim(`h${(i * 7919) % 20_000}.${ZONE}`, 'A', i % 2 ? 'c1' : 'c9'));
    const rows = Array.from({ length: 10_000 }, (_, i) => row(`h${2 * i}.${ZONE}`, 'A', alice));
    const whole = drain(judgeSteps(ZONE, claims, rows, tenants));
    // Every 64 rows, every 64 claims, and the sort's own pause points (dns/steps.ts sortSteps).
    expect(pauses(judgeSteps(ZONE, claims, rows, tenants)).pauses).toBeGreaterThan(10_000 / 64 + 20_000 / 64);
    const s = await sliced(judgeSteps(ZONE, claims, rows, tenants));
    expect(s.turned).toBe(true);
    expect(s.yields).toBeGreaterThan(400);
    expect(s.value).toEqual(whole);
    expect(whole.map((a) => a.dnsName)).toEqual(claims.map((c) => c.endpoint.dnsName).sort());
  });
});

describe('adoptedSteps', () => {
  const adoption = (i: number, outcome: Adoption['outcome'], t: Tenant, ownerId: string): Adoption => ({
    dnsName: `h${String(i).padStart(5, '0')}.${ZONE}`,
    recordType: 'A',
    registryName: `a-h${i}.${ZONE}`,
    ownerId,
    tenant: t.name,
    outcome,
    reason: '',
  });

  it('gathers the adopted sets with their tenant ids, counts them per tenant, and keeps the first AUDIT_SAMPLE for the audit', async () => {
    const adoptions = Array.from({ length: 25_000 }, (_, i) =>
      i % 5 === 4 ? adoption(i, 'already_owned', alice, 'c1') : i % 2 ? adoption(i, 'adopted', alice, 'c1') : adoption(i, 'adopted', bob, 'c2'),
    );
    const adopted = adoptions.filter((a) => a.outcome === 'adopted');
    const s = await sliced(adoptedSteps(adoptions, tenants));
    expect(s.turned).toBe(true);
    expect(s.yields).toBeGreaterThan(25_000 / 64 - 1);
    expect(s.value.sets).toEqual(adopted.map((a) => ({ dnsName: a.dnsName, recordType: 'A', tenantId: a.ownerId === 'c1' ? '1' : '2' })));
    expect(s.value.byTenant).toEqual(
      new Map([
        ['bob', adopted.filter((a) => a.tenant === 'bob').length],
        ['alice', adopted.filter((a) => a.tenant === 'alice').length],
      ]),
    );
    expect(s.value.sample).toEqual(adopted.slice(0, AUDIT_SAMPLE));
    expect(drain(adoptedSteps(adoptions, tenants))).toEqual(s.value);
  });

  it('keeps every adopted set of a small import in the sample', () => {
    const adoptions = [adoption(1, 'adopted', alice, 'c1'), adoption(2, 'conflict', bob, 'c2'), adoption(3, 'adopted', bob, 'c2')];
    const got = drain(adoptedSteps(adoptions, tenants));
    expect(got.sample).toEqual([adoptions[0], adoptions[2]]);
    expect([...got.byTenant]).toEqual([
      ['alice', 1],
      ['bob', 1],
    ]);
  });
});
