/**
 * The served OVH API's record ids are stable (issue 29), as go-ovh's callers rely on them (a
 * Terraform state, a provider's cache keyed by id, "did my record land"): the id a POST answered is
 * the id every later listing, GET, PUT and DELETE shows and takes — after one refresh, after two,
 * after a refresh that replaced the record's OVH record, and on another replica of the same database
 * (a process that never saw the POST). A record the tenant had before keeps its OVH id. And a refresh
 * is planned under the zone lock: another apply of the same tenant that lands while the refresh waits
 * for the lock is not overwritten by it.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOvhKey } from '../../src/core/credentials/ovh-admin.js';
import { Policy } from '../../src/gen/dnsplane/v1/zone_pb.js';
import type { Server } from '../../src/server/server.js';
import { queueBehindLock } from '../helpers/core-apply.js';
import { callLines, ep } from '../helpers/expect.js';
import { OvhHttp } from '../helpers/external-dns-ovh.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { startServerOn } from '../helpers/sim-server.js';

const ZONE = 'ids.test';
const REC = `/domain/zone/${ZONE}/record`;
const REFRESH = `/domain/zone/${ZONE}/refresh`;
const ENV = {
  DNSPLANE_SECRETS_KEY: randomBytes(32).toString('base64'),
  DNSPLANE_OVH_API_RATE: '1000',
  DNSPLANE_OVH_API_BURST: '1000',
  DNSPLANE_LOCK_TIMEOUT: '5m',
};

let h: Harness;
let other: Server;
let token: string;
/** go-ovh as a tool holds it, on each replica: the same key. */
const goOvh: Record<'first' | 'second', OvhHttp> = {} as never;

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [] }, env: ENV });
  other = await startServerOn(h.sim, h.databaseUrl, { ...ENV, DNSPLANE_ZONES: ZONE, DNSPLANE_DRIFT_INTERVAL: 'off' });
  token = await h.tenant('alice', [ZONE]);
  // A record alice made through another door: the served API shows it under its OVH id.
  await h.zoneClient(token).apply({
    source: {
      case: 'plan',
      value: {
        policy: Policy.UPSERT_ONLY,
        input: { case: 'changes', value: { create: [ep(`old.${ZONE}`, 'A', ['192.0.2.99'])], updateOld: [], updateNew: [], delete: [] } },
      },
    },
  });
  const issued = await createOvhKey({ pool: h.server.ctx.pool, secrets: h.server.ctx.secrets, actor: null }, { tenant: 'alice' });
  const key = { applicationKey: issued.key.applicationKey, applicationSecret: issued.applicationSecret, consumerKey: issued.consumerKey };
  goOvh.first = new OvhHttp({ endpoint: `${h.server.url}/ovh/1.0`, ...key });
  goOvh.second = new OvhHttp({ endpoint: `${other.url}/ovh/1.0`, ...key });
});

afterAll(async () => {
  goOvh.first?.close();
  goOvh.second?.close();
  await other?.close();
  await h?.close();
});

type Rec = { id: number; subDomain: string; fieldType: string; target: string; ttl: number };
const list = (on: OvhHttp, query: string) => on.call('GET', `${REC}?${query}`) as Promise<number[]>;
const get = (on: OvhHttp, id: number) => on.call('GET', `${REC}/${id}`) as Promise<Rec>;
const upstream = () => callLines(h.sim).map((l) => l.replace(/\/record\/\d+$/, '/record/ID'));
const published = (sub: string) =>
  h.sim
    .publishedRecords(ZONE)
    .filter((r) => r.subDomain === sub)
    .map((r) => r.target)
    .sort();

