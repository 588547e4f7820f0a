/**
 * Postgres going away under dnsplane, for real: the session holding a zone lock terminated
 * (pg_terminate_backend) in the middle of a slow apply, with one server and with two servers on the
 * same zone; SIGTERM during a long apply; the database unreachable (a TCP proxy cut in front of it).
 * Each asserts the OVH calls after the cut, that OVH's published zone never holds a half-applied or
 * orphaned set, and that draft == published == cache afterwards.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant } from '../../src/core/tenants/tenants.js';
import { ApplyResponseSchema, ApplyStatus, type Endpoint } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { OvhSimulator, type SimCall, type SimRecord } from '../../src/ovhsim/index.js';
import type { Server } from '../../src/server/server.js';
import * as store from '../../src/store/index.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';
import { ep, expectConsistent, expectRejected } from '../helpers/expect.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { startServerOn, zoneClientFor } from '../helpers/sim-server.js';
import { startServe, type ServeProcess } from '../helpers/serve-process.js';
import { until } from '../helpers/until.js';
import { zoneLocksHeld } from '../helpers/zone-locks.js';
import { applyDesired } from '../helpers/zone-requests.js';

const CUT = 'cut.test';
const TWO = 'two.test';
const TERM = 'term.test';
const DOWN = 'down.test';
const M1 = 'm1.test';
const M2 = 'm2.test';
const ZONES = [CUT, TWO, TERM, DOWN, M1, M2];
const LATENCY = 250;

let sim: OvhSimulator;
let db: TestDatabase;
let token: string;
const servers: Server[] = [];
const procs: ServeProcess[] = [];

// Short OVH timeout: a holder that lost its lock is waited for (its calls can land) up to that + margins.
const ENV = { DNSPLANE_OVH_TIMEOUT: '2s', DNSPLANE_DRIFT_INTERVAL: '0', DNSPLANE_LOCK_TIMEOUT: '60s', DNSPLANE_WEBHOOK_LISTEN: '127.0.0.1:0' };

async function server(databaseUrl = db.url): Promise<Server> {
  const s = await startServerOn(sim, databaseUrl, ENV);
  servers.push(s);
  return s;
}

const content = (r: { subDomain: string; fieldType: string; target: string; ttl: number }) => `${r.subDomain} ${r.fieldType} ${r.target} ${r.ttl}`;
const contents = (rs: SimRecord[]) => rs.map(content).sort();

function many(prefix: string, zone: string, n: number): Endpoint[] {
  return Array.from({ length: n }, (_, i) => ep(`${prefix}${i}.${zone}`, 'A', [`192.0.2.${i + 1}`]));
}

/** pg_terminate_backend of the session holding `zone`'s lock; returns how many were terminated. */
async function terminateLockHolder(zone: string): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(
    `SELECT count(pg_terminate_backend(l.pid))::int AS n FROM pg_locks l
      WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 AND l.classid = $1::oid AND l.objid = hashtext($2)::oid
        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    [store.ZONE_LOCK_NAMESPACE, zone],
  );
  return rows[0]?.n ?? 0;
}

const rec = (zone: string) => `/domain/zone/${zone}/record`;
const isPost = (zone: string) => (c: SimCall) => c.method === 'POST' && c.path === rec(zone);
const refreshes = (zone: string) => sim.calls().filter((c) => c.path === `/domain/zone/${zone}/refresh`);

async function settled<T>(p: Promise<T>): Promise<{ ok: T } | { error: unknown }> {
  return p.then(
    (ok) => ({ ok }),
    (error: unknown) => ({ error }),
  );
}

beforeAll(async () => {
  sim = await OvhSimulator.start({
    zones: Object.fromEntries(ZONES.map((z) => [z, [{ subDomain: 'keep', fieldType: 'A', target: '198.51.100.1', ttl: 600 }]])),
  });
  db = await testDatabase();
  token = (await createTenant(db.pool, { name: 'alice', zones: ZONES })).token;
});

afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill()));
  for (const s of servers) await s.close().catch(() => undefined);
  await sim?.stop();
  await db?.drop();
});

describe('the lock holder is terminated in the middle of an apply', () => {
  it('one server: at most the call in flight lands after the cut, no refresh by the apply; Unavailable says what was sent; the rollback waits for the call, removes it all and publishes the undone draft', async () => {
    const a = await server();
    const client = zoneClientFor(a, token);
    await client.records({ zones: [CUT] }); // synced before the latency
    const publishedBefore = contents(sim.publishedRecords(CUT));
    sim.clearCalls();
    sim.faults.setLatency(LATENCY);
    const pending = settled(applyDesired(client, many('x', CUT, 8)));
    await until('3 creations to reach OVH', () => (sim.calls().filter(isPost(CUT)).length >= 3 ? true : undefined));
    const cutAt = Date.now();
    expect(await terminateLockHolder(CUT)).toBe(1);
    const postsAtCut = sim.calls().filter(isPost(CUT)).length;
    // Someone else publishes the zone meanwhile (a hand refresh in OVH's console): the creations that
    // sat in the draft are now served. The rollback must take them out of the published zone too.
    await until('2 creations in the draft', () => (sim.draftRecords(CUT).filter((r) => r.subDomain.startsWith('x')).length >= 2 ? true : undefined));
    sim.publish(CUT);
    expect(sim.publishedRecords(CUT).filter((r) => r.subDomain.startsWith('x')).length).toBeGreaterThanOrEqual(2);

    const outcome = await pending;
    expect('error' in outcome).toBe(true);
    const e = ConnectError.from((outcome as { error: unknown }).error);
    expect(Code[e.code]).toBe('Unavailable');
    expect(e.rawMessage).toMatch(/zone lock was lost/);
    const m = /after sending (\d+) of 8 operation\(s\)/.exec(e.rawMessage);
    expect(m, e.rawMessage).not.toBeNull();
    expect(e.rawMessage).toMatch(/the refresh was not sent, nothing was published; the zone's next lock holder rolls back what was sent \(journal \d+\)/);

    // The server rolls the apply back itself, once none of its calls can still land.
    const row = (await store.listJournal(db.pool, { zone: CUT, limit: 1 }))[0]!;
    await until(
      'the in-flight apply to be rolled back',
      async () => ((await store.getJournalEntry(db.pool, row.id))?.state === 'recovered' ? true : undefined),
      30_000,
    );
    sim.faults.setLatency(0);

    const posts = sim.calls().filter(isPost(CUT));
    // At most the one call in flight at the cut reached OVH after it; the caller was told of each done one.
    expect(posts.filter((c) => c.at > cutAt).length).toBeLessThanOrEqual(1);
    expect(posts.length).toBeLessThanOrEqual(postsAtCut + 1);
    expect(Number(m![1])).toBeGreaterThanOrEqual(posts.length - 1);
    expect(Number(m![1])).toBeLessThanOrEqual(posts.length);
    // The writes: the creations, then (recovery) one DELETE per record created and one refresh, which
    // publishes the undone draft (the creations sat in OVH's draft, where anyone's refresh could have
    // published them). The apply itself never refreshed.
    const writes = sim.writes().filter((c) => c.path.startsWith(`/domain/zone/${CUT}`));
    expect(writes.map((c) => (c.path.endsWith('/refresh') ? 'refresh' : c.method))).toEqual([
      ...posts.map(() => 'POST'),
      ...posts.map(() => 'DELETE'),
      'refresh',
    ]);
    expect(refreshes(CUT)).toHaveLength(1);
    // The rollback read OVH only after the last creation was answered (it waited for the holder).
    const firstRead = sim.calls().find((c) => c.method === 'GET' && c.path === rec(CUT) && c.at > cutAt)!;
    expect(firstRead.at).toBeGreaterThanOrEqual(posts.at(-1)!.at + LATENCY);

    expect(contents(sim.publishedRecords(CUT))).toEqual(publishedBefore);
    await expectConsistent(db.pool, sim, CUT);
    const recs = await client.records({ zones: [CUT], includeForeign: true });
    expect(recs.zones[0]!.endpoints.filter((x) => x.dnsName.startsWith('x')).map((x) => x.dnsName)).toEqual([]);
    expect(await zoneLocksHeld(db.pool)).toBe(0);

    // And the zone works again: the same apply, retried, goes through.
    sim.clearCalls();
    const again = await applyDesired(client, many('x', CUT, 8));
    expect(ApplyStatus[again.zones[0]!.status]).toBe('APPLIED');
    expect(sim.writes().map((c) => c.method)).toEqual([...Array(8).fill('POST'), 'POST']);
    await expectConsistent(db.pool, sim, CUT);
  }, 120_000);

  it('two servers: B takes the freed lock while A is still sending; B waits for A before rolling it back, then applies; no orphan is ever published', async () => {
    const a = await server();
    const b = await server();
    const ca = zoneClientFor(a, token);
    const cb = zoneClientFor(b, token);
    await ca.records({ zones: [TWO] });
    await cb.records({ zones: [TWO] });
    const publishedBefore = contents(sim.publishedRecords(TWO));
    sim.clearCalls();
    sim.faults.setLatency(LATENCY);
    const pa = settled(applyDesired(ca, many('a', TWO, 10)));
    await until('A to start creating', () => (sim.calls().filter(isPost(TWO)).length >= 1 ? true : undefined));
    const pb = settled(applyDesired(cb, [ep(`b.${TWO}`, 'A', ['203.0.113.7'])])); // waits for the zone lock
    await until('3 of A creations to reach OVH', () => (sim.calls().filter(isPost(TWO)).length >= 3 ? true : undefined));
    const cutAt = Date.now();
    expect(await terminateLockHolder(TWO)).toBe(1);

    const ra = await pa;
    expect('error' in ra).toBe(true);
    expect(Code[ConnectError.from((ra as { error: unknown }).error).code]).toBe('Unavailable');
    const rb = await pb;
    expect('ok' in rb, String((rb as { error?: unknown }).error)).toBe(true);
    expect(ApplyStatus[(rb as { ok: Awaited<ReturnType<typeof applyDesired>> }).ok.zones[0]!.status]).toBe('APPLIED');
    sim.faults.setLatency(0);

    const calls = sim.calls().filter((c) => c.path.startsWith(`/domain/zone/${TWO}`));
    const aPosts = calls.filter((c) => isPost(TWO)(c) && (c.body as { subDomain?: string }).subDomain?.startsWith('a'));
    expect(aPosts.filter((c) => c.at > cutAt).length).toBeLessThanOrEqual(1);
    // B's first look at OVH (the rollback's read of A's names) comes after A's last call was answered.
    const firstRead = calls.find((c) => c.method === 'GET' && c.at > cutAt)!;
    expect(firstRead.at).toBeGreaterThanOrEqual(aPosts.at(-1)!.at + LATENCY);
    // Exactly: A's creations, B's rollback of each and the refresh that publishes the undone draft, B's
    // own creation, B's refresh.
    expect(calls.filter((c) => c.method !== 'GET').map((c) => `${c.method} ${c.path.replace(/\d{6,}$/, 'ID')}`)).toEqual([
      ...aPosts.map(() => `POST ${rec(TWO)}`),
      ...aPosts.map(() => `DELETE ${rec(TWO)}/ID`),
      `POST /domain/zone/${TWO}/refresh`,
      `POST ${rec(TWO)}`,
      `POST /domain/zone/${TWO}/refresh`,
    ]);
    expect(contents(sim.publishedRecords(TWO))).toEqual([...publishedBefore, 'b A 203.0.113.7 300'].sort());
    await expectConsistent(db.pool, sim, TWO);
    const journal = await store.listJournal(db.pool, { zone: TWO, limit: 10 });
    expect(journal.map((j) => j.state).sort()).toEqual(['done', 'recovered']); // B's apply; A's, rolled back
  }, 120_000);
});

describe('SIGTERM during a long apply', () => {
  it('stops sending in time to undo, answers Unavailable, exits within DNSPLANE_SHUTDOWN_TIMEOUT with nothing published', async () => {
    const p = await startServe({ databaseUrl: db.url, sim, zones: [TERM], env: { DNSPLANE_SHUTDOWN_TIMEOUT: '8s', DNSPLANE_OVH_TIMEOUT: '2s' } });
    procs.push(p);
    const client = p.zoneClient(token);
    await client.records({ zones: [TERM] });
    const publishedBefore = contents(sim.publishedRecords(TERM));
    sim.clearCalls();
    sim.faults.setLatency(200);
    const pending = settled(applyDesired(client, many('t', TERM, 60)));
    await until('5 creations to reach OVH', () => (sim.calls().filter(isPost(TERM)).length >= 5 ? true : undefined));
    const termAt = Date.now();
    await p.stop();
    const exitedAfter = Date.now() - termAt;
    sim.faults.setLatency(0);

    const outcome = await pending;
    expect('error' in outcome).toBe(true);
    const e = ConnectError.from((outcome as { error: unknown }).error);
    expect(Code[e.code]).toBe('Unavailable');
    expect(e.rawMessage).toMatch(
      /apply to zone term\.test stopped before operation \d+ of 60, POST .*: dnsplane is shutting down; the (\d+) operation\(s\) that had succeeded were undone and nothing was published/,
    );
    expect(exitedAfter).toBeLessThan(8_000 + 1_000);
    expect(p.output()).not.toMatch(/Cannot use a pool/);

    const writes = sim.writes().filter((c) => c.path.startsWith(`/domain/zone/${TERM}`));
    const posts = writes.filter((c) => c.method === 'POST');
    expect(posts.length).toBeLessThan(60);
    expect(writes.map((c) => c.method)).toEqual([...posts.map(() => 'POST'), ...posts.map(() => 'DELETE')]);
    expect(refreshes(TERM)).toEqual([]);
    expect(Number(/the (\d+) operation\(s\) that had succeeded/.exec(e.rawMessage)![1])).toBe(posts.length);
    const row = (await store.listJournal(db.pool, { zone: TERM, limit: 1 }))[0]!;
    expect(row.state).toBe('failed');
    expect(contents(sim.publishedRecords(TERM))).toEqual(publishedBefore);
    await expectConsistent(db.pool, sim, TERM);
  }, 120_000);
});

describe('the database unreachable', () => {
  let proxy: TcpProxy;
  beforeAll(async () => {
    proxy = await startTcpProxy(db.url);
  });
  afterAll(async () => {
    await proxy?.close();
  });

  it('Records and Apply answer Unavailable, the webhook 503, /readyz 503; all is back within 2 s of the database', async () => {
    const s = await server(proxy.url);
    const client = zoneClientFor(s, token);
    await client.records({ zones: [DOWN] });
    expect((await fetch(`${s.url}/readyz`)).status).toBe(200);
    const basic = `Basic ${Buffer.from(`alice:${token}`).toString('base64')}`;

    proxy.cut();
    sim.clearCalls();
    await expectRejected(client.records({ zones: [DOWN] }), Code.Unavailable, /database unavailable/);
    await expectRejected(applyDesired(client, [ep(`d.${DOWN}`, 'A', ['192.0.2.9'])]), Code.Unavailable, /database|nothing was sent|unavailable/);
    const hook = await fetch(`${s.webhookUrl}/records`, { headers: { authorization: basic, accept: 'application/external.dns.webhook+json;version=1' } });
    expect(hook.status).toBe(503);
    expect(await hook.text()).toMatch(/database unavailable/);
    const ready = await fetch(`${s.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.text()).toMatch(/database unavailable/);
    expect(sim.writes()).toEqual([]);

    proxy.restore();
    const restoredAt = Date.now();
    await until('/readyz to answer 200', async () => ((await fetch(`${s.url}/readyz`)).status === 200 ? true : undefined), 10_000);
    expect(Date.now() - restoredAt).toBeLessThan(2_000);
    const res = await applyDesired(client, [ep(`d.${DOWN}`, 'A', ['192.0.2.9'])]);
    expect(ApplyStatus[res.zones[0]!.status]).toBe('APPLIED');
    await expectConsistent(db.pool, sim, DOWN);
  }, 60_000);
});

