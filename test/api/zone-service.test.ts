/**
 * ZoneService's happy paths in memory (test/helpers/api-memory.ts): Records, Plan, Apply of the
 * stored plan and GetApply on a CoreContext over real Postgres and the simulator, no HTTP server —
 * the answers, and the exact OVH calls (Records and Plan none: they read the cache).
 */
import { fromBinary, toBinary, toJson } from '@bufbuild/protobuf';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApplyStatus, ChangeAction, Policy, RecordsResponseSchema, ZoneService } from '../../src/gen/dnsplane/v1/zone_pb.js';
import * as store from '../../src/store/index.js';
import { inMemoryClient } from '../helpers/api-memory.js';
import { applyRoom, type ApplyRoom } from '../helpers/core-apply.js';
import { ep, expectCacheEqualsSimulator } from '../helpers/expect.js';

const ZONE = 'happy.test';
const REC = `/domain/zone/${ZONE}/record`;
let room: ApplyRoom;

beforeAll(async () => {
  room = await applyRoom({
    zones: {
      [ZONE]: [
        { subDomain: 'www', fieldType: 'A', target: '192.0.2.1', ttl: 300 },
        { subDomain: 'www', fieldType: 'A', target: '192.0.2.2', ttl: 300 },
        { subDomain: 'note', fieldType: 'TXT', target: 'hello', ttl: 600 },
      ],
    },
    tenants: ['alice'],
  });
});
afterAll(async () => {
  await room?.close();
});
beforeEach(() => room.sim.clearCalls());

const zone = (opts: { useBinaryFormat?: boolean } = {}) => inMemoryClient(room.ctx, ZoneService, room.tokens['alice'], opts);
const shown = (endpoints: Array<{ dnsName: string; recordType: string; targets: string[]; ttl: bigint | number; labels: Record<string, string> }>) =>
  endpoints.map((e) => `${e.dnsName} ${e.recordType} ${e.targets.join(',')} ${e.ttl} ${e.labels['owner'] || '-'}`);

describe('Records', () => {
  it('the zone as synced, from the cache: no OVH call; the same answer in binary and in JSON', async () => {
    const binary = await zone().records({ zones: [ZONE], includeForeign: true });
    const json = await zone({ useBinaryFormat: false }).records({ zones: [ZONE], includeForeign: true });
    expect(binary.zones.map((z) => z.zone)).toEqual([ZONE]);
    // The apex NS records OVH makes are foreign too; a TXT target as written, unquoted.
    expect(shown(binary.zones[0]!.endpoints)).toEqual([
      `${ZONE} NS dns1.sim.test,ns1.sim.test 0 -`,
      `note.${ZONE} TXT hello 600 -`,
      `www.${ZONE} A 192.0.2.1,192.0.2.2 300 -`,
    ]);
    expect(toJson(RecordsResponseSchema, json)).toEqual(
      toJson(RecordsResponseSchema, fromBinary(RecordsResponseSchema, toBinary(RecordsResponseSchema, binary))),
    );
    expect(room.calls()).toEqual([]);
  });

  it('a generation the caller already has: not modified, no endpoints', async () => {
    const { generation } = (await zone().records({ zones: [ZONE] })).zones[0]!;
    const again = (await zone().records({ zones: [ZONE], knownGenerations: { [ZONE]: generation } })).zones[0]!;
    expect([again.notModified, again.generation, again.endpoints]).toEqual([true, generation, []]);
  });
});

describe('Plan, then Apply of the stored plan', () => {
  it('Plan stores what Apply will do and sends nothing; Apply does exactly that, once; GetApply tells it done', async () => {
    const genBefore = (await store.getZone(room.db.pool, ZONE))!.generation;
    const planned = (
      await zone().plan({
        policy: Policy.UPSERT_ONLY,
        input: { case: 'desired', value: { zones: [], endpoints: [ep(`api.${ZONE}`, 'A', ['192.0.2.10'], 120)] } },
      })
    ).plan!;
    expect(room.calls()).toEqual([]);
    expect([planned.tenant, planned.policy, planned.zones.map((z) => [z.zone, z.baseGeneration])]).toEqual(['alice', Policy.UPSERT_ONLY, [[ZONE, genBefore]]]);
    const zp = planned.zones[0]!;
    expect(zp.changes.map((c) => [ChangeAction[c.action], c.after?.dnsName])).toEqual([['CREATE', `api.${ZONE}`]]);
    expect(zp.operations.map((o) => `${o.method} ${o.path}`)).toEqual([`POST ${REC}`, `POST /domain/zone/${ZONE}/refresh`]);

    const applied = await zone().apply({ source: { case: 'planId', value: planned.id } });
    expect(applied.planId).toBe(planned.id);
    const z = applied.zones[0]!;
    expect([z.zone, ApplyStatus[z.status], z.generation, z.error]).toEqual([ZONE, 'APPLIED', genBefore + 1n, '']);
    // The calls planned are the calls made, and the only ones OVH received.
    expect(z.calls.map((c) => `${c.method} ${c.path} ${c.status}`)).toEqual([`POST ${REC} 200`, `POST /domain/zone/${ZONE}/refresh 204`]);
    expect(room.calls()).toEqual([`POST ${REC} 200`, `POST /domain/zone/${ZONE}/refresh 204`]);
    expect(
      room.sim
        .publishedRecords(ZONE)
        .filter((r) => r.subDomain === 'api')
        .map((r) => `${r.fieldType} ${r.target} ${r.ttl}`),
    ).toEqual(['A 192.0.2.10 120']);
    await expectCacheEqualsSimulator(room.db.pool, room.sim, ZONE);

    // Records shows it at once, owned by alice; the records made outside dnsplane stay foreign.
    const recs = (await zone().records({ zones: [ZONE], includeForeign: true })).zones[0]!;
    expect(recs.generation).toBe(genBefore + 1n);
    expect(shown(recs.endpoints)).toEqual([
      `api.${ZONE} A 192.0.2.10 120 alice`,
      `${ZONE} NS dns1.sim.test,ns1.sim.test 0 -`,
      `note.${ZONE} TXT hello 600 -`,
      `www.${ZONE} A 192.0.2.1,192.0.2.2 300 -`,
    ]);

    const journal = (await store.listJournal(room.db.pool, { zone: ZONE, limit: 1 }))[0]!;
    const got = await zone().getApply({ journalId: journal.id });
    expect([got.journalId, got.zone, got.tenant, got.state]).toEqual([journal.id, ZONE, 'alice', 'done']);
  });
});
