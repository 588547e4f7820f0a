/**
 * Apply when OVH fails mid-way, when the zone changed outside dnsplane, when a plan is stale, and when
 * the zone lock is busy. Real server, real Postgres, the simulator over HTTPS through the real client;
 * every test asserts the exact OVH calls, and that the cache equals the simulator afterwards.
 */
import { create } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { checkZoneDrift } from '../../src/core/drift/drift.js';
import { ApplyStatus, EndpointSchema, Policy, type Endpoint } from '../../src/gen/dnsplane/v1/zone_pb.js';
import type { SimRecord } from '../../src/ovhsim/index.js';
import * as store from '../../src/store/index.js';
import { expectCacheEqualsSimulator } from '../helpers/expect.js';
import { simZoneCalls } from '../helpers/ovh-api.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { applyDesired } from '../helpers/zone-requests.js';

const ZONE = 'fail.test';
const OTHER = 'other.test';
const REC = `/domain/zone/${ZONE}/record`;
let h: Harness;
let alice: string;

function ep(dnsName: string, targets: string[], ttl = 300, recordType = 'A'): Endpoint {
  return create(EndpointSchema, { dnsName, recordType, targets, ttl });
}

/** The simulator's calls to a zone: "METHOD path[?query] status". */
const calls = (zone = ZONE): string[] => simZoneCalls(h.sim, zone);

type Content = string;
const content = (r: { subDomain: string; fieldType: string; target: string; ttl: number }): Content => `${r.subDomain} ${r.fieldType} ${r.target} ${r.ttl}`;
const contents = (rs: SimRecord[]) => rs.map(content).sort();

async function rejected(p: Promise<unknown>): Promise<ConnectError> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e, 'the call should have failed').toBeInstanceOf(ConnectError);
  return e as ConnectError;
}

function applyChanges(token: string, c: { create?: Endpoint[]; updateOld?: Endpoint[]; updateNew?: Endpoint[]; delete?: Endpoint[] }) {
  return h.zoneClient(token).apply({
    source: { case: 'plan', value: { policy: Policy.SYNC, input: { case: 'changes', value: { create: [], updateOld: [], updateNew: [], delete: [], ...c } } } },
  });
}

async function lastJournal(zone = ZONE): Promise<store.JournalEntry> {
  return (await store.listJournal(h.server.ctx.pool, { zone, limit: 1 }))[0]!;
}

const id = (sub: string) => h.sim.draftRecords(ZONE).find((r) => r.subDomain === sub)!.id;

beforeAll(async () => {
  h = await startHarness({
    zones: { [ZONE]: [], [OTHER]: [] },
    env: { DNSPLANE_LOCK_TIMEOUT: '500ms', DNSPLANE_OVH_TIMEOUT: '1s', DNSPLANE_DRIFT_INTERVAL: '0' },
  });
  alice = await h.tenant('alice', [ZONE, OTHER]);
});

afterAll(async () => {
  await h?.close();
});

beforeEach(async () => {
  h.sim.faults.clear();
  // Each test starts from a: 192.0.2.1 and b: 192.0.2.2, owned by alice, and nothing else of hers.
  await h.zoneClient(alice).apply({
    source: {
      case: 'plan',
      value: {
        policy: Policy.SYNC,
        input: { case: 'desired', value: { zones: [ZONE], endpoints: [ep(`a.${ZONE}`, ['192.0.2.1']), ep(`b.${ZONE}`, ['192.0.2.2'])] } },
      },
    },
  });
  h.sim.clearCalls();
});

/** delete a, update b (.2 -> .9), create c, d, e: DELETE, PUT, POST, POST, POST. */
const fiveOps = () => ({
  delete: [ep(`a.${ZONE}`, ['192.0.2.1'])],
  updateOld: [ep(`b.${ZONE}`, ['192.0.2.2'])],
  updateNew: [ep(`b.${ZONE}`, ['192.0.2.9'])],
  create: [ep(`c.${ZONE}`, ['192.0.2.3']), ep(`d.${ZONE}`, ['192.0.2.4']), ep(`e.${ZONE}`, ['192.0.2.5'])],
});

