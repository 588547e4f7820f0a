/**
 * Coalesced applies (group commit, core/apply/holder.ts): the applies of one zone waiting for its lock in this
 * process are taken by the holder, in arrival order, as one group published by one refresh, each with
 * its own plan, journal row, generation and answer. Each test queues its applies deterministically:
 * the zone lock is held from a connection of the test, the first apply waits for it in Postgres, the
 * next ones in the server's in-process queue, one after the other; then the lock is released.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApplyStatus, Policy, type ApplyResponse, type Endpoint } from '../../src/gen/dnsplane/v1/zone_pb.js';
import * as store from '../../src/store/index.js';
import { queueBehindLock } from '../helpers/core-apply.js';
import { ep, expectConsistent } from '../helpers/expect.js';
import { simZoneCalls } from '../helpers/ovh-api.js';
import { scrape } from '../helpers/prometheus.js';
import { startHarness, type Harness } from '../helpers/server.js';

const ZONE = 'coalesce.test';
const REC = `/domain/zone/${ZONE}/record`;
const REFRESH = `/domain/zone/${ZONE}/refresh`;
const TENANTS = 10;
let h: Harness;
const tokens: string[] = [];

beforeAll(async () => {
  h = await startHarness({
    zones: { [ZONE]: [] },
    // Groups of at most 4 operations; no time bound that a loaded machine could reach.
    env: {
      DNSPLANE_APPLY_BATCH: '4',
      DNSPLANE_APPLY_COALESCE: '10m',
      DNSPLANE_LOCK_TIMEOUT: '5m',
      DNSPLANE_DRIFT_INTERVAL: '0',
      DNSPLANE_MAX_CHANGE_PERCENT: '100',
    },
  });
  for (let i = 0; i < TENANTS; i++) tokens.push(await h.tenant(`t${i}`, [ZONE]));
  await h.zoneClient(tokens[0]).records({ zones: [ZONE] }); // synced before anything queues
});

afterAll(async () => {
  await h?.close();
});

beforeEach(async () => {
  h.sim.faults.clear();
  // Each test starts from an empty zone: every tenant's SYNC of nothing.
  for (const t of tokens)
    await h
      .zoneClient(t)
      .apply({ source: { case: 'plan', value: { policy: Policy.SYNC, input: { case: 'desired', value: { zones: [ZONE], endpoints: [] } } } } });
  h.sim.clearCalls();
});

function create(i: number, ...endpoints: Endpoint[]) {
  return () =>
    h.zoneClient(tokens[i]).apply({
      source: {
        case: 'plan',
        value: { policy: Policy.UPSERT_ONLY, input: { case: 'changes', value: { create: endpoints, updateOld: [], updateNew: [], delete: [] } } },
      },
    });
}

type Answer = { response?: ApplyResponse; error?: ConnectError };

/** The applies, started in this order behind a zone lock the test holds, reach the lock in this order. */
async function queued(starts: Array<() => Promise<ApplyResponse>>, on = h): Promise<Answer[]> {
  return (await queueBehindLock(on.server.ctx, ZONE, starts)).map((o) => (o.ok ? { response: o.value } : { error: ConnectError.from(o.error) }));
}

/** The simulator's calls to the zone: "METHOD path[?query] status", record ids as they are. */
const calls = (): string[] => simZoneCalls(h.sim, ZONE);

/** The subDomain each POST …/record created, in order. */
function created(): string[] {
  return h.sim
    .writes()
    .filter((c) => c.method === 'POST' && c.path === REC)
    .map((c) => (c.body as { subDomain: string }).subDomain);
}

/** dnsplane_apply_group_applies of the zone: how many refreshes (count) published how many applies (sum). */
async function groupMetric(): Promise<{ count: number; sum: number }> {
  const value = await scrape(h.server.url);
  const series = (name: string) => value(name, { zone: ZONE }) ?? 0;
  return { count: series('dnsplane_apply_group_applies_count'), sum: series('dnsplane_apply_group_applies_sum') };
}

async function journal(n: number): Promise<store.JournalEntry[]> {
  return (await store.listJournal(h.server.ctx.pool, { zone: ZONE, limit: n })).reverse();
}

