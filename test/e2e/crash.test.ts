/**
 * A `dnsplane serve` process killed with SIGKILL in the middle of an apply (the simulator holds its
 * calls), then a new process: the zone lock went with the dead connection, the journal row is rolled
 * back once the new process started (in the background: crash-settling.test.ts), the cache equals the
 * simulator, and the apply sent again creates no duplicate.
 */
import { create } from '@bufbuild/protobuf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant } from '../../src/core/tenants/tenants.js';
import { ApplyStatus, EndpointSchema, Policy, type Endpoint } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { OvhSimulator, type SimRecord } from '../../src/ovhsim/index.js';
import * as store from '../../src/store/index.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';
import { expectCacheEqualsSimulator } from '../helpers/expect.js';
import { startServe, type ServeProcess } from '../helpers/serve-process.js';
import { until } from '../helpers/until.js';
import { zoneLocksHeld } from '../helpers/zone-locks.js';

const ZONE = 'crash.test';
const REC = `/domain/zone/${ZONE}/record`;
let sim: OvhSimulator;
let db: TestDatabase;
let token: string;
const procs: ServeProcess[] = [];

const content = (rs: SimRecord[]) => rs.map((r) => `${r.subDomain} ${r.fieldType} ${r.target} ${r.ttl}`).sort();

function ep(dnsName: string, targets: string[]): Endpoint {
  return create(EndpointSchema, { dnsName, recordType: 'A', targets, ttl: 300 });
}

function applyX(p: ServeProcess, name: string) {
  return p.zoneClient(token).apply({
    source: {
      case: 'plan',
      value: {
        policy: Policy.UPSERT_ONLY,
        input: { case: 'desired', value: { zones: [], endpoints: [ep(`${name}.${ZONE}`, ['192.0.2.1', '192.0.2.2', '192.0.2.3'])] } },
      },
    },
  });
}

async function start(): Promise<ServeProcess> {
  // A killed process cannot release its journal lease: the next one waits until none of its calls can
  // still land (its lease: DNSPLANE_OVH_TIMEOUT plus margins), kept short here.
  const p = await startServe({ databaseUrl: db.url, sim, zones: [ZONE], env: { DNSPLANE_OVH_TIMEOUT: '2s' } });
  procs.push(p);
  return p;
}

/** Waits until the row is rolled back (a process settles dead applies in the background after its start). */
async function recovered(journalId: string): Promise<void> {
  await until('the dead apply to be rolled back', async () => ((await store.getJournalEntry(db.pool, journalId))?.state === 'recovered' ? true : undefined));
}

/** Kills `p` once the simulator has received `posts` record creations of this apply. */
async function killDuring(p: ServeProcess, what: (c: ReturnType<OvhSimulator['calls']>) => boolean, pending: Promise<unknown>): Promise<void> {
  const settled = pending.then(
    () => 'resolved',
    () => 'rejected',
  );
  await until('the call to hold', () => (what(sim.calls()) ? true : undefined));
  await p.kill();
  expect(await settled).toBe('rejected'); // the client saw the connection go
}

beforeAll(async () => {
  sim = await OvhSimulator.start({ zones: { [ZONE]: [{ subDomain: 'manual', fieldType: 'A', target: '198.51.100.1', ttl: 600 }] } });
  db = await testDatabase({ max: 4 });
  token = (await createTenant(db.pool, { name: 'alice', zones: [ZONE] })).token;
});

afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill()));
  await sim?.stop();
  await db?.drop();
});

