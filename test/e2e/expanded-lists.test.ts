/**
 * Expanded record lists end to end (DNSPLANE_OVH_EXPANDED_LISTS; issue 14 item 2): a real server on
 * the simulator, the exact calls of every reader — the first sync, the drift check, the targeted
 * re-read after a failed apply — when OVH honours the expanded mode (paging included), refuses it,
 * ignores it, and with the setting off.
 */
import { create } from '@bufbuild/protobuf';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { checkZoneDrift } from '../../src/core/drift/drift.js';
import { EndpointSchema, Policy, type Endpoint } from '../../src/gen/dnsplane/v1/zone_pb.js';
import type { SimBehavior, SimRecordInit } from '../../src/ovhsim/index.js';
import { expectCacheEqualsSimulator } from '../helpers/expect.js';
import { simZoneCalls } from '../helpers/ovh-api.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { memoryLogger } from '../helpers/sim-server.js';

function records(n: number, prefix: string): SimRecordInit[] {
  return Array.from({ length: n }, (_, i) => ({ subDomain: `${prefix}${i}`, fieldType: 'A', target: `198.51.100.${i + 1}`, ttl: 300 }));
}

/** The simulator's log for one zone: "METHOD path[?query] status" plus " [page n/size]" for an expanded request. */
function callsOf(h: Harness, zone: string): string[] {
  return simZoneCalls(h.sim, zone, ({ headers: x }) =>
    x['x-pagination-mode'] ? ` [page ${x['x-pagination-number']}/${x['x-pagination-size']}${x['pragma'] === 'no-cache' ? '' : ', cached'}]` : '',
  );
}

function ep(dnsName: string, targets: string[]): Endpoint {
  return create(EndpointSchema, { dnsName, recordType: 'A', targets, ttl: 300 });
}

function createAll(h: Harness, token: string, endpoints: Endpoint[]) {
  return h.zoneClient(token).apply({
    source: {
      case: 'plan',
      value: { policy: Policy.SYNC, input: { case: 'changes', value: { create: endpoints, updateOld: [], updateNew: [], delete: [] } } },
    },
  });
}

const ids = (h: Harness, zone: string) =>
  h.sim
    .draftRecords(zone)
    .map((r) => r.id)
    .sort();

const cleanup: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const fn of cleanup.reverse()) await fn();
});

async function harness(zones: Record<string, SimRecordInit[]>, behavior: Partial<SimBehavior>, env: Record<string, string> = {}) {
  const { log, lines } = memoryLogger();
  const h = await startHarness({ zones, env: { DNSPLANE_DRIFT_INTERVAL: 'off', ...env }, logger: log });
  cleanup.push(() => h.close());
  h.sim.setBehavior(behavior);
  const notices = () => lines.filter((l) => String(l['msg']).includes('expanded record lists')).map((l) => l['msg']);
  return { h, notices };
}

describe('OVH honours expanded lists (auto, the default)', () => {
  const ONE = 'one.test';
  const TWO = 'two.test';
  let h: Harness;
  let notices: () => unknown[];
  let token: string;

  beforeAll(async () => {
    // The server serves pages of 8 at most, whatever is asked: one.test (21 records) takes 3 pages.
    ({ h, notices } = await harness({ [ONE]: records(19, 'a'), [TWO]: records(3, 'b') }, { expandedRecordLists: 'honoured', expandedListMaxPageSize: 8 }));
    token = await h.tenant('alice', [ONE, TWO]);
  });
  beforeEach(() => h.sim.clearCalls());

  it('first sync: the SOA, then the records a page per call — 4 calls for 21 records instead of 23; the outcome is logged once', async () => {
    await h.zoneClient(token).records({ zones: [ONE] });
    const log = callsOf(h, ONE);
    expect(log.slice(0, 2)).toEqual([`GET /domain/zone/${ONE}/soa 200`, `GET /domain/zone/${ONE}/record 200 [page 1/5000]`]);
    expect(log.slice(2).sort()).toEqual([`GET /domain/zone/${ONE}/record 200 [page 2/8]`, `GET /domain/zone/${ONE}/record 200 [page 3/8]`]);
    await expectCacheEqualsSimulator(h.server.ctx.pool, h.sim, ONE);

    h.sim.clearCalls();
    await h.zoneClient(token).records({ zones: [TWO] });
    expect(callsOf(h, TWO)).toEqual([`GET /domain/zone/${TWO}/soa 200`, `GET /domain/zone/${TWO}/record 200 [page 1/5000]`]);
    await expectCacheEqualsSimulator(h.server.ctx.pool, h.sim, TWO);
    expect(notices()).toEqual(['OVH answers expanded record lists: zones are read a page of records per call']);
  });

  it("drift after dnsplane's own apply: the SOA and one full read (the pages), nothing changed", async () => {
    await createAll(h, token, [ep(`new.${TWO}`, ['192.0.2.10'])]);
    h.sim.clearCalls();
    expect(await checkZoneDrift(h.server.ctx, TWO)).toMatchObject({ status: 'unchanged', calls: 2 });
    expect(callsOf(h, TWO)).toEqual([`GET /domain/zone/${TWO}/soa 200`, `GET /domain/zone/${TWO}/record 200 [page 1/5000]`]);
    expect(await checkZoneDrift(h.server.ctx, TWO)).toMatchObject({ status: 'unchanged', calls: 1 });
  });

  it('drift: a record added, one edited in place and one deleted by hand are all found by the one full read', async () => {
    const [first, second] = h.sim.draftRecords(ONE).filter((r) => r.fieldType === 'A');
    h.sim.addRecord(ONE, { subDomain: 'byhand', fieldType: 'TXT', target: 'set by hand' });
    h.sim.updateRecord(ONE, first!.id, { target: '203.0.113.7' });
    h.sim.deleteRecord(ONE, second!.id);
    h.sim.publish(ONE);
    const result = await checkZoneDrift(h.server.ctx, ONE);
    expect(result).toMatchObject({ status: 'changed', added: 1, updated: 1, removed: 1, calls: 4 });
    const log = callsOf(h, ONE);
    expect(log.slice(0, 2)).toEqual([`GET /domain/zone/${ONE}/soa 200`, `GET /domain/zone/${ONE}/record 200 [page 1/5000]`]);
    expect(log.slice(2).sort()).toEqual([`GET /domain/zone/${ONE}/record 200 [page 2/8]`, `GET /domain/zone/${ONE}/record 200 [page 3/8]`]);
    await expectCacheEqualsSimulator(h.server.ctx.pool, h.sim, ONE);
  });

  it('a failed apply: the touched names are re-read with one filtered expanded call each, no GET per id', async () => {
    const before = ids(h, TWO);
    h.sim.faults.fail({
      method: 'POST',
      path: `/domain/zone/${TWO}/record`,
      nth: 2,
      effect: { kind: 'status', status: 400, body: { class: 'Client::BadRequest', message: 'Invalid target' } },
    });
    try {
      await createAll(h, token, [ep(`x.${TWO}`, ['192.0.2.20']), ep(`y.${TWO}`, ['192.0.2.21'])]).catch(() => undefined);
    } finally {
      h.sim.faults.clear();
    }
    const created = h.sim.calls().find((c) => c.method === 'DELETE')!.path;
    expect(callsOf(h, TWO)).toEqual([
      `POST /domain/zone/${TWO}/record 200`,
      `POST /domain/zone/${TWO}/record 400`,
      `DELETE ${created} 200`,
      `GET /domain/zone/${TWO}/record?fieldType=A&subDomain=x 200 [page 1/5000]`,
      `GET /domain/zone/${TWO}/record?fieldType=A&subDomain=y 200 [page 1/5000]`,
    ]);
    expect(ids(h, TWO)).toEqual(before);
    await expectCacheEqualsSimulator(h.server.ctx.pool, h.sim, TWO);
  });
});