const published = () =>
  h.sim
    .publishedRecords(ZONE)
    .filter((r) => r.fieldType !== 'NS')
    .map((r) => r.subDomain)
    .sort();

describe('applies of one zone waiting for its lock', () => {
  it('ten one-change applies: groups of 4, 4 and 2 operations (DNSPLANE_APPLY_BATCH=4), each published by one refresh; each apply its own journal row, generation and answer', async () => {
    const before = await groupMetric();
    const answers = await queued(Array.from({ length: 10 }, (_, i) => create(i, ep(`c${i}.${ZONE}`, 'A', [`192.0.2.${i + 1}`]))));

    expect(
      h.sim
        .writes()
        .filter((c) => c.path.startsWith(`/domain/zone/${ZONE}`))
        .map((c) => `${c.method} ${c.path}`),
    ).toEqual([
      ...Array(4).fill(`POST ${REC}`),
      `POST ${REFRESH}`,
      ...Array(4).fill(`POST ${REC}`),
      `POST ${REFRESH}`,
      ...Array(2).fill(`POST ${REC}`),
      `POST ${REFRESH}`,
    ]);
    expect(created()).toEqual(Array.from({ length: 10 }, (_, i) => `c${i}`)); // in arrival order

    const zones = answers.map((a) => a.response!.zones[0]!);
    expect(zones.map((z) => ApplyStatus[z.status])).toEqual(Array(10).fill('APPLIED'));
    // Its own generation each, in arrival order; its own calls: its POST and the refresh it shared.
    const gens = zones.map((z) => z.generation);
    expect(gens).toEqual([...gens].sort((a, b) => (a < b ? -1 : 1)));
    expect(new Set(gens).size).toBe(10);
    for (const z of zones) expect(z.calls.map((c) => `${c.method} ${c.path} ${c.status}`)).toEqual([`POST ${REC} 200`, `POST ${REFRESH} 204`]);

    const rows = await journal(10);
    expect(rows.map((r) => r.state)).toEqual(Array(10).fill('done'));
    const groupOf = rows.map((r) => (r.result as { coalesced?: { applies: number; first: string } }).coalesced);
    expect(groupOf.map((c) => c?.applies)).toEqual([4, 4, 4, 4, 4, 4, 4, 4, 2, 2]);
    expect(groupOf.map((c) => c?.first)).toEqual([...Array(4).fill(rows[0]!.id), ...Array(4).fill(rows[4]!.id), ...Array(2).fill(rows[8]!.id)]);

    // The metric: 3 refreshes, 10 applies published.
    const after = await groupMetric();
    expect([after.count - before.count, after.sum - before.sum]).toEqual([3, 10]);

    // Each tenant owns what it created; Records answers the last generation.
    const mine = await h.zoneClient(tokens[7]).records({ zones: [ZONE] });
    expect(mine.zones[0]!.generation).toBe(gens[9]);
    expect(mine.zones[0]!.endpoints.map((e) => `${e.dnsName} ${e.targets.join(',')} ${e.labels['owner']}`)).toEqual([`c7.${ZONE} 192.0.2.8 t7`]);
    await expectConsistent(h.server.ctx.pool, h.sim, ZONE);
  });

  it('an apply whose operation fails is undone alone, inside the group: its neighbours are published by the one refresh', async () => {
    // Apply 2 creates two names; its second creation (the 3rd POST) is refused.
    h.sim.faults.fail({
      method: 'POST',
      path: REC,
      nth: 3,
      effect: { kind: 'status', status: 400, body: { class: 'Client::BadRequest', message: 'refused by the test' } },
    });
    const answers = await queued([
      create(0, ep(`x0.${ZONE}`, 'A', ['192.0.2.10'])),
      create(1, ep(`x1a.${ZONE}`, 'A', ['192.0.2.11']), ep(`x1b.${ZONE}`, 'A', ['192.0.2.12'])),
      create(2, ep(`x2.${ZONE}`, 'A', ['192.0.2.13'])),
      create(3, ep(`x3.${ZONE}`, 'A', ['192.0.2.14'])),
    ]);
    const x1a = h.sim.writes().find((c) => c.method === 'DELETE')!.path;
    expect(calls()).toEqual([
      `POST ${REC} 200`, // x0
      `POST ${REC} 200`, // x1a
      `POST ${REC} 400`, // x1b: refused
      `DELETE ${x1a} 200`, // x1a undone
      `GET ${REC}?fieldType=A&subDomain=x1a 200`, // apply 2's names re-read
      `GET ${REC}?fieldType=A&subDomain=x1b 200`,
      `POST ${REC} 200`, // x2
      `POST ${REC} 200`, // x3
      `POST ${REFRESH} 204`, // one refresh publishes apply 1, 3 and 4
    ]);
    expect(created()).toEqual(['x0', 'x1a', 'x1b', 'x2', 'x3']);

    expect(answers[1]!.error && Code[answers[1]!.error.code]).toBe('FailedPrecondition');
    expect(answers[1]!.error!.rawMessage).toMatch(
      /failed at operation 2 of 2, POST .*x1b.*refused by the test.*the 1 operation\(s\) that had succeeded were undone and nothing was published/,
    );
    for (const i of [0, 2, 3]) expect(ApplyStatus[answers[i]!.response!.zones[0]!.status]).toBe('APPLIED');
    expect(published()).toEqual(['x0', 'x2', 'x3']);

    const rows = await journal(4);
    expect(rows.map((r) => [r.state, (r.result as { coalesced?: { applies: number } }).coalesced?.applies])).toEqual([
      ['done', 3],
      ['failed', undefined],
      ['done', 3],
      ['done', 3],
    ]);
    await expectConsistent(h.server.ctx.pool, h.sim, ZONE);
  });

  it('the refresh fails: every apply of the group is rolled back, newest first, and nothing is published', async () => {
    h.sim.faults.fail({
      method: 'POST',
      path: REFRESH,
      nth: 1,
      effect: { kind: 'status', status: 400, body: { class: 'Client::BadRequest', message: 'refresh refused by the test' } },
    });
    const before = published();
    const genBefore = (await store.getZone(h.server.ctx.pool, ZONE))!.generation;
    const answers = await queued([0, 1, 2].map((i) => create(i, ep(`y${i}.${ZONE}`, 'A', [`192.0.2.${20 + i}`]))));
    // The simulator numbers records in order of creation: y0, y1, y2 are n, n + 1, n + 2.
    const deleted = h.sim
      .writes()
      .filter((c) => c.method === 'DELETE')
      .map((c) => Number(c.path.split('/').pop()));
    const n = Math.min(...deleted);
    const ids = [n, n + 1, n + 2].map((id) => `${REC}/${id}`);
    expect(calls()).toEqual([
      `POST ${REC} 200`,
      `POST ${REC} 200`,
      `POST ${REC} 200`,
      `POST ${REFRESH} 400`,
      `DELETE ${ids[2]} 200`, // the newest apply first
      `GET ${REC}?fieldType=A&subDomain=y2 200`,
      `DELETE ${ids[1]} 200`,
      `GET ${REC}?fieldType=A&subDomain=y1 200`,
      `DELETE ${ids[0]} 200`,
      `GET ${REC}?fieldType=A&subDomain=y0 200`,
    ]);
    for (const a of answers) {
      expect(a.error && Code[a.error.code]).toBe('FailedPrecondition');
      expect(a.error!.rawMessage).toMatch(/failed at the refresh after 1 operation\(s\).*refresh refused by the test.*undone and nothing was published/);
    }
    expect(published()).toEqual(before);
    expect((await journal(3)).map((r) => r.state)).toEqual(['failed', 'failed', 'failed']);
    // One generation per rollback, none for the group's own recordings (taken back with it).
    expect((await store.getZone(h.server.ctx.pool, ZONE))!.generation).toBe(genBefore + 3n);
    await expectConsistent(h.server.ctx.pool, h.sim, ZONE);
  });

  it('an undo that fails stops the group unpublished; the next apply rolls all of it back, newest first', async () => {
    // Apply 3's second creation is refused, and undoing its first creation is refused too.
    h.sim.faults.fail({
      method: 'POST',
      path: REC,
      nth: 4,
      effect: { kind: 'status', status: 400, body: { class: 'Client::BadRequest', message: 'refused by the test' } },
    });
    h.sim.faults.fail({
      method: 'DELETE',
      path: `${REC}/*`,
      nth: 1,
      effect: { kind: 'status', status: 400, body: { class: 'Client::BadRequest', message: 'undo refused by the test' } },
    });
    const before = published();
    const answers = await queued([
      create(0, ep(`z0.${ZONE}`, 'A', ['192.0.2.30'])),
      create(1, ep(`z1.${ZONE}`, 'A', ['192.0.2.31'])),
      create(2, ep(`z2a.${ZONE}`, 'A', ['192.0.2.32']), ep(`z2b.${ZONE}`, 'A', ['192.0.2.33'])),
    ]);
    const idOf = (sub: string) => h.sim.draftRecords(ZONE).find((r) => r.subDomain === sub)!.id;
    const [z0, z1, z2a] = [idOf('z0'), idOf('z1'), idOf('z2a')];
    expect(calls()).toEqual([`POST ${REC} 200`, `POST ${REC} 200`, `POST ${REC} 200`, `POST ${REC} 400`, `DELETE ${REC}/${z2a} 400`]);
    expect(Code[answers[2]!.error!.code]).toBe('Unavailable');
    expect(answers[2]!.error!.rawMessage).toMatch(/undoing the 1 operation\(s\) that had succeeded failed.*journal \d+ stays in flight/);
    for (const i of [0, 1]) {
      expect(Code[answers[i]!.error!.code]).toBe('Unavailable');
      expect(answers[i]!.error!.rawMessage).toMatch(
        /its 1 operation\(s\) were sent, but the group of applies it was coalesced into stopped before its refresh .*nothing of it was published, and the zone's next lock holder rolls them back \(journal \d+\): retry/,
      );
    }
    expect(published()).toEqual(before);
    const rows = await journal(3);
    expect(rows.map((r) => r.state)).toEqual(['in_flight', 'in_flight', 'in_flight']);

    // The next apply rolls the three back, newest first, publishes the undone draft once (one refresh
    // for all the rows of the recovery), then applies.
    h.sim.clearCalls();
    const next = await create(3, ep(`w.${ZONE}`, 'A', ['192.0.2.40']))();
    expect(ApplyStatus[next.zones[0]!.status]).toBe('APPLIED');
    expect(calls()).toEqual([
      `GET ${REC}?fieldType=A&subDomain=z2a 200`, // apply 3 (newest)
      `GET ${REC}/${z2a} 200`,
      `GET ${REC}?fieldType=A&subDomain=z2b 200`,
      `DELETE ${REC}/${z2a} 200`,
      `GET ${REC}?fieldType=A&subDomain=z1 200`, // apply 2
      `GET ${REC}/${z1} 200`,
      `DELETE ${REC}/${z1} 200`,
      `GET ${REC}?fieldType=A&subDomain=z0 200`, // apply 1
      `GET ${REC}/${z0} 200`,
      `DELETE ${REC}/${z0} 200`,
      `POST ${REFRESH} 204`,
      `POST ${REC} 200`, // the next apply itself
      `POST ${REFRESH} 204`,
    ]);
    expect((await journal(4)).map((r) => [r.id, r.state])).toEqual([...rows.map((r) => [r.id, 'recovered']), [expect.any(String), 'done']]);
    expect(published()).toEqual([...before, 'w'].sort());
    await expectConsistent(h.server.ctx.pool, h.sim, ZONE);
  });

  it('each apply is planned on what the ones before it did: ownership, conflicts, stored plans; one touching the same record set begins the next group', async () => {
    const client = (i: number) => h.zoneClient(tokens[i]);
    // Stored before the group: t2 creates p (untouched by the others: still exact after them), t3
    // creates k (which t0 is about to take: no longer the plan it was).
    const planP = await client(2).plan({
      policy: Policy.UPSERT_ONLY,
      input: { case: 'desired', value: { zones: [], endpoints: [ep(`p.${ZONE}`, 'A', ['192.0.2.50'])] } },
    });
    const planK = await client(3).plan({
      policy: Policy.UPSERT_ONLY,
      input: { case: 'desired', value: { zones: [], endpoints: [ep(`k.${ZONE}`, 'A', ['192.0.2.51'])] } },
    });
    h.sim.clearCalls();
    const answers = await queued([
      create(0, ep(`k.${ZONE}`, 'A', ['192.0.2.52'])), // t0 takes k
      () =>
        client(1).apply({
          source: {
            case: 'plan',
            value: {
              policy: Policy.UPSERT_ONLY,
              input: { case: 'desired', value: { zones: [], endpoints: [ep(`k.${ZONE}`, 'A', ['192.0.2.53']), ep(`k1.${ZONE}`, 'A', ['192.0.2.54'])] } },
            },
          },
        }),
      () => client(2).apply({ source: { case: 'planId', value: planP.plan!.id } }),
      () => client(3).apply({ source: { case: 'planId', value: planK.plan!.id } }),
      () =>
        client(0).apply({
          source: {
            case: 'plan',
            value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints: [ep(`k.${ZONE}`, 'A', ['192.0.2.55'])] } } },
          },
        }),
    ]);
    expect(
      h.sim
        .writes()
        .filter((c) => c.path.startsWith(`/domain/zone/${ZONE}`))
        .map((c) => `${c.method} ${c.path.replace(/\d+$/, 'ID')}`),
    ).toEqual([
      `POST ${REC}`, // k (t0)
      `POST ${REC}`, // k1 (t1; k is t0's now: a conflict)
      `POST ${REC}`, // p (t2's stored plan)
      `POST ${REFRESH}`,
      `PUT ${REC}/ID`, // t0 changes k again: the same record set, so the next group
      `POST ${REFRESH}`,
    ]);
    expect(created()).toEqual(['k', 'k1', 'p']);
    const z = answers.map((a) => a.response?.zones[0]);
    expect(ApplyStatus[z[0]!.status]).toBe('APPLIED');
    expect(ApplyStatus[z[1]!.status]).toBe('APPLIED');
    expect(z[1]!.conflicts.map((c) => `${c.endpoint!.dnsName} ${c.owner}`)).toEqual([`k.${ZONE} t0`]);
    expect(ApplyStatus[z[2]!.status]).toBe('APPLIED');
    expect((await store.getPlan(h.server.ctx.pool, planP.plan!.id))?.status).toBe('applied');
    expect(answers[3]!.error && Code[answers[3]!.error.code]).toBe('FailedPrecondition');
    expect(answers[3]!.error!.rawMessage).toMatch(
      /an apply just before it \(coalesced with it\) changed what the plan touches in zone coalesce\.test; nothing was sent, make a new plan/,
    );
    expect(ApplyStatus[z[4]!.status]).toBe('APPLIED');
    expect(h.sim.publishedRecords(ZONE).find((r) => r.subDomain === 'k')!.target).toBe('192.0.2.55');
    await expectConsistent(h.server.ctx.pool, h.sim, ZONE);
  });
});

