/**
 * A zone whose name puts "/auth" in the path (auth.example.com, authentik.example.org): node-ovh sends
 * any call whose path holds "/auth" unsigned (it takes it for one of OVH's /auth/ routes), which OVH —
 * and the simulator, which checks signatures as OVH does — refuses as unauthenticated. The client signs
 * those calls itself (ovh/client/signed-request.ts), exactly as node-ovh signs the others: every call of
 * such a zone is answered, with the exact calls the simulator saw; /auth/time stays unsigned.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { needsOwnSigning } from '../../src/ovh/client/signed-request.js';
import { OvhSimulator } from '../../src/ovhsim/index.js';
import { ovhApiFor, simCalls } from '../helpers/ovh-api.js';

const ZONE = 'auth.example.com';
let sim: OvhSimulator;

beforeAll(async () => {
  sim = await OvhSimulator.start({ zones: { [ZONE]: [{ subDomain: 'www', fieldType: 'A', target: '192.0.2.1', ttl: 300 }] } });
});
afterAll(async () => {
  await sim.stop();
});

describe('a zone whose path holds "/auth"', () => {
  it('is read and written with signed calls: GET, POST with a body (non-ASCII escaped), PUT, DELETE, refresh', async () => {
    const client = ovhApiFor(sim);
    sim.clearCalls();
    const ids = await client.listRecordIds(ZONE, { subDomain: 'www' });
    expect(ids).toHaveLength(1);
    const created = await client.createRecord(ZONE, { subDomain: 'api', fieldType: 'TXT', target: 'café', ttl: 300 }, new Set(ids));
    await client.updateRecord(ZONE, created.id, { ttl: 600 });
    expect((await client.getRecord(ZONE, created.id)).ttl).toBe(600);
    await client.deleteRecord(ZONE, ids[0]!);
    await client.refresh(ZONE);
    expect(simCalls(sim).map((c) => c.replace(/\/record\/\d+/, '/record/ID'))).toEqual([
      `GET /domain/zone/${ZONE}/record?subDomain=www 200`,
      `POST /domain/zone/${ZONE}/record 200`,
      `PUT /domain/zone/${ZONE}/record/ID 200`,
      `GET /domain/zone/${ZONE}/record/ID 200`,
      `DELETE /domain/zone/${ZONE}/record/ID 200`,
      `POST /domain/zone/${ZONE}/refresh 204`,
    ]);
    expect(
      sim
        .publishedRecords(ZONE)
        .filter((r) => r.fieldType !== 'NS')
        .map((r) => `${r.subDomain} ${r.fieldType} ${r.target} ${r.ttl}`),
    ).toEqual(['api TXT café 600']);
  });

  it("only such paths are signed by the client itself; OVH's own /auth/ routes stay node-ovh's", () => {
    expect(needsOwnSigning(`/domain/zone/${ZONE}/record`)).toBe(true);
    expect(needsOwnSigning('/domain/zone/authentik.example.org')).toBe(true);
    expect(needsOwnSigning('/domain/zone/example.com/record')).toBe(false);
    expect(needsOwnSigning('/auth/time')).toBe(false);
  });
});
