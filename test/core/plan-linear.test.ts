/**
 * Planning stays linear (issue 10): every step of a Plan, of showing it on the wire and of checking a
 * stored plan at Apply reads its input a number of times proportional to the input, never to its
 * square. Counted, not timed: the inputs are wrapped in proxies that count every property read on
 * them and on anything reached through them (the records, endpoints, changes and operations), and
 * doubling the input must not much more than double the reads. A scan of every operation per change
 * (the quadratic operationsOfChange this replaced) or of every record per shared change reads four
 * times as much when the input doubles.
 */
import { describe, expect, it } from 'vitest';
import { planToPb } from '../../src/api/convert.js';
import { buildPlanOperations, ownerViewOf } from '../../src/core/ownership/ownership.js';
import { createHash } from 'node:crypto';
import { canonicalJson } from '../../src/core/plan/canonical-json.js';
import type { StoredPlan, ZonePlan } from '../../src/core/plan/plan.js';
import { planDigestSliced, serializePlan } from '../../src/core/plan/stored.js';
import { Slicer } from '../../src/core/slices.js';
import type { Tenant } from '../../src/core/tenants/tenants.js';
import { diffChangeSet, diffDesired } from '../../src/dns/diff.js';
import { validateEndpointSet } from '../../src/dns/endpoint.js';
import type { Endpoint } from '../../src/dns/types.js';
import { recordsToEndpoints } from '../../src/ovh/mapping.js';
import { applyOperationsToRecords } from '../../src/ovh/ops.js';
import type { OvhRecord } from '../../src/ovh/types.js';
import type { OwnershipRow } from '../../src/store/index.js';

const ZONE = 'example.com';
const alice: Tenant = {
  id: '1',
  name: 'alice',
  scopes: [],
  zones: [ZONE],
  suffixes: [],
  disabled: false,
  createdAt: new Date(0),
  tokenRotatedAt: new Date(0),
  maxChangePercent: null,
};
const bob: Tenant = { ...alice, id: '2', name: 'bob' };

/** Wraps plain objects and arrays (deeply, lazily) in proxies that count every property read. */
function counter() {
  let reads = 0;
  const proxies = new WeakMap<object, object>();
  const wrap = <T>(v: T): T => {
    if (v === null || typeof v !== 'object') return v;
    const proto = Object.getPrototypeOf(v);
    if (!Array.isArray(v) && proto !== Object.prototype) return v; // Dates, Maps: left alone
    let p = proxies.get(v);
    if (!p) {
      p = new Proxy(v, {
        get(target, key, receiver) {
          reads++;
          return wrap(Reflect.get(target, key, receiver));
        },
      });
      proxies.set(v, p);
    }
    return p as T;
  };
  return { wrap, reads: () => reads };
}