describe('crash in the middle of an apply', () => {
  it('killed while its 2nd record creation is held: the next process rolls the dead apply back at start; a retry makes no duplicate', async () => {
    const a = await start();
    await a.zoneClient(token).records({ zones: [ZONE] }); // synced before the latency
    const before = content(sim.draftRecords(ZONE));
    sim.clearCalls();
    sim.faults.setLatency(700);
    const pending = applyX(a, 'x');
    await killDuring(a, (calls) => calls.filter((c) => c.method === 'POST' && c.path === REC).length >= 2, pending);

    // The zone lock went with the dead connection.
    await until('the zone lock to be released', async () => ((await zoneLocksHeld(db.pool)) === 0 ? true : undefined));
    expect(await zoneLocksHeld(db.pool)).toBe(0);
    const inFlight = await store.listInFlight(db.pool, ZONE);
    expect(inFlight).toHaveLength(1);

    // The held call still lands in OVH after the kill (as a request on the wire would): wait for it.
    await until('the held call to land', () => (sim.draftRecords(ZONE).filter((r) => r.subDomain === 'x').length >= 2 ? true : undefined));
    sim.faults.setLatency(0);
    const orphans = sim.draftRecords(ZONE).filter((r) => r.subDomain === 'x');
    expect(orphans).toHaveLength(2); // half an apply in OVH's draft, unpublished
    expect(sim.calls().filter((c) => c.method === 'POST' && c.path === REC)).toHaveLength(2); // and nothing more was sent
    expect(content(sim.publishedRecords(ZONE))).toEqual(before);
    sim.clearCalls();

    const b = await start();
    // Serving at once; the dead apply is rolled back in the background once its lease ran out.
    await recovered(inFlight[0]!.id);
    const startCalls = sim
      .calls()
      .filter((c) => c.path !== '/auth/time')
      .map((c) => `${c.method} ${c.path} ${c.status}`);
    expect(startCalls.slice(0, 3)).toEqual([`GET ${REC} 200`, `GET ${REC}/${orphans[0]!.id} 200`, `GET ${REC}/${orphans[1]!.id} 200`]);
    expect(startCalls.slice(3, 5).sort()).toEqual(orphans.map((o) => `DELETE ${REC}/${o.id} 200`).sort());
    // It never got to publish, but its records were in the draft, where anyone's refresh could have
    // published them: the undone draft is published once.
    expect(startCalls.slice(5)).toEqual([`POST /domain/zone/${ZONE}/refresh 204`]);
    const j = await store.getJournalEntry(db.pool, inFlight[0]!.id);
    expect(j?.state).toBe('recovered');
    expect(content(sim.draftRecords(ZONE))).toEqual(before);
    expect(content(sim.publishedRecords(ZONE))).toEqual(before);
    await expectCacheEqualsSimulator(db.pool, sim, ZONE);

    // The client retries its apply: exactly three records, no duplicate.
    sim.clearCalls();
    const res = await applyX(b, 'x');
    expect(ApplyStatus[res.zones[0]!.status]).toBe('APPLIED');
    expect(
      sim
        .calls()
        .filter((c) => c.path !== '/auth/time')
        .map((c) => `${c.method} ${c.path}`),
    ).toEqual([`POST ${REC}`, `POST ${REC}`, `POST ${REC}`, `POST /domain/zone/${ZONE}/refresh`]);
    expect(
      sim
        .publishedRecords(ZONE)
        .filter((r) => r.subDomain === 'x')
        .map((r) => r.target)
        .sort(),
    ).toEqual(['192.0.2.1', '192.0.2.2', '192.0.2.3']);
    await expectCacheEqualsSimulator(db.pool, sim, ZONE);
    const recs = await b.zoneClient(token).records({ zones: [ZONE] });
    expect(recs.zones[0]!.endpoints.map((e) => `${e.dnsName} ${e.labels['owner']}`)).toEqual([`x.${ZONE} alice`]);
  }, 120_000); // two process starts of ~10 s each on a busy 2-core machine

  it('killed while its refresh is held (it may have published): rolled back and published again at the next start', async () => {
    const b = procs.at(-1)!;
    const before = content(sim.draftRecords(ZONE));
    sim.clearCalls();
    const hold = sim.faults.fail({ method: 'POST', path: `/domain/zone/${ZONE}/refresh`, times: 1, effect: { kind: 'delay', ms: 700 } });
    const pending = applyX(b, 'y');
    await killDuring(b, (calls) => calls.some((c) => c.path.endsWith('/refresh')), pending);
    await until('the held refresh to land', () => (sim.publishedRecords(ZONE).some((r) => r.subDomain === 'y') ? true : undefined));
    expect(hold.fired).toBe(1);
    expect(sim.publishedRecords(ZONE).filter((r) => r.subDomain === 'y')).toHaveLength(3); // the dead apply did publish
    await until('the zone lock to be released', async () => ((await zoneLocksHeld(db.pool)) === 0 ? true : undefined));
    sim.clearCalls();

    const c = await start();
    await until('the dead apply to be rolled back', async () => ((await store.listInFlight(db.pool, ZONE)).length === 0 ? true : undefined));
    const writes = sim.writes().map((w) => `${w.method} ${w.path.replace(/\d{6,}$/, 'ID')}`);
    expect(writes).toEqual([`DELETE ${REC}/ID`, `DELETE ${REC}/ID`, `DELETE ${REC}/ID`, `POST /domain/zone/${ZONE}/refresh`]);
    expect(content(sim.publishedRecords(ZONE))).toEqual(before);
    expect(content(sim.draftRecords(ZONE))).toEqual(before);
    const journal = await store.listJournal(db.pool, { zone: ZONE, limit: 100 });
    expect(journal.map((r) => r.state).sort()).toEqual(['done', 'recovered', 'recovered']);
    await expectCacheEqualsSimulator(db.pool, sim, ZONE);

    sim.clearCalls();
    expect(ApplyStatus[(await applyX(c, 'y')).zones[0]!.status]).toBe('APPLIED');
    expect(sim.draftRecords(ZONE).filter((r) => r.subDomain === 'y')).toHaveLength(3);
    await expectCacheEqualsSimulator(db.pool, sim, ZONE);
    expect(await zoneLocksHeld(db.pool)).toBe(0);
  }, 120_000);
});
