/**
 * Waiting for a change to be visible (docs/propagation.md): ZoneService.Apply with wait WAIT_VISIBLE,
 * GetApply, NsmService.PublishDomain, the webhook (which does not wait), and what a bad wait is
 * answered. Real server and prober, real Postgres, the OVH simulator, whose two authoritative servers
 * publish each refresh after a lag the test sets exactly (or hold it until released); the times are
 * checked against the simulator's own log of when each server started answering.
 */
import { durationFromMs, timestampMs, type Timestamp } from '@bufbuild/protobuf/wkt';
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { NsmService } from '../../src/gen/dnsplane/v1/nsm_pb.js';
import { VisibilityState, Wait, type Visibility } from '../../src/gen/dnsplane/v1/visibility_pb.js';
import { ApplyStatus, Policy, type Endpoint } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { callLines, ep, expectRejected } from '../helpers/expect.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { until } from '../helpers/until.js';

const ZONE = 'wait.test';
let h: Harness;
let alice: string;
let bob: string;
let admin: string;

const upsert = (endpoints: Endpoint[]) => ({
  source: { case: 'plan' as const, value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired' as const, value: { zones: [], endpoints } } } },
});

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [] } });
  alice = await h.tenant('alice', [ZONE], { suffixes: [`a.${ZONE}`] });
  bob = await h.tenant('bob', [ZONE], { suffixes: [`b.${ZONE}`] });
  admin = await h.tenant('admin', [], { admin: true });
});

afterAll(async () => {
  await h?.close();
});