function ip(n: number): string {
  return `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
}

/**
 * A zone of n records and a desired state of about 2n endpoints, owned by alice except a fifth shared
 * with bob: half the existing sets change target, a quarter stay, a quarter are dropped (sync deletes
 * them), and n new sets are created.
 */
function scenario(n: number) {
  const records: OvhRecord[] = [];
  const rows: OwnershipRow[] = [];
  for (let i = 0; i < n; i++) {
    const shared = i % 10 === 1 || i % 10 === 3;
    records.push({ id: String(1000 + i), zone: ZONE, subDomain: `h${i}`, fieldType: 'A', target: ip(i), ttl: 300 });
    const row = { zone: ZONE, dnsName: `h${i}.${ZONE}`, recordType: 'A', tenantId: alice.id, tenantName: alice.name, createdMs: 0 };
    if (shared) {
      records.push({ id: String(500000 + i), zone: ZONE, subDomain: `h${i}`, fieldType: 'A', target: ip((1 << 20) | i), ttl: 300 });
      rows.push({ ...row, target: ip(i), shared: true }, { ...row, target: ip((1 << 20) | i), tenantId: bob.id, tenantName: bob.name, shared: true });
    } else {
      rows.push({ ...row, target: '', shared: false });
    }
  }
  const desired: Endpoint[] = [];
  for (let i = 0; i < n; i++) {
    if (i % 4 === 3) continue; // dropped
    const shared = i % 10 === 1 || i % 10 === 3;
    const target = i % 2 === 0 ? ip(i) : ip((1 << 21) | i);
    desired.push({ dnsName: `h${i}.${ZONE}`, recordType: 'A', targets: [target], ttl: 300, ...(shared ? { labels: { 'dnsplane/shared': 'true' } } : {}) });
  }
  for (let i = n; i < 2 * n; i++) desired.push({ dnsName: `new${i}.${ZONE}`, recordType: 'A', targets: [ip(i)], ttl: 300 });
  return { records, rows, desired };
}

/** Reads of `run` over the scenario of size n, with its inputs counted. */
/** The digest as defined: sha-256 of the zone plans' canonical JSON, thresholds left out (what serializePlan must hash). */
function planDigest(zones: ZonePlan[]): string {
  const content = zones.map(({ threshold: _threshold, ...z }) => ({ ...z, baseGeneration: z.baseGeneration.toString() }));
  return createHash('sha256').update(canonicalJson(content)).digest('hex');
}

async function readsAt(n: number, run: (input: ReturnType<typeof scenario>, wrap: <T>(v: T) => T) => unknown): Promise<number> {
  const c = counter();
  await run(scenario(n), c.wrap);
  return c.reads();
}

/** Doubling the input at most about doubles the reads (a quadratic step would make it four times). */
async function expectLinear(run: (input: ReturnType<typeof scenario>, wrap: <T>(v: T) => T) => unknown): Promise<void> {
  const small = await readsAt(500, run);
  const large = await readsAt(1000, run);
  expect(small).toBeGreaterThan(500);
  expect(large / small).toBeLessThan(2.3);
}

function zonePlan({ records, rows, desired }: ReturnType<typeof scenario>): ZonePlan {
  const { endpoints: current } = recordsToEndpoints(records, ZONE);
  const { changes, conflicts } = diffDesired({ current, desired, policy: 'sync', ownerOf: ownerViewOf(alice, ZONE, rows, records) });
  return { zone: ZONE, baseGeneration: 7n, changes, conflicts, operations: buildPlanOperations(ZONE, changes, records) };
}

describe('planning is linear in the request and the zone (reads counted)', () => {
  it('the scenario exercises creates, updates, deletes and shared slices', () => {
    const z = zonePlan(scenario(100));
    const kinds = new Set(z.changes.map((c) => `${c.action}${(c.after ?? c.before)?.labels?.['dnsplane/shared'] ? ' shared' : ''}`));
    expect([...kinds].sort()).toEqual(['create', 'delete', 'delete shared', 'update', 'update shared']);
    expect(z.operations.length).toBeGreaterThan(100);
  });

  it('mapping records, owner views and the desired-state diff', async () => {
    await expectLinear(({ records, rows, desired }, wrap) => {
      const recs = wrap(records);
      const { endpoints } = recordsToEndpoints(recs, ZONE);
      validateEndpointSet(wrap(desired), 'desired');
      return diffDesired({ current: wrap(endpoints), desired: wrap(desired), policy: 'sync', ownerOf: ownerViewOf(alice, ZONE, wrap(rows), recs) });
    });
  });

  it('the change-set diff', async () => {
    await expectLinear(({ records, rows, desired }, wrap) => {
      const { endpoints } = recordsToEndpoints(records, ZONE);
      const old = desired.filter((e) => e.dnsName.startsWith('h') && !e.labels);
      const changes = { create: wrap(desired.filter((e) => e.dnsName.startsWith('new'))), updateOld: wrap(old), updateNew: wrap(old), delete: [] };
      return diffChangeSet(wrap(endpoints), changes, ownerViewOf(alice, ZONE, rows, records));
    });
  });

  it('the OVH operations of the changes (exclusive and shared sets)', async () => {
    await expectLinear((input, wrap) => {
      const z = zonePlan(input);
      return buildPlanOperations(ZONE, wrap(z.changes), wrap(input.records));
    });
  });

  it('applying the operations to the records', async () => {
    await expectLinear((input, wrap) => applyOperationsToRecords(wrap(input.records), wrap(zonePlan(input).operations), (_op, i) => `new-${i}`));
  });

  it('the digest of a plan and its canonical JSON', async () => {
    await expectLinear(async (input, wrap) => {
      const z = zonePlan(input);
      return [await planDigestSliced([wrap(z)], new Slicer()), canonicalJson(wrap(z.changes))];
    });
  });

  it('the plan serialized in slices: the same digest, a body holding the plan, and yields', async () => {
    const z = zonePlan(scenario(400));
    const other = {
      ...zonePlan(scenario(30)),
      zone: 'other.test',
      threshold: { owned: 1, updates: 0, deletes: 0, maxPercent: 30, exceeded: false, forced: false },
    };
    const slicer = new Slicer(0);
    const { digest, body } = await serializePlan([z, other], slicer);
    expect(digest).toBe(planDigest([z, other]));
    const alone = new Slicer(0);
    expect(await planDigestSliced([z, other], alone)).toBe(digest); // what an Apply compares, in slices too
    expect(alone.yields).toBeGreaterThan(5);
    expect(JSON.parse(body)).toEqual(JSON.parse(JSON.stringify([z, other], (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))));
    expect(slicer.yields).toBeGreaterThan(5);
    // The same plan read back with keys in another order digests the same.
    const shuffled = JSON.parse(
      JSON.stringify([z, other], (_k, v: unknown) =>
        typeof v === 'bigint' ? v.toString() : v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).reverse()) : v,
      ),
    );
    const back = shuffled.map((x: ZonePlan & { baseGeneration: string }) => ({ ...x, baseGeneration: BigInt(x.baseGeneration) }));
    expect((await serializePlan(back, new Slicer())).digest).toBe(planDigest([z, other]));
    expect(planDigest(back)).toBe(digest);
    expect(await planDigestSliced(back, new Slicer())).toBe(digest);
  });

  it('the plan on the wire (each change with its operations)', async () => {
    await expectLinear(async (input, wrap) => {
      const z = zonePlan(input);
      const plan: StoredPlan = {
        id: 'pl_x',
        tenant: 'alice',
        tenantId: '1',
        policy: 'sync',
        zones: [wrap(z)],
        digest: '',
        createdAt: new Date(0),
        expiresAt: new Date(0),
        status: 'pending',
        input: { kind: 'desired', policy: 'sync', zones: [ZONE], endpoints: [] },
      };
      const pb = await planToPb(plan);
      // Every change got its operations, found by set rather than by scanning.
      expect(pb.zones[0]!.changes.reduce((n, c) => n + c.operations.length, 0)).toBe(z.operations.length);
      return pb;
    });
  });
});