describe('an operation fails mid-way', () => {
  it('the 3rd of 5 fails: the 2 done are undone newest first, no refresh, only the touched names are re-read', async () => {
    const draftBefore = contents(h.sim.draftRecords(ZONE));
    const publishedBefore = contents(h.sim.publishedRecords(ZONE));
    const genBefore = (await store.getZone(h.server.ctx.pool, ZONE))!.generation;
    const [aId, bId] = [id('a'), id('b')];
    h.sim.faults.fail({
      method: 'POST',
      path: REC,
      nth: 1,
      effect: { kind: 'status', status: 400, body: { class: 'Client::BadRequest', message: 'Invalid target' } },
    });

    const e = await rejected(applyChanges(alice, fiveOps()));
    expect(Code[e.code]).toBe('FailedPrecondition'); // a 400 is not "OVH down"
    expect(e.rawMessage).toContain(`failed at operation 3 of 5, POST ${REC} (c A 192.0.2.3): OVH POST ${REC} failed: HTTP 400 (Invalid target)`);
    expect(e.rawMessage).toContain('the 2 operation(s) that had succeeded were undone and nothing was published');

    const newA = id('a');
    expect(newA).not.toBe(aId); // re-created
    expect(calls()).toEqual([
      `DELETE ${REC}/${aId} 200`, // 1
      `PUT ${REC}/${bId} 200`, // 2
      `POST ${REC} 400`, // 3: failed, not retried
      `PUT ${REC}/${bId} 200`, // undo 2
      `POST ${REC} 200`, // undo 1
      `GET ${REC}?fieldType=A&subDomain=a 200`, // re-read the names of operations 1-3 only
      `GET ${REC}/${newA} 200`,
      `GET ${REC}?fieldType=A&subDomain=b 200`,
      `GET ${REC}/${bId} 200`,
      `GET ${REC}?fieldType=A&subDomain=c 200`,
    ]);
    const writes = h.sim.writes().filter((c) => c.path.startsWith(REC));
    expect(writes[3]!.body).toEqual({ target: '192.0.2.2', ttl: 300 });
    expect(writes[4]!.body).toEqual({ fieldType: 'A', subDomain: 'a', target: '192.0.2.1', ttl: 300 });

    expect(contents(h.sim.draftRecords(ZONE))).toEqual(draftBefore);
    expect(contents(h.sim.publishedRecords(ZONE))).toEqual(publishedBefore);
    expect(h.sim.isDeployed(ZONE)).toBe(false); // the re-created "a" has a new id: the draft differs by id only
    await expectCacheEqualsSimulator(h.server.ctx.pool, h.sim, ZONE);
    expect((await store.getZone(h.server.ctx.pool, ZONE))!.generation).toBe(genBefore + 1n);

    const j = await lastJournal();
    expect(j.state).toBe('failed');
    const result = j.result as {
      failedOperation: { index: number; method: string };
      operations: Array<{ index: number; method: string; outcome: string; status?: number }>;
    };
    expect(result.failedOperation).toMatchObject({ index: 3, method: 'POST', path: REC });
    expect(result.operations.map((o) => [o.index, o.method, o.outcome, o.status])).toEqual([
      [1, 'DELETE', 'undone', 200],
      [2, 'PUT', 'undone', 200],
      [3, 'POST', 'failed', 400],
      [4, 'POST', 'not_sent', undefined],
      [5, 'POST', 'not_sent', undefined],
    ]);

    // Ownership did not move: alice still owns a and b, nobody owns c.
    const recs = await h.zoneClient(alice).records({ zones: [ZONE] });
    expect(recs.zones[0]!.endpoints.map((x) => `${x.dnsName} ${x.targets.join(',')} ${x.labels['owner']}`)).toEqual([
      `a.${ZONE} 192.0.2.1 alice`,
      `b.${ZONE} 192.0.2.2 alice`,
    ]);
  });

  it('OVH stays down on the 2nd: retried (safe PUT), then undone; Unavailable', async () => {
    const [aId, bId] = [id('a'), id('b')];
    h.sim.faults.fail({ method: 'PUT', path: `${REC}/*`, times: 4, effect: { kind: 'status', status: 503 } });
    const e = await rejected(applyChanges(alice, fiveOps()));
    expect(Code[e.code]).toBe('Unavailable');
    expect(e.rawMessage).toContain(`failed at operation 2 of 5, PUT ${REC}/${bId} (b A 192.0.2.9)`);
    const newA = id('a');
    expect(calls()).toEqual([
      `DELETE ${REC}/${aId} 200`,
      ...Array(4).fill(`PUT ${REC}/${bId} 503`),
      `POST ${REC} 200`, // undo 1
      `GET ${REC}?fieldType=A&subDomain=a 200`,
      `GET ${REC}/${newA} 200`,
      `GET ${REC}?fieldType=A&subDomain=b 200`,
      `GET ${REC}/${bId} 200`,
    ]);
    await expectCacheEqualsSimulator(h.server.ctx.pool, h.sim, ZONE);
  });

  it('the refresh fails: every operation is undone and nothing is published', async () => {
    const before = contents(h.sim.publishedRecords(ZONE));
    const [aId, bId] = [id('a'), id('b')];
    h.sim.faults.fail({ method: 'POST', path: `/domain/zone/${ZONE}/refresh`, times: 4, effect: { kind: 'status', status: 500 } });
    const e = await rejected(applyChanges(alice, fiveOps()));
    expect(Code[e.code]).toBe('Unavailable');
    expect(e.rawMessage).toContain(`failed at the refresh after 5 operation(s), POST /domain/zone/${ZONE}/refresh`);
    const c = calls();
    const created = h.sim.writes().filter((w) => w.method === 'POST' && w.path === REC).length;
    expect(created).toBe(4); // c, d, e, then a re-created
    expect(c.slice(0, 9)).toEqual([
      `DELETE ${REC}/${aId} 200`,
      `PUT ${REC}/${bId} 200`,
      `POST ${REC} 200`,
      `POST ${REC} 200`,
      `POST ${REC} 200`,
      ...Array(4).fill(`POST /domain/zone/${ZONE}/refresh 500`),
    ]);
    expect(c.slice(9, 14).map((x) => x.replace(/\/record\/\d+/, '/record/ID'))).toEqual([
      `DELETE ${REC}/ID 200`, // e
      `DELETE ${REC}/ID 200`, // d
      `DELETE ${REC}/ID 200`, // c
      `PUT ${REC}/ID 200`, // b back
      `POST ${REC} 200`, // a back
    ]);
    expect(c.filter((x) => x.includes('/refresh') && x.endsWith(' 204'))).toEqual([]);
    expect(contents(h.sim.publishedRecords(ZONE))).toEqual(before);
    expect(contents(h.sim.draftRecords(ZONE))).toEqual(before);
    await expectCacheEqualsSimulator(h.server.ctx.pool, h.sim, ZONE);

    // A refresh that answered 500 may have published: the row stays in flight at stage "refresh", and
    // the zone's next lock holder (here the drift check) publishes the rolled-back draft.
    const j = await lastJournal();
    expect(j.state).toBe('in_flight');
    h.sim.clearCalls();
    await checkZoneDrift(h.server.ctx, ZONE);
    const healed = calls();
    expect(healed.filter((x) => !x.startsWith('GET '))).toEqual([`POST /domain/zone/${ZONE}/refresh 204`]);
    expect(healed.filter((x) => x.startsWith(`GET ${REC}?`))).toEqual(['a', 'b', 'c', 'd', 'e'].map((n) => `GET ${REC}?fieldType=A&subDomain=${n} 200`));
    expect((await store.getJournalEntry(h.server.ctx.pool, j.id))?.state).toBe('recovered');
    expect(h.sim.isDeployed(ZONE)).toBe(true);
    await expectCacheEqualsSimulator(h.server.ctx.pool, h.sim, ZONE);
  });

  it('a refresh refused with 429 did not publish: the apply is failed and done with', async () => {
    h.sim.faults.fail({ method: 'POST', path: `/domain/zone/${ZONE}/refresh`, times: 1, effect: { kind: 'rateLimit', retryAfterSeconds: 600 } });
    const e = await rejected(applyChanges(alice, fiveOps()));
    expect(Code[e.code]).toBe('Unavailable');
    expect((await lastJournal()).state).toBe('failed');
    await expectCacheEqualsSimulator(h.server.ctx.pool, h.sim, ZONE);
  });

  it('a record to update was deleted by hand: FailedPrecondition, undone, and the cache learns it is gone', async () => {
    const [aId, bId] = [id('a'), id('b')];
    h.sim.deleteRecord(ZONE, bId);
    h.sim.publish(ZONE);
    h.sim.clearCalls();
    const e = await rejected(applyChanges(alice, fiveOps()));
    expect(Code[e.code]).toBe('FailedPrecondition');
    expect(e.rawMessage).toMatch(/operation 2 of 5, PUT .* HTTP 404/);
    const newA = id('a');
    expect(calls()).toEqual([
      `DELETE ${REC}/${aId} 200`,
      `PUT ${REC}/${bId} 404`,
      `POST ${REC} 200`,
      `GET ${REC}?fieldType=A&subDomain=a 200`,
      `GET ${REC}/${newA} 200`,
      `GET ${REC}?fieldType=A&subDomain=b 200`,
    ]);
    await expectCacheEqualsSimulator(h.server.ctx.pool, h.sim, ZONE);
    // Put b back for the next tests (the beforeEach re-creates it).
  });

  it('a creation done but whose answer and look-up were lost: the re-read finds the record and deletes it', async () => {
    const [aId, bId] = [id('a'), id('b')];
    const before = contents(h.sim.draftRecords(ZONE));
    h.sim.faults.fail({ method: 'POST', path: REC, nth: 1, effect: { kind: 'applyThenDrop' } });
    h.sim.faults.fail({ method: 'GET', path: REC, times: 4, effect: { kind: 'status', status: 503 } });
    const e = await rejected(applyChanges(alice, fiveOps()));
    expect(Code[e.code]).toBe('Unavailable');
    expect(e.rawMessage).toContain(`failed at operation 3 of 5, POST ${REC} (c A 192.0.2.3)`);
    const newA = id('a');
    const c = calls();
    const orphan = c.find((x) => /^DELETE .*\/record\/\d+ 200$/.test(x) && !x.includes(aId))!;
    const orphanId = /record\/(\d+)/.exec(orphan)![1]!;
    expect(c).toEqual([
      `DELETE ${REC}/${aId} 200`,
      `PUT ${REC}/${bId} 200`,
      `POST ${REC} 0`, // done, answer lost
      ...Array(4).fill(`GET ${REC}?fieldType=A&subDomain=c 503`), // the look-up fails
      `PUT ${REC}/${bId} 200`,
      `POST ${REC} 200`,
      `GET ${REC}?fieldType=A&subDomain=a 200`,
      `GET ${REC}/${newA} 200`,
      `GET ${REC}?fieldType=A&subDomain=b 200`,
      `GET ${REC}/${bId} 200`,
      `GET ${REC}?fieldType=A&subDomain=c 200`,
      `GET ${REC}/${orphanId} 200`,
      `DELETE ${REC}/${orphanId} 200`, // what the failed creation did, undone too
    ]);
    expect(contents(h.sim.draftRecords(ZONE))).toEqual(before);
    await expectCacheEqualsSimulator(h.server.ctx.pool, h.sim, ZONE);
  });

  it('an undo that fails too leaves the journal in flight; the next apply rolls it back first', async () => {
    const [aId, bId] = [id('a'), id('b')];
    h.sim.faults.fail({ method: 'POST', path: REC, nth: 1, effect: { kind: 'status', status: 400 } }); // op 3
    h.sim.faults.fail({ method: 'PUT', path: `${REC}/*`, nth: 2, effect: { kind: 'status', status: 400 } }); // undo of op 2
    const e = await rejected(applyChanges(alice, fiveOps()));
    expect(Code[e.code]).toBe('Unavailable');
    expect(e.rawMessage).toMatch(/undoing the 2 operation\(s\) that had succeeded failed for 1 of them; nothing was published/);
    expect((await lastJournal()).state).toBe('in_flight');
    expect(calls()).toEqual([`DELETE ${REC}/${aId} 200`, `PUT ${REC}/${bId} 200`, `POST ${REC} 400`, `PUT ${REC}/${bId} 400`, `POST ${REC} 200`]);
    const newA = id('a');

    // The next apply to the zone (here: one that changes nothing) first rolls the dead one back.
    h.sim.clearCalls();
    const res = await applyDesired(h.zoneClient(alice), [ep(`a.${ZONE}`, ['192.0.2.1'])]);
    expect(ApplyStatus[res.zones[0]!.status]).toBe('NO_CHANGES');
    expect(calls()).toEqual([
      `GET ${REC}?fieldType=A&subDomain=a 200`,
      `GET ${REC}/${newA} 200`,
      `GET ${REC}?fieldType=A&subDomain=b 200`,
      `GET ${REC}/${bId} 200`,
      `GET ${REC}?fieldType=A&subDomain=c 200`,
      `GET ${REC}?fieldType=A&subDomain=d 200`,
      `GET ${REC}?fieldType=A&subDomain=e 200`,
      `PUT ${REC}/${bId} 200`, // b back to .2; a was already re-created
      `POST /domain/zone/${ZONE}/refresh 204`, // the undone draft published: a refresh by anyone meanwhile would have published b's .3
    ]);
    const j = (await store.listJournal(h.server.ctx.pool, { zone: ZONE, limit: 1 }))[0]!;
    expect(j.state).toBe('recovered');
    expect(contents(h.sim.draftRecords(ZONE))).toEqual(contents(h.sim.publishedRecords(ZONE)));
    await expectCacheEqualsSimulator(h.server.ctx.pool, h.sim, ZONE);
  });
});