describe('a multi-zone apply where one zone fails', () => {
  it('reports every zone: the error carries the whole ApplyResponse, and names the zone that was applied and published', async () => {
    const s = servers[0] ?? (await server());
    const client = zoneClientFor(s, token);
    sim.faults.clear();
    sim.faults.fail({ method: 'POST', path: `/domain/zone/${M2}/refresh`, times: 1, effect: { kind: 'status', status: 400 } });
    const e = await expectRejected(
      applyDesired(client, [ep(`p.${M1}`, 'A', ['192.0.2.1']), ep(`p.${M2}`, 'A', ['192.0.2.2'])]),
      Code.FailedPrecondition,
      /apply to zone m2\.test failed at the refresh/,
    );
    expect(e.rawMessage).toMatch(/other zones: m1\.test: applied \(generation \d+, published\)/);
    const [detail] = e.findDetails(ApplyResponseSchema);
    expect(detail?.zones.map((z) => `${z.zone} ${ApplyStatus[z.status]}`)).toEqual(['m1.test APPLIED', 'm2.test FAILED']);
    expect(detail?.zones[1]?.error).toMatch(/failed at the refresh/);
    expect(sim.publishedRecords(M1).some((r) => r.subDomain === 'p')).toBe(true);
    expect(sim.publishedRecords(M2).some((r) => r.subDomain === 'p')).toBe(false);
    await expectConsistent(db.pool, sim, M1);
    await expectConsistent(db.pool, sim, M2);
  }, 60_000);
});
