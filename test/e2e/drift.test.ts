/**
 * Drift: records changed in OVH by hand reach the cache, at the cost documented in src/core/drift/drift.ts.
 * The exact calls of one check are asserted on a server whose loop is off (checks run by the test); the
 * loop itself runs on a second server with a short DNSPLANE_DRIFT_INTERVAL.
 */
import { create } from '@bufbuild/protobuf';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { checkZoneDrift } from '../../src/core/drift/drift.js';
import { EndpointSchema, Policy } from '../../src/gen/dnsplane/v1/zone_pb.js';
import * as store from '../../src/store/index.js';
import { expectCacheEqualsSimulator } from '../helpers/expect.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { until } from '../helpers/until.js';

const ZONE = 'drift.test';
const REC = `/domain/zone/${ZONE}/record`;

function callsOf(h: Harness): string[] {
  return h.sim
    .calls()
    .filter((c) => c.path !== '/auth/time')
    .map((c) => `${c.method} ${c.path} ${c.status}`);
}

const initial = [
  { subDomain: 'www', fieldType: 'A', target: '192.0.2.1', ttl: 300 },
  { subDomain: 'www', fieldType: 'A', target: '192.0.2.2', ttl: 300 },
  { subDomain: 'mail', fieldType: 'MX', target: '10 mx.drift.test.', ttl: 3600 },
  { subDomain: '', fieldType: 'TXT', target: 'v=spf1 -all', ttl: 0 },
  { subDomain: 'api', fieldType: 'CNAME', target: 'www.drift.test.', ttl: 600 },
];

describe('one drift check (loop off)', () => {
  let h: Harness;
  let token: string;
  const check = () => checkZoneDrift(h.server.ctx, ZONE);

  beforeAll(async () => {
    h = await startHarness({ zones: { [ZONE]: initial }, env: { DNSPLANE_DRIFT_INTERVAL: '0' } });
    token = await h.tenant('alice', [ZONE]);
    await h.zoneClient(token).records({ zones: [ZONE] }); // first sync
  });
  afterAll(async () => {
    await h?.close();
  });
  beforeEach(() => h.sim.clearCalls());

  it('nothing changed: exactly one OVH call (the SOA serial), no new generation', async () => {
    const gen = (await store.getZone(h.server.ctx.pool, ZONE))!.generation;
    for (let i = 0; i < 3; i++) {
      h.sim.clearCalls();
      expect(await check()).toMatchObject({ status: 'unchanged', calls: 1 });
      expect(callsOf(h)).toEqual([`GET /domain/zone/${ZONE}/soa 200`]);
    }
    expect((await store.getZone(h.server.ctx.pool, ZONE))!.generation).toBe(gen);
  });

  it('a record added by hand: ids, export, and one GET of the new id only', async () => {
    const r = h.sim.addRecord(ZONE, { subDomain: 'new', fieldType: 'A', target: '192.0.2.50', ttl: 120 });
    h.sim.publish(ZONE);
    const gen = (await store.getZone(h.server.ctx.pool, ZONE))!.generation;
    expect(await check()).toMatchObject({ status: 'changed', calls: 4, added: 1, removed: 0, updated: 0 });
    expect(callsOf(h)).toEqual([`GET /domain/zone/${ZONE}/soa 200`, `GET ${REC} 200`, `GET /domain/zone/${ZONE}/export 200`, `GET ${REC}/${r.id} 200`]);
    expect((await store.getZone(h.server.ctx.pool, ZONE))!.generation).toBe(gen + 1n);
    await expectCacheEqualsSimulator(h.server.ctx.pool, h.sim, ZONE);
    const recs = await h.zoneClient(token).records({ zones: [ZONE], includeForeign: true });
    expect(recs.zones[0]!.endpoints.find((e) => e.dnsName === `new.${ZONE}`)).toMatchObject({ targets: ['192.0.2.50'], ttl: 120 });
    // And then it is quiet again: one call.
    h.sim.clearCalls();
    expect(await check()).toMatchObject({ status: 'unchanged', calls: 1 });
  });

  it('a record edited in place (same id): found through the export, only that name is re-read', async () => {
    const www = h.sim.draftRecords(ZONE).filter((r) => r.subDomain === 'www');
    h.sim.updateRecord(ZONE, www[0]!.id, { target: '192.0.2.9' });
    h.sim.publish(ZONE);
    expect(await check()).toMatchObject({ status: 'changed', calls: 5, added: 0, removed: 0, updated: 1 });
    const c = callsOf(h);
    expect(c.slice(0, 3)).toEqual([`GET /domain/zone/${ZONE}/soa 200`, `GET ${REC} 200`, `GET /domain/zone/${ZONE}/export 200`]);
    expect(c.slice(3).sort()).toEqual(www.map((r) => `GET ${REC}/${r.id} 200`).sort()); // the two www records, nothing else
    await expectCacheEqualsSimulator(h.server.ctx.pool, h.sim, ZONE);
  });

  it('TTL changed in place, and a TXT at the apex changed: both found', async () => {
    const mx = h.sim.draftRecords(ZONE).find((r) => r.fieldType === 'MX')!;
    const txt = h.sim.draftRecords(ZONE).find((r) => r.fieldType === 'TXT')!;
    h.sim.updateRecord(ZONE, mx.id, { ttl: 7200 });
    h.sim.updateRecord(ZONE, txt.id, { target: 'v=spf1 include:x.test -all' });
    h.sim.publish(ZONE);
    const res = await check();
    expect(res).toMatchObject({ status: 'changed', updated: 2 });
    const gets = callsOf(h).slice(3);
    expect(gets).toContain(`GET ${REC}/${mx.id} 200`);
    expect(gets).toContain(`GET ${REC}/${txt.id} 200`);
    await expectCacheEqualsSimulator(h.server.ctx.pool, h.sim, ZONE);
  });

  it('a record deleted by hand: ids and export only, the row leaves the cache', async () => {
    const api = h.sim.draftRecords(ZONE).find((r) => r.subDomain === 'api')!;
    h.sim.deleteRecord(ZONE, api.id);
    h.sim.publish(ZONE);
    expect(await check()).toMatchObject({ status: 'changed', calls: 3, removed: 1 });
    expect(callsOf(h)).toEqual([`GET /domain/zone/${ZONE}/soa 200`, `GET ${REC} 200`, `GET /domain/zone/${ZONE}/export 200`]);
    await expectCacheEqualsSimulator(h.server.ctx.pool, h.sim, ZONE);
  });

  it("dnsplane's own apply moves the serial: the next check costs 3 calls, changes nothing, then 1 again", async () => {
    await h.zoneClient(token).apply({
      source: {
        case: 'plan',
        value: {
          policy: Policy.UPSERT_ONLY,
          input: {
            case: 'desired',
            value: { zones: [], endpoints: [create(EndpointSchema, { dnsName: `own.${ZONE}`, recordType: 'A', targets: ['192.0.2.80'], ttl: 300 })] },
          },
        },
      },
    });
    const gen = (await store.getZone(h.server.ctx.pool, ZONE))!.generation;
    h.sim.clearCalls();
    expect(await check()).toMatchObject({ status: 'unchanged', calls: 3, added: 0, removed: 0, updated: 0 });
    expect(callsOf(h)).toEqual([`GET /domain/zone/${ZONE}/soa 200`, `GET ${REC} 200`, `GET /domain/zone/${ZONE}/export 200`]);
    expect((await store.getZone(h.server.ctx.pool, ZONE))!.generation).toBe(gen);
    h.sim.clearCalls();
    expect(await check()).toMatchObject({ status: 'unchanged', calls: 1 });
  });

  it('a zone whose lock is held is skipped (busy), with no OVH call', async () => {
    await store.withZoneLock(h.server.ctx.pool, ZONE, { lockTimeoutMs: 1000 }, async () => {
      expect(await check()).toMatchObject({ status: 'busy', calls: 0 });
    });
    expect(callsOf(h)).toEqual([]);
  });

  it('a zone checked less than minAgeMs ago (by another replica) is skipped', async () => {
    await check();
    h.sim.clearCalls();
    expect(await checkZoneDrift(h.server.ctx, ZONE, { minAgeMs: 60_000 })).toMatchObject({ status: 'skipped', calls: 0 });
    expect(callsOf(h)).toEqual([]);
  });
});