describe('re-reading the apex', () => {
  it("OVH's empty subDomain filter lists every name of the type: only the apex's records are read", async () => {
    await applyDesired(h.zoneClient(alice), [ep(`x.${ZONE}`, ['hello'], 300, 'TXT'), ep(`y.${ZONE}`, ['world'], 300, 'TXT')]);
    h.sim.clearCalls();
    h.sim.faults.fail({ method: 'POST', path: REC, nth: 1, effect: { kind: 'status', status: 400 } });
    const e = await rejected(applyDesired(h.zoneClient(alice), [ep(ZONE, ['v=apex'], 300, 'TXT')]));
    expect(Code[e.code]).toBe('FailedPrecondition');
    // The list answers the ids of x and y too (cached under their names): neither is fetched.
    expect(calls()).toEqual([`POST ${REC} 400`, `GET ${REC}?fieldType=TXT&subDomain= 200`]);
    await expectCacheEqualsSimulator(h.server.ctx.pool, h.sim, ZONE);
  });
});

describe('a POST whose answer is lost', () => {
  it('done then dropped: looked up, not sent again: exactly one record', async () => {
    h.sim.faults.fail({ method: 'POST', path: REC, times: 1, effect: { kind: 'applyThenDrop' } });
    const res = await applyDesired(h.zoneClient(alice), [ep(`p.${ZONE}`, ['192.0.2.77'])]);
    expect(ApplyStatus[res.zones[0]!.status]).toBe('APPLIED');
    const made = h.sim.draftRecords(ZONE).filter((r) => r.subDomain === 'p');
    expect(made).toHaveLength(1);
    expect(calls()).toEqual([
      `POST ${REC} 0`,
      `GET ${REC}?fieldType=A&subDomain=p 200`,
      `GET ${REC}/${made[0]!.id} 200`,
      `POST /domain/zone/${ZONE}/refresh 204`,
    ]);
    await expectCacheEqualsSimulator(h.server.ctx.pool, h.sim, ZONE);
  });

  it('timed out (no answer within DNSPLANE_OVH_TIMEOUT), not done: looked up, sent again: exactly one record', async () => {
    h.sim.faults.fail({ method: 'POST', path: REC, times: 1, effect: { kind: 'hang' } });
    const res = await applyDesired(h.zoneClient(alice), [ep(`q.${ZONE}`, ['192.0.2.78'])]);
    expect(ApplyStatus[res.zones[0]!.status]).toBe('APPLIED');
    expect(h.sim.draftRecords(ZONE).filter((r) => r.subDomain === 'q')).toHaveLength(1);
    expect(calls()).toEqual([`POST ${REC} 0`, `GET ${REC}?fieldType=A&subDomain=q 200`, `POST ${REC} 200`, `POST /domain/zone/${ZONE}/refresh 204`]);
    await expectCacheEqualsSimulator(h.server.ctx.pool, h.sim, ZONE);
  });

  it('answered with id 0: resolved by look-up, the cache holds the real id', async () => {
    h.sim.faults.fail({ method: 'POST', path: REC, times: 1, effect: { kind: 'idZero' } });
    await applyDesired(h.zoneClient(alice), [ep(`z.${ZONE}`, ['192.0.2.79'])]);
    expect(h.sim.draftRecords(ZONE).filter((r) => r.subDomain === 'z')).toHaveLength(1);
    await expectCacheEqualsSimulator(h.server.ctx.pool, h.sim, ZONE);
  });
});

