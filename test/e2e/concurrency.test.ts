/**
 * Three `dnsplane serve` processes on one database, ten tenants, 40 concurrent Applies on one zone and
 * 40 on another, spread over the three processes, with OVH failing some operations on the way.
 * Afterwards: the simulator's published zone is exactly the union of the accepted changes (folded in
 * the order the generations give), no record is duplicated, the cache equals the simulator record for
 * record, every journal row is done or failed, and only applies that succeeded were published: one
 * refresh per group of applies a replica coalesced.
 */
import { create } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant } from '../../src/core/tenants/tenants.js';
import { ApplyStatus, EndpointSchema, Policy, type ApplyResponse, type Endpoint } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { OvhSimulator, type FaultHandle } from '../../src/ovhsim/index.js';
import * as store from '../../src/store/index.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';
import { expectCacheEqualsSimulator } from '../helpers/expect.js';
import { foldAccepted, joined, publishedSets } from '../helpers/invariants.js';
import { startServe, type ServeProcess } from '../helpers/serve-process.js';
import { until } from '../helpers/until.js';
import { zoneLocksHeld } from '../helpers/zone-locks.js';

const ZONES = ['alpha.test', 'beta.test'];
const TENANTS = 10;
const APPLIES_PER_TENANT = 4; // per zone: 10 x 4 = 40 per zone
let sim: OvhSimulator;
let db: TestDatabase;
let procs: ServeProcess[] = [];
const tokens: string[] = [];

function ep(dnsName: string, recordType: string, targets: string[]): Endpoint {
  return create(EndpointSchema, { dnsName, recordType, targets, ttl: 300 });
}

/** Apply k of tenant i in a zone: its own names, plus a name every tenant claims (a conflict for all but the first). */
function endpointsOf(i: number, k: number, zone: string): Endpoint[] {
  switch (k) {
    case 0:
      return [ep(`t${i}-a.${zone}`, 'A', [`10.${i}.0.1`]), ep(`shared-0.${zone}`, 'A', [`10.${i}.0.100`])];
    case 1:
      return [ep(`t${i}-a.${zone}`, 'A', [`10.${i}.1.1`, `10.${i}.1.2`]), ep(`shared-1.${zone}`, 'A', [`10.${i}.1.100`])];
    case 2:
      return [ep(`t${i}-b.${zone}`, 'A', [`10.${i}.2.1`]), ep(`shared-0.${zone}`, 'A', [`10.${i}.2.100`])];
    default:
      return [ep(`t${i}-txt.${zone}`, 'TXT', [`hello from tenant ${i}`]), ep(`shared-2.${zone}`, 'A', [`10.${i}.3.100`])];
  }
}

interface Outcome {
  zone: string;
  tenant: number;
  response?: ApplyResponse;
  error?: ConnectError;
}

beforeAll(async () => {
  sim = await OvhSimulator.start({
    zones: Object.fromEntries(ZONES.map((z) => [z, [{ subDomain: 'manual', fieldType: 'A', target: '198.51.100.1', ttl: 600 }]])),
  });
  db = await testDatabase({ max: 4 });
  for (let i = 0; i < TENANTS; i++) tokens.push((await createTenant(db.pool, { name: `t${i}`, zones: ZONES })).token);
  // The applies of one zone queue for its lock; on a loaded machine 40 of them can take longer than the
  // default 30 s lock timeout, and an Aborted apply is not what this test is about: no timeout here.
  procs = await Promise.all([0, 1, 2].map(() => startServe({ databaseUrl: db.url, sim, zones: ZONES, env: { DNSPLANE_LOCK_TIMEOUT: '1h' } })));
});

afterAll(async () => {
  await Promise.all(procs.map((p) => p.stop()));
  await sim?.stop();
  await db?.drop();
});