describe('OVH refuses expanded lists (400): one fallback, remembered for the process', () => {
  it('the first sync pays one refused call, the next one none; said once', async () => {
    const { h, notices } = await harness({ 'r1.test': records(3, 'r'), 'r2.test': records(2, 's') }, { expandedRecordLists: 'refused' });
    const token = await h.tenant('bob', ['r1.test', 'r2.test']);
    h.sim.clearCalls();
    await h.zoneClient(token).records({ zones: ['r1.test'] });
    const one = callsOf(h, 'r1.test');
    expect(one.slice(0, 3)).toEqual([
      'GET /domain/zone/r1.test/soa 200',
      'GET /domain/zone/r1.test/record 400 [page 1/5000]',
      'GET /domain/zone/r1.test/record 200',
    ]);
    expect(one.slice(3).sort()).toEqual(ids(h, 'r1.test').map((id) => `GET /domain/zone/r1.test/record/${id} 200`));
    await h.zoneClient(token).records({ zones: ['r2.test'] });
    const two = callsOf(h, 'r2.test');
    expect(two.slice(0, 2)).toEqual(['GET /domain/zone/r2.test/soa 200', 'GET /domain/zone/r2.test/record 200']);
    expect(two.slice(2).sort()).toEqual(ids(h, 'r2.test').map((id) => `GET /domain/zone/r2.test/record/${id} 200`));
    await expectCacheEqualsSimulator(h.server.ctx.pool, h.sim, 'r1.test');
    await expectCacheEqualsSimulator(h.server.ctx.pool, h.sim, 'r2.test');
    expect(notices()).toEqual(['OVH does not answer expanded record lists: records are read one GET per id for the rest of this process']);
  });
});

describe('OVH ignores the header (ids answered) and the setting off', () => {
  it('ignored: the ids of the expanded request are used, so a cold read costs what it did (N + 2)', async () => {
    const { h } = await harness({ 'i.test': records(4, 'i') }, { expandedRecordLists: 'ignored' });
    const token = await h.tenant('carol', ['i.test']);
    h.sim.clearCalls();
    await h.zoneClient(token).records({ zones: ['i.test'] });
    const log = callsOf(h, 'i.test');
    expect(log).toHaveLength(6 + 2);
    expect(log.slice(0, 2)).toEqual(['GET /domain/zone/i.test/soa 200', 'GET /domain/zone/i.test/record 200 [page 1/5000]']);
    expect(log.slice(2).sort()).toEqual(ids(h, 'i.test').map((id) => `GET /domain/zone/i.test/record/${id} 200`));
  });

  it('DNSPLANE_OVH_EXPANDED_LISTS=off: no paging header ever, one GET per record, even where OVH honours the mode', async () => {
    const { h, notices } = await harness({ 'o.test': records(4, 'o') }, { expandedRecordLists: 'honoured' }, { DNSPLANE_OVH_EXPANDED_LISTS: 'off' });
    const token = await h.tenant('dave', ['o.test']);
    h.sim.clearCalls();
    await h.zoneClient(token).records({ zones: ['o.test'] });
    const log = callsOf(h, 'o.test');
    expect(log.slice(0, 2)).toEqual(['GET /domain/zone/o.test/soa 200', 'GET /domain/zone/o.test/record 200']);
    expect(log.slice(2).sort()).toEqual(ids(h, 'o.test').map((id) => `GET /domain/zone/o.test/record/${id} 200`));
    expect(notices()).toEqual([]);
  });
});