describe('stale plans', () => {
  it('a stored plan whose record set changed since: FailedPrecondition and zero OVH calls', async () => {
    const planned = await h
      .zoneClient(alice)
      .plan({ policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints: [ep(`s.${ZONE}`, ['192.0.2.60'])] } } });
    await applyDesired(h.zoneClient(alice), [ep(`s.${ZONE}`, ['192.0.2.61'])]); // what the plan touches moves on
    h.sim.clearCalls();
    const e = await rejected(h.zoneClient(alice).apply({ source: { case: 'planId', value: planned.plan!.id } }));
    expect(Code[e.code]).toBe('FailedPrecondition');
    expect(e.rawMessage).toMatch(
      /^the record sets or ownership the plan touches in zone [\w.]+ changed since it was made \(generation \d+ -> \d+\); nothing was sent, make a new plan$/,
    );
    expect(h.sim.calls()).toEqual([]);
    // And it stays refused.
    const again = await rejected(h.zoneClient(alice).apply({ source: { case: 'planId', value: planned.plan!.id } }));
    expect(Code[again.code]).toBe('FailedPrecondition');
    expect(h.sim.calls()).toEqual([]);
  });

  it('a stored plan whose zone did not move applies', async () => {
    const planned = await h
      .zoneClient(alice)
      .plan({ policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints: [ep(`u.${ZONE}`, ['192.0.2.62'])] } } });
    const res = await h.zoneClient(alice).apply({ source: { case: 'planId', value: planned.plan!.id } });
    expect(ApplyStatus[res.zones[0]!.status]).toBe('APPLIED');
  });

  it('a stored plan whose zone moved elsewhere (another record set) applies, with exactly its calls', async () => {
    const planned = await h
      .zoneClient(alice)
      .plan({ policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints: [ep(`v.${ZONE}`, ['192.0.2.63'])] } } });
    const moved = await applyDesired(h.zoneClient(alice), [ep(`w.${ZONE}`, ['192.0.2.64'])]); // the zone moves on, beside it
    expect(moved.zones[0]!.generation).toBeGreaterThan(planned.plan!.zones[0]!.baseGeneration);
    h.sim.clearCalls();
    const res = await h.zoneClient(alice).apply({ source: { case: 'planId', value: planned.plan!.id } });
    expect(ApplyStatus[res.zones[0]!.status]).toBe('APPLIED');
    expect(calls(ZONE)).toEqual([`POST /domain/zone/${ZONE}/record 200`, `POST /domain/zone/${ZONE}/refresh 204`]);
  });
});