describe('3 replicas, 10 tenants, 2 x 40 concurrent applies', () => {
  it('end in exactly the accepted changes, with no duplicate, the cache equal to OVH, and no refresh for a failed apply', async () => {
    // OVH misbehaves on the way, per zone: two creations refused (those applies fail and are rolled
    // back), one creation done but its answer lost, one answered 429 with Retry-After, one update 503 once.
    const faults: FaultHandle[] = [];
    const others: FaultHandle[] = [];
    for (const z of ZONES) {
      const rec = `/domain/zone/${z}/record`;
      faults.push(
        sim.faults.fail({
          method: 'POST',
          path: rec,
          nth: 5,
          effect: { kind: 'status', status: 400, body: { class: 'Client::BadRequest', message: 'refused by the test' } },
        }),
      );
      faults.push(
        sim.faults.fail({
          method: 'POST',
          path: rec,
          nth: 23,
          effect: { kind: 'status', status: 400, body: { class: 'Client::BadRequest', message: 'refused by the test' } },
        }),
      );
      others.push(sim.faults.fail({ method: 'POST', path: rec, nth: 12, effect: { kind: 'applyThenDrop' } }));
      others.push(sim.faults.fail({ method: 'POST', path: rec, nth: 30, effect: { kind: 'rateLimit', retryAfterSeconds: 1 } }));
      others.push(sim.faults.fail({ method: 'PUT', path: `${rec}/*`, nth: 3, effect: { kind: 'status', status: 503 } }));
    }

    const jobs: Array<Promise<Outcome>> = [];
    let n = 0;
    for (let k = 0; k < APPLIES_PER_TENANT; k++) {
      for (let i = 0; i < TENANTS; i++) {
        for (const zone of ZONES) {
          const proc = procs[n++ % procs.length]!;
          jobs.push(
            proc
              .zoneClient(tokens[i]!)
              .apply({
                source: {
                  case: 'plan',
                  value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints: endpointsOf(i, k, zone) } } },
                },
              })
              .then(
                (response) => ({ zone, tenant: i, response }),
                (e: unknown) => ({ zone, tenant: i, error: ConnectError.from(e) }),
              ),
          );
        }
      }
    }
    const outcomes = await Promise.all(jobs);
    expect(outcomes).toHaveLength(80);

    // The only errors are the applies whose creation OVH refused: FailedPrecondition, rolled back.
    const errors = outcomes.filter((o) => o.error);
    for (const o of errors) {
      expect(Code[o.error!.code], o.error!.rawMessage).toBe('FailedPrecondition');
      expect(o.error!.rawMessage).toMatch(/refused by the test.*undone and nothing was published/);
    }
    expect(faults.map((f) => f.fired)).toEqual([1, 1, 1, 1]);
    expect(others.map((f) => f.fired)).toEqual([1, 1, 1, 1, 1, 1]);
    expect(errors).toHaveLength(4);

    for (const zone of ZONES) {
      const mine = outcomes.filter((o) => o.zone === zone);
      const applied = mine
        .filter((o) => o.response && o.response.zones[0]!.status === ApplyStatus.APPLIED)
        .map((o) => o.response!.zones[0]!)
        .sort((a, b) => (a.generation < b.generation ? -1 : 1));
      expect(new Set(applied.map((z) => z.generation)).size).toBe(applied.length); // serialized: one generation each

      // The union of what was accepted, folded in generation order.
      const expected = foldAccepted(applied);
      const published = publishedSets(sim, zone, (r) => r.fieldType === 'NS' || r.subDomain === 'manual');
      expect(joined(published)).toEqual(expected);
      // Every tenant's own names made it (unless the apply that made them was the one refused).
      expect(expected.size).toBeGreaterThan(TENANTS * 2);
      // Each contested name has exactly one owner, and holds only that owner's target.
      for (const s of ['shared-0', 'shared-1', 'shared-2']) {
        const targets = published.get(`${s}.${zone} A`) ?? [];
        expect(new Set(targets.map((t) => t.split('.')[1])).size).toBeLessThanOrEqual(1);
      }

      // No duplicate; nothing half-applied in the draft; the record made by hand untouched.
      const draft = sim.draftRecords(zone);
      const keys = draft.map((r) => `${r.subDomain} ${r.fieldType} ${r.target}`);
      expect(new Set(keys).size).toBe(keys.length);
      expect(sim.isDeployed(zone)).toBe(true);
      expect(draft.filter((r) => r.subDomain === 'manual').map((r) => r.target)).toEqual(['198.51.100.1']);

      // The cache equals the simulator, record for record (ids included; TXT as OVH answers it, quoted).
      await expectCacheEqualsSimulator(db.pool, sim, zone);

      // Journal: every row done or failed, one per apply that sent something.
      const states = await store.countJournalStates(db.pool, zone);
      expect(states).toEqual({ in_flight: 0, done: applied.length, failed: errors.filter((o) => o.zone === zone).length, recovered: 0 });
      // One refresh per group of coalesced applies (each replica's waiting applies of the zone go
      // out together, core/apply/holder.ts) and none for a failed one: the refreshes OVH received are exactly
      // as many as the groups the done rows name (a row alone is its own group), fewer than the
      // applies here, and no failed row's calls include one.
      const refreshes = sim.calls().filter((c) => c.method === 'POST' && c.path === `/domain/zone/${zone}/refresh`);
      const rows = await store.listJournal(db.pool, { zone, limit: 1000 });
      const groups = new Set(rows.filter((r) => r.state === 'done').map((r) => (r.result as { coalesced?: { first: string } }).coalesced?.first ?? r.id));
      expect(refreshes).toHaveLength(groups.size);
      expect(groups.size).toBeLessThan(applied.length);
      for (const row of rows) {
        if (row.state !== 'failed') continue;
        const calls = (row.result as { calls: Array<{ path: string }> }).calls;
        expect(calls.some((c) => c.path.endsWith('/refresh'))).toBe(false);
      }

      // Every replica serves the same records at once: Records on each answers the same generation.
      const gens = await Promise.all(
        procs.map(async (p) => (await p.zoneClient(tokens[0]!).records({ zones: [zone], includeForeign: true })).zones[0]!.generation),
      );
      expect(new Set(gens).size).toBe(1);
    }
    expect(await zoneLocksHeld(db.pool)).toBe(0);
  });

  it('a change applied through one replica is seen by Records on the others: at once by a caller that says it saw it, by everyone once its NOTIFY arrived', async () => {
    const res = await procs[0]!.zoneClient(tokens[0]!).apply({
      source: {
        case: 'plan',
        value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints: [ep(`seen.${ZONES[0]}`, 'A', ['192.0.2.200'])] } } },
      },
    });
    const gen = res.zones[0]!.generation;
    for (const p of procs.slice(1)) {
      // A caller that has the new generation is ahead of what this replica may have heard: read fresh,
      // never answered from an older generation (core/records/records.ts aheadOf).
      const ahead = await p.zoneClient(tokens[0]!).records({ zones: [ZONES[0]!], knownGenerations: { [ZONES[0]!]: gen } });
      expect(ahead.zones[0]).toMatchObject({ generation: gen, notModified: true });
      // Everyone else sees it once the replica heard the NOTIFY (docs/records-and-reads.md): on a busy
      // machine that may be a moment after the apply answered, so it is waited for, not assumed.
      const recs = await until(`replica ${procs.indexOf(p)} at generation ${gen}`, async () => {
        const r = await p.zoneClient(tokens[0]!).records({ zones: [ZONES[0]!] });
        return r.zones[0]!.generation === gen && r;
      });
      expect(recs.zones[0]!.endpoints.find((e) => e.dnsName === `seen.${ZONES[0]}`)).toMatchObject({ targets: ['192.0.2.200'] });
    }
  });
});