describe('the time bound (DNSPLANE_APPLY_COALESCE)', () => {
  let short: Harness;
  let token: string;
  beforeAll(async () => {
    // A group takes no more applies once it has run 1 ms: its first apply alone takes longer than that.
    short = await startHarness({ zones: { [ZONE]: [] }, env: { DNSPLANE_APPLY_COALESCE: '1ms', DNSPLANE_LOCK_TIMEOUT: '5m', DNSPLANE_DRIFT_INTERVAL: '0' } });
    token = await short.tenant('solo', [ZONE]);
    await short.zoneClient(token).records({ zones: [ZONE] });
    short.sim.clearCalls();
  });
  afterAll(async () => {
    await short?.close();
  });

  it('a group that has run its time takes no more applies: three queued applies, three refreshes', async () => {
    const apply = (sub: string) => () =>
      short.zoneClient(token).apply({
        source: {
          case: 'plan',
          value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints: [ep(`${sub}.${ZONE}`, 'A', ['192.0.2.60'])] } } },
        },
      });
    const answers = await queued([apply('t0'), apply('t1'), apply('t2')], short);
    expect(answers.map((a) => ApplyStatus[a.response!.zones[0]!.status])).toEqual(['APPLIED', 'APPLIED', 'APPLIED']);
    expect(short.sim.writes().map((c) => `${c.method} ${c.path}`)).toEqual([
      `POST ${REC}`,
      `POST ${REFRESH}`,
      `POST ${REC}`,
      `POST ${REFRESH}`,
      `POST ${REC}`,
      `POST ${REFRESH}`,
    ]);
  });
});