describe('stable ids through the served OVH API', () => {
  it('the id a POST answered is the id listed, got, put and deleted: after one refresh, two, and on another replica', async () => {
    const created = (await goOvh.first.call('POST', REC, { fieldType: 'A', subDomain: 'app', target: '192.0.2.10', ttl: 300 })) as Rec;
    expect(created.id).toBeGreaterThanOrEqual(4_000_000_000_000_001);
    await goOvh.first.call('POST', REFRESH);
    const ovhId = h.sim.publishedRecords(ZONE).find((r) => r.subDomain === 'app')!.id;
    expect(String(ovhId)).not.toBe(String(created.id));
    for (const on of [goOvh.first, goOvh.second]) {
      expect(await list(on, 'fieldType=A&subDomain=app')).toEqual([created.id]);
      expect(await get(on, created.id)).toMatchObject({ id: created.id, target: '192.0.2.10' });
    }
    // One id per record: the OVH id behind it names nothing here.
    await expect(goOvh.first.call('GET', `${REC}/${ovhId}`)).rejects.toThrow(/: 404 /);

    // A second write and refresh, through the other replica: the same id.
    await goOvh.second.call('PUT', `${REC}/${created.id}`, { target: '192.0.2.11' });
    await goOvh.second.call('POST', REFRESH);
    expect(published('app')).toEqual(['192.0.2.11']);
    for (const on of [goOvh.first, goOvh.second]) {
      expect(await list(on, 'fieldType=A&subDomain=app')).toEqual([created.id]);
      expect(await get(on, created.id)).toMatchObject({ id: created.id, target: '192.0.2.11' });
    }

    // Moved to another name: OVH gets a new record (its set deleted, another created); the tool keeps its id.
    h.sim.clearCalls();
    await goOvh.first.call('PUT', `${REC}/${created.id}`, { subDomain: 'moved' });
    await goOvh.first.call('POST', REFRESH);
    expect(upstream()).toEqual([`DELETE ${REC}/ID`, `POST ${REC}`, `POST ${REFRESH}`]);
    expect(h.sim.publishedRecords(ZONE).find((r) => r.subDomain === 'moved')!.id).not.toBe(ovhId);
    for (const on of [goOvh.first, goOvh.second]) {
      expect(await list(on, 'fieldType=A&subDomain=moved')).toEqual([created.id]);
      expect(await list(on, 'fieldType=A&subDomain=app')).toEqual([]);
    }

    await goOvh.second.call('DELETE', `${REC}/${created.id}`);
    await goOvh.second.call('POST', REFRESH);
    expect(published('moved')).toEqual([]);
    for (const on of [goOvh.first, goOvh.second]) await expect(get(on, created.id)).rejects.toThrow(/: 404 /);
  });

  it('a record the tenant had before the served API keeps its OVH id, also when a refresh replaces its OVH record', async () => {
    const [id] = await list(goOvh.first, 'subDomain=old');
    const first = h.sim.publishedRecords(ZONE).find((r) => r.subDomain === 'old')!.id;
    expect(String(id)).toBe(String(first));
    await goOvh.first.call('PUT', `${REC}/${id}`, { subDomain: 'renamed' });
    await goOvh.first.call('POST', REFRESH);
    expect(String(h.sim.publishedRecords(ZONE).find((r) => r.subDomain === 'renamed')!.id)).not.toBe(String(first));
    for (const on of [goOvh.first, goOvh.second]) expect(await list(on, 'subDomain=renamed')).toEqual([id]);
    await goOvh.second.call('DELETE', `${REC}/${id}`);
    await goOvh.second.call('POST', REFRESH);
    expect(published('renamed')).toEqual([]);
  });

  it('a refresh is planned under the zone lock: an apply of the same tenant landing while it waits is kept', async () => {
    await goOvh.first.call('POST', REC, { fieldType: 'A', subDomain: 'race', target: '192.0.2.1', ttl: 300 });
    await goOvh.first.call('POST', REFRESH);
    await goOvh.first.call('POST', REC, { fieldType: 'A', subDomain: 'race', target: '192.0.2.2', ttl: 300 });
    // Behind a zone lock the test holds: first the tenant's own Connect apply (it adds .3 to the set),
    // then the refresh (it adds .2). Planned before the lock, the refresh would set the set back to
    // .1 and .2 and drop the .3 the apply before it wrote.
    const outcomes = await queueBehindLock(h.server.ctx, ZONE, [
      () =>
        h.zoneClient(token).apply({
          source: {
            case: 'plan',
            value: {
              policy: Policy.SYNC,
              input: {
                case: 'changes',
                value: {
                  create: [],
                  updateOld: [ep(`race.${ZONE}`, 'A', ['192.0.2.1'])],
                  updateNew: [ep(`race.${ZONE}`, 'A', ['192.0.2.1', '192.0.2.3'])],
                  delete: [],
                },
              },
            },
          },
        }),
      () => goOvh.first.call('POST', REFRESH),
    ]);
    expect(outcomes.map((o) => o.ok)).toEqual([true, true]);
    expect(published('race')).toEqual(['192.0.2.1', '192.0.2.2', '192.0.2.3']);
    const ids = await list(goOvh.second, 'subDomain=race');
    expect((await Promise.all(ids.map((id) => get(goOvh.second, id)))).map((r) => r.target).sort()).toEqual(['192.0.2.1', '192.0.2.2', '192.0.2.3']);
  });
});