describe('Apply and GetApply', () => {
  it('without a wait: the journal id of the publish, no visibility; GetApply answers it published', async () => {
    const res = await h.zoneClient(alice).apply(upsert([ep(`www.a.${ZONE}`, 'A', ['192.0.2.1'])]));
    const z = res.zones[0]!;
    expect(z.status).toBe(ApplyStatus.APPLIED);
    expect(z.journalId).toMatch(/^[1-9][0-9]*$/);
    expect(z.visibility).toBeUndefined();
    const got = await h.zoneClient(alice).getApply({ journalId: z.journalId });
    expect(got).toMatchObject({ journalId: z.journalId, zone: ZONE, tenant: 'alice', planId: '', state: 'done', error: '' });
    expect(got.visibility).toMatchObject({ journalId: z.journalId, zone: ZONE });
    expect(got.visibility!.publishedAt).toBeDefined();
    expect(got.visibility!.state).not.toBe(VisibilityState.UNSPECIFIED);
  });

  it('GetApply of a stored plan names the plan', async () => {
    const planned = (
      await h
        .zoneClient(alice)
        .plan({ policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints: [ep(`stored.a.${ZONE}`, 'A', ['192.0.2.3'])] } } })
    ).plan!;
    const res = await h.zoneClient(alice).apply({ source: { case: 'planId', value: planned.id } });
    const z = res.zones[0]!;
    expect(z.status).toBe(ApplyStatus.APPLIED);
    expect(await h.zoneClient(alice).getApply({ journalId: z.journalId })).toMatchObject({ journalId: z.journalId, planId: planned.id, state: 'done' });
  });

  it('nothing to change: no journal id, nothing waited for', async () => {
    await h.zoneClient(alice).apply(upsert([ep(`same.a.${ZONE}`, 'A', ['192.0.2.2'])]));
    const started = Date.now();
    const res = await h
      .zoneClient(alice)
      .apply({ ...upsert([ep(`same.a.${ZONE}`, 'A', ['192.0.2.2'])]), wait: Wait.VISIBLE, waitTimeout: durationFromMs(60_000) });
    expect(res.zones[0]).toMatchObject({ status: ApplyStatus.NO_CHANGES, journalId: '' });
    expect(res.zones[0]!.visibility).toBeUndefined();
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it("GetApply: a tenant's own applies; another tenant's id is not found; an admin sees anyone's", async () => {
    const bobs = (await h.zoneClient(bob).apply(upsert([ep(`x.b.${ZONE}`, 'TXT', ['bob'])]))).zones[0]!.journalId;
    await expectRejected(
      h.zoneClient(alice).getApply({ journalId: bobs }),
      Code.NotFound,
      new RegExp(`^no apply with journal id ${bobs} among tenant "alice"'s$`),
    );
    await expectRejected(h.zoneClient(alice).getApply({ journalId: '999999' }), Code.NotFound, /^no apply with journal id 999999/);
    await expectRejected(h.zoneClient(alice).getApply({ journalId: 'x1' }), Code.InvalidArgument, /^journalId: must be a journal id \(digits\), got "x1"$/);
    expect((await h.zoneClient(admin).getApply({ journalId: bobs })).tenant).toBe('bob');
  });

  it('a bad wait is InvalidArgument naming the field, and nothing is sent', async () => {
    h.sim.clearCalls();
    await expectRejected(
      h.zoneClient(alice).apply({ ...upsert([ep(`bad.a.${ZONE}`, 'A', ['192.0.2.3'])]), waitTimeout: durationFromMs(1000) }),
      Code.InvalidArgument,
      /^waitTimeout: goes with wait WAIT_VISIBLE$/,
    );
    await expectRejected(
      h.zoneClient(alice).apply({ ...upsert([ep(`bad.a.${ZONE}`, 'A', ['192.0.2.3'])]), wait: Wait.VISIBLE, waitTimeout: durationFromMs(2 * 3_600_000) }),
      Code.InvalidArgument,
      /^waitTimeout: must be more than 0 and at most 1 hour \(3600s\), got 7200s$/,
    );
    await expectRejected(
      h.zoneClient(alice).apply({ ...upsert([ep(`bad.a.${ZONE}`, 'A', ['192.0.2.3'])]), wait: 7 as Wait }),
      Code.InvalidArgument,
      /^wait: unknown value 7/,
    );
    expect(callLines(h.sim)).toEqual([]);
  });

  it("ListZones: each zone's latest publishes (at most 5, newest first), as ListJournal has them", async () => {
    for (let i = 0; i < 6; i++) await h.zoneClient(alice).apply(upsert([ep(`n${i}.a.${ZONE}`, 'A', ['192.0.2.9'])]));
    const journal = (await h.adminClient(admin).listJournal({ zone: ZONE, limit: 100 })).entries;
    const published = journal.filter((e) => e.visibility?.publishedAt);
    expect(published.length).toBeGreaterThan(5);
    const zone = (await h.zoneClient(alice).listZones({})).zones.find((z) => z.name === ZONE)!;
    expect(zone.recentPublishes.map((v) => v.journalId)).toEqual(published.slice(0, 5).map((e) => e.id));
    expect(zone.recentPublishes.map((v) => v.publishedAt)).toEqual(published.slice(0, 5).map((e) => e.visibility!.publishedAt));
    // Entries that published nothing (a refusal, an admin action) carry no visibility.
    expect(journal.filter((e) => e.kind !== 'apply').every((e) => e.visibility === undefined)).toBe(true);
  });
});