describe('the drift loop (DNSPLANE_DRIFT_INTERVAL=300ms)', () => {
  let h: Harness;
  let token: string;

  beforeAll(async () => {
    h = await startHarness({ zones: { [ZONE]: initial }, env: { DNSPLANE_DRIFT_INTERVAL: '300ms' } });
    token = await h.tenant('alice', [ZONE]);
    await h.zoneClient(token).records({ zones: [ZONE] });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('with nothing changed, each check is one GET of the SOA', async () => {
    h.sim.clearCalls();
    await until('three checks', async () => (h.sim.calls().length >= 3 ? true : undefined));
    expect(new Set(callsOf(h))).toEqual(new Set([`GET /domain/zone/${ZONE}/soa 200`]));
  });

  it('a record added, edited and deleted by hand shows in Records after the interval', async () => {
    const records = async () => (await h.zoneClient(token).records({ zones: [ZONE], includeForeign: true })).zones[0]!.endpoints;
    h.sim.addRecord(ZONE, { subDomain: 'hand', fieldType: 'A', target: '198.51.100.1', ttl: 300 });
    h.sim.publish(ZONE);
    await until('the new record in Records', async () => ((await records()).find((e) => e.dnsName === `hand.${ZONE}`) ? true : undefined));

    const id = h.sim.draftRecords(ZONE).find((r) => r.subDomain === 'hand')!.id;
    h.sim.updateRecord(ZONE, id, { target: '198.51.100.2' });
    h.sim.publish(ZONE);
    await until('the edit in Records', async () =>
      (await records()).find((e) => e.dnsName === `hand.${ZONE}`)?.targets[0] === '198.51.100.2' ? true : undefined,
    );

    h.sim.deleteRecord(ZONE, id);
    h.sim.publish(ZONE);
    await until('the deletion in Records', async () => ((await records()).some((e) => e.dnsName === `hand.${ZONE}`) ? undefined : true));
    await expectCacheEqualsSimulator(h.server.ctx.pool, h.sim, ZONE);
  });
});
