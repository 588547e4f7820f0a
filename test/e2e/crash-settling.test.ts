/**
 * A replica restarted after a SIGKILL mid-apply serves at once: the dead apply's zone waits out the
 * dead holder's lease (DNSPLANE_OVH_TIMEOUT, 30 s by default, plus margins) before it is rolled back,
 * and only that zone is busy meanwhile — /healthz, /readyz (whose body names the settling zone),
 * ListZones (the zone's state "settling") and another zone's apply are answered while the lease runs
 * out; an apply of the settling zone that cannot wait is refused naming why.
 */
import { create } from '@bufbuild/protobuf';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTenant } from '../../src/core/tenants/tenants.js';
import { ApplyStatus, EndpointSchema, Policy, type Endpoint } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { OvhSimulator } from '../../src/ovhsim/index.js';
import * as store from '../../src/store/index.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';
import { startServe, type ServeProcess } from '../helpers/serve-process.js';
import { until } from '../helpers/until.js';
import { zoneLocksHeld } from '../helpers/zone-locks.js';

const DEAD = 'dead.test';
const OTHER = 'other.test';
let sim: OvhSimulator;
let db: TestDatabase;
let token: string;
const procs: ServeProcess[] = [];

function ep(dnsName: string, targets: string[]): Endpoint {
  return create(EndpointSchema, { dnsName, recordType: 'A', targets, ttl: 300 });
}

function applyTo(p: ServeProcess, name: string) {
  return p.zoneClient(token).apply({
    source: {
      case: 'plan',
      value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints: [ep(name, ['192.0.2.1', '192.0.2.2', '192.0.2.3'])] } } },
    },
  });
}

async function start(env: Record<string, string>): Promise<ServeProcess> {
  const p = await startServe({ databaseUrl: db.url, sim, zones: [DEAD, OTHER], env });
  procs.push(p);
  return p;
}

beforeAll(async () => {
  sim = await OvhSimulator.start({ zones: { [DEAD]: [], [OTHER]: [] } });
  db = await testDatabase({ max: 4 });
  token = (await createTenant(db.pool, { name: 'alice', zones: [DEAD, OTHER] })).token;
});

afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill()));
  await sim?.stop();
  await db?.drop();
});

it("restarted after a SIGKILL mid-apply: serves at once, only the dead apply's zone waits for its lease, then it is rolled back", async () => {
  // The killed process's lease is the default one (DNSPLANE_OVH_TIMEOUT 30 s): the next process must
  // wait that out before it may settle the row, and the checks below run inside that wait.
  const a = await start({});
  await a.zoneClient(token).records({ zones: [DEAD, OTHER] }); // both synced before the latency
  sim.faults.setLatency(700);
  const pending = applyTo(a, `x.${DEAD}`).then(
    () => 'resolved',
    () => 'rejected',
  );
  await until('the 2nd record creation', () => sim.calls().filter((c) => c.method === 'POST' && c.path === `/domain/zone/${DEAD}/record`).length >= 2);
  await a.kill();
  expect(await pending).toBe('rejected');
  await until('the zone lock to be released', async () => (await zoneLocksHeld(db.pool)) === 0);
  const [row] = await store.listInFlight(db.pool, DEAD);
  expect(row).toBeDefined();
  await until('the held calls to land', () => sim.draftRecords(DEAD).filter((r) => r.subDomain === 'x').length >= 2);
  sim.faults.setLatency(0);

  // A short lock timeout, so that an apply of the settling zone is refused rather than kept waiting.
  const b = await start({ DNSPLANE_LOCK_TIMEOUT: '1s' });
  // startServe resolved on /readyz 200: it serves while the row is still in flight.
  expect((await store.getJournalEntry(db.pool, row!.id))?.state).toBe('in_flight');
  expect(await (await fetch(`${b.url}/healthz`)).text()).toBe('ok\n');
  const ready = await fetch(`${b.url}/readyz`);
  expect(ready.status).toBe(200);
  expect((await ready.text()).split('\n')).toEqual([
    'ready',
    expect.stringMatching(
      new RegExp(
        `^zone ${DEAD} is settling: an apply that died in flight \\(journal ${row!.id}\\) is rolled back, once its holder's lease runs out at \\S+Z; its applies wait until then$`,
      ),
    ),
    '',
  ]);
  const zones = await b.zoneClient(token).listZones({});
  expect(zones.zones.map((z) => [z.name, z.state, z.inFlightApplies])).toEqual([
    [DEAD, 'settling', 1],
    [OTHER, 'synced', 0],
  ]);
  // Another zone's apply is answered at once.
  const other = await applyTo(b, `y.${OTHER}`);
  expect(ApplyStatus[other.zones[0]!.status]).toBe('APPLIED');
  // The settling zone's apply: refused, saying why (Aborted, retried by clients).
  const refused = await applyTo(b, `z.${DEAD}`).then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  expect(refused?.message).toMatch(
    new RegExp(
      `lock not acquired within 1000 ms \\(zone ${DEAD} is settling: an apply that died in flight \\(journal ${row!.id}\\) is rolled back.*; try again then\\)`,
    ),
  );
  // All of it while the dead apply's lease was still running.
  expect((await store.getJournalEntry(db.pool, row!.id))?.state).toBe('in_flight');

  // Then the lease runs out and the row is rolled back: the zone is settled, and serves again.
  await until('the dead apply to be rolled back', async () => (await store.getJournalEntry(db.pool, row!.id))?.state === 'recovered');
  expect(sim.draftRecords(DEAD).filter((r) => r.subDomain === 'x')).toEqual([]);
  await until('/readyz to name no settling zone', async () => (await (await fetch(`${b.url}/readyz`)).text()) === 'ready\n');
  expect((await b.zoneClient(token).listZones({})).zones.map((z) => z.state)).toEqual(['synced', 'synced']);
  expect(ApplyStatus[(await applyTo(b, `x.${DEAD}`)).zones[0]!.status]).toBe('APPLIED');
}, 180_000);