describe("against the simulator's two authoritative servers", () => {
  const [DNS1, NS1] = ['dns1.sim.test', 'ns1.sim.test'];
  const ms = (t: Timestamp | undefined) => (t ? timestampMs(t) : undefined);
  /** The simulator's name of a server as the visibility names it (host:port, or its name). */
  const simName = (server: string) => h.sim.dnsServers.find((s) => server === `${s.host}:${s.port}` || server === s.name)?.name;
  const serverOf = (v: Visibility, name: string) => v.servers.find((s) => simName(s.server) === name);
  /** When the simulator's server started answering the zone's current serial (its delivery log). */
  const delivered = (name: string) =>
    h.sim.propagation.deliveries().find((d) => d.zone === ZONE && d.server === name && d.serial === h.sim.soaSerial(ZONE))?.at;

  beforeEach(() => {
    h.sim.propagation.release();
    h.sim.propagation.setLag(0);
  });

  it("Apply with WAIT_VISIBLE answers once the slower server answers, with each server's time, never before", async () => {
    h.sim.propagation.setLag(300, DNS1);
    h.sim.propagation.setLag(1500, NS1);
    const res = await h
      .zoneClient(alice)
      .apply({ ...upsert([ep(`lag.a.${ZONE}`, 'A', ['192.0.2.10'])]), wait: Wait.VISIBLE, waitTimeout: durationFromMs(120_000) });
    const answeredAt = Date.now();
    const v = res.zones[0]!.visibility!;
    expect(v.state).toBe(VisibilityState.VISIBLE);
    expect(v.journalId).toBe(res.zones[0]!.journalId);
    const [fast, slow] = [delivered(DNS1)!, delivered(NS1)!];
    expect(slow - fast).toBeGreaterThanOrEqual(1000);
    // Each server seen answering after it started to, the slower one last, and the call answered after that.
    expect(ms(serverOf(v, DNS1)!.firstAnsweredAt)!).toBeGreaterThanOrEqual(fast);
    expect(ms(serverOf(v, NS1)!.firstAnsweredAt)!).toBeGreaterThanOrEqual(slow);
    expect(ms(v.visibleAt)).toBe(ms(serverOf(v, NS1)!.firstAnsweredAt));
    expect(ms(v.publishedAt)!).toBeLessThan(fast);
    expect(answeredAt).toBeGreaterThanOrEqual(ms(v.visibleAt)!);
    expect(v.servers.every((s) => s.behind.length === 0)).toBe(true);
    // GetApply answers the same, later.
    expect((await h.zoneClient(alice).getApply({ journalId: v.journalId })).visibility).toEqual(v);
  });

  it('at its own timeout, the state so far: published, the server that has not published naming the name it is behind on', async () => {
    h.sim.propagation.setLag('never', NS1);
    const started = Date.now();
    const res = await h
      .zoneClient(alice)
      .apply({ ...upsert([ep(`never.a.${ZONE}`, 'A', ['192.0.2.11'])]), wait: Wait.VISIBLE, waitTimeout: durationFromMs(2500) });
    expect(Date.now() - started).toBeGreaterThanOrEqual(2500);
    const v = res.zones[0]!.visibility!;
    expect(v.state).toBe(VisibilityState.PUBLISHED);
    expect(v.visibleAt).toBeUndefined();
    expect(ms(serverOf(v, DNS1)!.firstAnsweredAt)!).toBeGreaterThanOrEqual(delivered(DNS1)!);
    expect(delivered(NS1)).toBeUndefined();
    expect(serverOf(v, NS1)!.firstAnsweredAt).toBeUndefined();
    expect(serverOf(v, NS1)!.behind).toEqual([`never.a.${ZONE} A`]);
    // GetApply says the same of it.
    const got = (await h.zoneClient(alice).getApply({ journalId: v.journalId })).visibility!;
    expect(got.state).toBe(VisibilityState.PUBLISHED);
    expect(got.servers.map((s) => [simName(s.server), ms(s.firstAnsweredAt), s.behind])).toEqual(
      v.servers.map((s) => [simName(s.server), ms(s.firstAnsweredAt), s.behind]),
    );
  });

  it('a client deadline shorter than the wait: answered before the deadline, with the state so far', async () => {
    h.sim.propagation.setLag('never', NS1);
    const res = await h.zoneClient(alice).apply({ ...upsert([ep(`deadline.a.${ZONE}`, 'A', ['192.0.2.12'])]), wait: Wait.VISIBLE }, { timeoutMs: 8000 });
    expect(res.zones[0]!.visibility!.state).toBe(VisibilityState.PUBLISHED);
    expect(serverOf(res.zones[0]!.visibility!, NS1)!.behind).toEqual([`deadline.a.${ZONE} A`]);
  });

  it('GetApply with WAIT_VISIBLE answers once a held server releases the refresh', async () => {
    h.sim.propagation.hold(NS1);
    const journalId = (await h.zoneClient(alice).apply(upsert([ep(`held.a.${ZONE}`, 'TXT', ['held'])]))).zones[0]!.journalId;
    const waiting = h.zoneClient(alice).getApply({ journalId, wait: Wait.VISIBLE, waitTimeout: durationFromMs(120_000) });
    let answered = false;
    void waiting.then(() => (answered = true));
    // dns1 seen answering; the wait still waits for ns1, held.
    await until(
      'dns1 seen answering',
      async () => serverOf((await h.zoneClient(alice).getApply({ journalId })).visibility!, DNS1)?.firstAnsweredAt !== undefined,
    );
    expect(answered).toBe(false);
    h.sim.propagation.release(NS1);
    const v = (await waiting).visibility!;
    expect(v.state).toBe(VisibilityState.VISIBLE);
    expect(ms(v.visibleAt)!).toBeGreaterThanOrEqual(delivered(NS1)!);
  });

  it("PublishDomain with WAIT_VISIBLE answers once the domain's records are on both servers", async () => {
    h.sim.propagation.setLag(800, NS1);
    const nsm = h.client(NsmService, alice);
    const res = await nsm.publishDomain({
      domain: `c1.a.${ZONE}`,
      services: [
        { name: 'registry', port: 5002, addresses: ['192.0.2.20'] },
        { name: 'nsmgr-proxy', port: 5004, addresses: ['192.0.2.21'] },
      ],
      wait: Wait.VISIBLE,
    });
    expect(res.status).toBe(ApplyStatus.APPLIED);
    expect(res.visibility!.state).toBe(VisibilityState.VISIBLE);
    expect(res.visibility!.journalId).toBe(res.journalId);
    expect(ms(res.visibility!.visibleAt)!).toBeGreaterThanOrEqual(delivered(NS1)!);
    // Without a wait: answered at once, published.
    h.sim.propagation.hold(NS1);
    const quick = await nsm.publishDomain({
      domain: `c1.a.${ZONE}`,
      services: [
        { name: 'registry', port: 5002, addresses: ['192.0.2.22'] },
        { name: 'nsmgr-proxy', port: 5004, addresses: ['192.0.2.21'] },
      ],
    });
    expect(quick.visibility).toBeUndefined();
    expect((await h.zoneClient(alice).getApply({ journalId: quick.journalId })).visibility!.state).toBe(VisibilityState.PUBLISHED);
  });

  it('the external-dns webhook does not wait: it answers while neither server has the change', async () => {
    h.sim.propagation.hold();
    const basic = `Basic ${Buffer.from(`alice:${alice}`).toString('base64')}`;
    const res = await fetch(`${h.webhookUrl}/records`, {
      method: 'POST',
      headers: { authorization: basic, 'content-type': 'application/external.dns.webhook+json;version=1' },
      body: JSON.stringify({ create: [{ dnsName: `hook.a.${ZONE}`, targets: ['192.0.2.30'], recordType: 'A' }] }),
    });
    expect(res.status).toBe(204);
    const entry = (await h.adminClient(admin).listJournal({ zone: ZONE, limit: 1 })).entries[0]!;
    expect([entry.tenant, entry.kind, entry.state]).toEqual(['alice', 'apply', 'done']);
    expect(entry.visibility!.state).toBe(VisibilityState.PUBLISHED);
    expect(delivered(DNS1)).toBeUndefined();
    expect(delivered(NS1)).toBeUndefined();
  });
});

describe('a wait longer than DNSPLANE_REQUEST_TIMEOUT (which bounds sending the request, not the answer)', () => {
  let s: Harness;
  let token: string;
  beforeAll(async () => {
    s = await startHarness({ zones: { [ZONE]: [] }, env: { DNSPLANE_REQUEST_TIMEOUT: '1s', DNSPLANE_HEADERS_TIMEOUT: '1s' } });
    token = await s.tenant('alice', [ZONE]);
  });
  afterAll(async () => {
    await s?.close();
  });

  it.each(['connect', 'grpc'] as const)('is answered over %s, with the state at its end', async (transport) => {
    s.sim.propagation.setLag('never', 'ns1.sim.test');
    const res = await s
      .zoneClient(token, transport)
      .apply({ ...upsert([ep(`long-${transport}.${ZONE}`, 'A', ['192.0.2.13'])]), wait: Wait.VISIBLE, waitTimeout: durationFromMs(3000) });
    expect(res.zones[0]!.visibility!.state).toBe(VisibilityState.PUBLISHED);
  });
});