describe('the zone lock', () => {
  it('held elsewhere longer than DNSPLANE_LOCK_TIMEOUT: Aborted, nothing sent; another zone applies meanwhile', async () => {
    const before = await store.countJournalStates(h.server.ctx.pool, ZONE);
    await store.withZoneLock(h.server.ctx.pool, ZONE, { lockTimeoutMs: 5_000 }, async () => {
      const e = await rejected(applyDesired(h.zoneClient(alice), [ep(`l.${ZONE}`, ['192.0.2.70'])]));
      expect(Code[e.code]).toBe('Aborted');
      expect(e.rawMessage).toMatch(/lock not acquired within 500 ms/);
      // Different zones do not wait for each other.
      const other = await applyDesired(h.zoneClient(alice), [ep(`l.${OTHER}`, ['192.0.2.71'])]);
      expect(ApplyStatus[other.zones[0]!.status]).toBe('APPLIED');
    });
    expect(calls(ZONE)).toEqual([]);
    expect(await store.countJournalStates(h.server.ctx.pool, ZONE)).toEqual(before);
    // Released: the same apply goes through.
    const res = await applyDesired(h.zoneClient(alice), [ep(`l.${ZONE}`, ['192.0.2.70'])]);
    expect(ApplyStatus[res.zones[0]!.status]).toBe('APPLIED');
  });
});
