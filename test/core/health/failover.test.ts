/**
 * Failover by health checks, end to end (issue 30): a shared `www` A set of two tenants, each with a
 * check, whose targets are real HTTP servers on loopback addresses (127.0.0.2, 127.0.0.3, one port);
 * the OVH simulator over HTTPS as OVH, its two name servers asked over DNS. Rounds are run on demand
 * (HealthChecker.runRound, no timer, no sleeps): a stopped target is withdrawn after
 * DNSPLANE_HEALTH_FAILURES failed rounds with exactly one DELETE and one refresh, and the name servers
 * answer only the live target; started again it comes back after DNSPLANE_HEALTH_SUCCESSES with one
 * POST and one refresh; both down, nothing is withdrawn and the all-down metric is set; two replicas
 * on one database check a set one at a time and the survivor takes it over within one lease.
 */
import { create } from '@bufbuild/protobuf';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApplyStatus, EndpointSchema, Policy, TargetStatus, type Endpoint, type PlanRequest } from '../../../src/gen/dnsplane/v1/zone_pb.js';
import { DEFAULT_HEALTH, HealthChecker, type HealthSettings } from '../../../src/core/health/checker.js';
import { coreWithdrawals } from '../../../src/core/health/mechanism.js';
import { query } from '../../../src/dnsclient/index.js';
import { TYPE } from '../../../src/dns/wire/index.js';
import * as store from '../../../src/store/index.js';
import { startServerOn } from '../../helpers/sim-server.js';
import { startHarness, type Harness } from '../../helpers/server.js';
import { callLines } from '../../helpers/expect.js';
import { HealthTargets, lastOfRounds } from '../../helpers/health-targets.js';
import { seriesValue } from '../../helpers/prometheus.js';
import { until } from '../../helpers/until.js';

const ZONE = 'example.com';
const WWW = `www.${ZONE}`;
const A = '127.0.0.2';
const B = '127.0.0.3';
let h: Harness;
let c1: string;
let c2: string;
const targets = new HealthTargets();

const settings: HealthSettings = { ...DEFAULT_HEALTH, intervalMs: 1000, timeoutMs: 800, leaseMs: 60_000 };
const calls = (): string[] => callLines(h.sim);

const ep = (targets: string[], labels: Record<string, string>): Endpoint => create(EndpointSchema, { dnsName: WWW, recordType: 'A', targets, ttl: 60, labels });
const desired = (endpoints: Endpoint[]): PlanRequest =>
  ({ policy: Policy.SYNC, input: { case: 'desired', value: { zones: [ZONE], endpoints } } }) as unknown as PlanRequest;
const apply = async (token: string, endpoints: Endpoint[]) =>
  (await h.zoneClient(token).apply({ source: { case: 'plan', value: desired(endpoints) } })).zones[0]!;

/** What each of the simulator's name servers answers for www A. */
async function answered(): Promise<string[][]> {
  return Promise.all(
    h.sim.dnsServers.map(async (s) => {
      const a = await query({ host: s.host, port: s.port }, { name: WWW, type: TYPE.A }, { timeoutMs: 2000 });
      return a.answers.map((r) => (r.data?.kind === 'A' ? r.data.address : '?')).sort();
    }),
  );
}

function checker(holder: string, ctx = h.server.ctx, leaseMs = settings.leaseMs): HealthChecker {
  return new HealthChecker(ctx, { settings: { ...settings, leaseMs }, withdrawals: coreWithdrawals(ctx), timer: false, holder });
}

const published = () =>
  h.sim
    .publishedRecords(ZONE)
    .filter((r) => r.subDomain === 'www')
    .map((r) => r.target)
    .sort();
const metric = async (name: string, labels: Record<string, string>) => seriesValue(await h.server.metrics.registry.metrics(), name, labels);

beforeAll(async () => {
  await targets.start(A);
  await targets.start(B);
  h = await startHarness({ zones: { [ZONE]: [] }, env: { DNSPLANE_HEALTH_INTERVAL: 'off' } });
  c1 = await h.tenant('c1', [ZONE]);
  c2 = await h.tenant('c2', [ZONE]);
  const check = { 'dnsplane/health-check': targets.check() };
  expect((await apply(c1, [ep([A], { 'dnsplane/shared': 'true', ...check })])).status).toBe(ApplyStatus.APPLIED);
  expect((await apply(c2, [ep([B], check)])).status).toBe(ApplyStatus.APPLIED);
  expect(published()).toEqual([A, B]);
});

afterAll(async () => {
  await h?.close();
  await targets.stopAll();
});

beforeEach(() => h.sim.clearCalls());

describe('one target dies, then comes back', () => {
  const r1 = () => checker('replica-1');

  it('healthy targets: checked (Host = the record name), nothing withdrawn, no OVH call', async () => {
    const report = await r1().runRound();
    expect(report).toMatchObject({ sets: 1, checks: 2, withdrawn: [], restored: [], allDown: [] });
    expect(targets.hits.get(A)?.at(-1)).toBe(`${WWW} /healthz`);
    expect(calls()).toEqual([]);
    expect(await metric('dnsplane_target_health', { zone: ZONE, name: WWW, target: A })).toBe(1);
  });

  it(`stopped: failing for ${settings.failures - 1} rounds (no call), withdrawn on the ${settings.failures}th: exactly 1 DELETE + 1 refresh; the name servers answer only the live target`, async () => {
    await targets.stop(A);
    const c = r1();
    for (let i = 1; i < settings.failures; i++) {
      const report = await c.runRound();
      expect(report.withdrawn).toEqual([]);
    }
    expect(calls()).toEqual([]);
    const rows = await store.listTargetHealth(h.server.ctx.pool, ZONE);
    expect(rows.map((r) => `${r.target} ${r.state} ${r.failures}`)).toEqual([`${A} failing ${settings.failures - 1}`, `${B} healthy 0`]);
    const report = await c.runRound();
    expect(report.withdrawn).toEqual([{ zone: ZONE, name: WWW, target: A }]);
    expect(calls()).toEqual([expect.stringMatching(new RegExp(`^DELETE /domain/zone/${ZONE}/record/\\d+$`)), `POST /domain/zone/${ZONE}/refresh`]);
    expect(published()).toEqual([B]);
    expect(
      await until('the name servers answer only the live target', async () => {
        const a = await answered();
        return a.every((one) => one.join() === B) && a;
      }),
    ).toEqual([[B], [B]]);
    expect(await metric('dnsplane_target_health', { zone: ZONE, name: WWW, target: A })).toBe(0);
    // The journal names the reason and the check's last answers.
    const w = (await store.listWithdrawals(h.server.ctx.pool, ZONE)).map((r) => [r.target, r.reason, r.detail.detail]);
    expect(w).toEqual([
      [
        A,
        'health',
        expect.stringMatching(new RegExp(`health check http://${A.replace(/\./g, '\\.')}:${targets.port}/healthz fails: last answers .*ECONNREFUSED`)),
      ],
    ]);
  });

  it('Records shows each owner its target with its state (c1: withdrawn for health; c2: healthy); c1 still desiring it plans nothing; a further failing round calls nothing', async () => {
    const own = async (token: string) => (await h.zoneClient(token).records({ zones: [ZONE] })).zones[0]!.endpoints.find((e) => e.dnsName === WWW)!;
    const mine = await own(c1);
    expect(mine.targets).toEqual([A]);
    expect(mine.targetStates.map((s) => [s.target, TargetStatus[s.status], s.reason])).toEqual([[A, 'WITHDRAWN', 'health']]);
    expect((await own(c2)).targetStates.map((s) => [s.target, TargetStatus[s.status], s.reason, s.detail])).toEqual([
      [B, 'HEALTHY', 'health', expect.stringMatching(/^passes: 200/)],
    ]);
    // ListOwnership: each row's check and its target's state.
    const admin = await h.tenant('admin', [], { admin: true });
    const listed = await h.adminClient(admin).listOwnership({ zone: ZONE });
    expect(
      listed.entries.filter((e) => e.dnsName === WWW).map((e) => [e.target, e.tenant, e.healthCheck, e.targetState && TargetStatus[e.targetState.status]]),
    ).toEqual([
      [A, 'c1', targets.check(), 'WITHDRAWN'],
      [B, 'c2', targets.check(), 'HEALTHY'],
    ]);
    expect((await apply(c1, [ep([A], { 'dnsplane/health-check': targets.check() })])).status).toBe(ApplyStatus.NO_CHANGES);
    await r1().runRound();
    expect(calls()).toEqual([]);
  });

  it(`started again: restored after ${settings.successes} passing rounds with exactly 1 POST + 1 refresh`, async () => {
    await targets.start(A);
    expect((await lastOfRounds(r1(), settings.successes, 'restored', calls)).restored).toEqual([{ zone: ZONE, name: WWW, target: A }]);
    expect(calls()).toEqual([`POST /domain/zone/${ZONE}/record`, `POST /domain/zone/${ZONE}/refresh`]);
    expect(h.sim.writes()[0]!.body).toEqual({ fieldType: 'A', subDomain: 'www', target: A, ttl: 60 });
    expect(published()).toEqual([A, B]);
    expect(await until('both answered again', async () => (await answered()).every((one) => one.join() === `${A},${B}`))).toBe(true);
  });
});

describe('both targets down: fail open', () => {
  it('nothing is withdrawn, no OVH call, the all-down metric is set; back up, it clears', async () => {
    await targets.stop(A);
    await targets.stop(B);
    const c = checker('replica-1');
    for (let i = 0; i < settings.failures + 1; i++) {
      const report = await c.runRound();
      expect(report.withdrawn).toEqual([]);
      expect(report.allDown).toEqual([{ zone: ZONE, name: WWW }]);
    }
    expect(calls()).toEqual([]);
    expect(published()).toEqual([A, B]);
    expect(await metric('dnsplane_target_set_all_down', { zone: ZONE, name: WWW })).toBe(1);
    await targets.start(A);
    await targets.start(B);
    await c.runRound();
    expect(await metric('dnsplane_target_set_all_down', { zone: ZONE, name: WWW })).toBe(0);
    expect(calls()).toEqual([]);
  });
});

describe('two replicas on one database', () => {
  it('one checks the set at a time; when it dies, the other takes the set over within one lease', async () => {
    const second = await startServerOn(h.sim, h.databaseUrl, { DNSPLANE_HEALTH_INTERVAL: 'off', DNSPLANE_WEBHOOK_LISTEN: 'off' });
    h.sim.clearCalls(); // its start read the zone list
    try {
      const leaseMs = 3000;
      const one = checker('replica-a', h.server.ctx, leaseMs);
      const two = checker('replica-b', second.ctx, leaseMs);
      // The set's lease left by the tests above is released first (they were clean stops of no one).
      await store.releaseCheckedSets(h.server.ctx.pool, 'replica-1');
      expect((await one.runRound()).sets).toBe(1);
      expect((await two.runRound()).sets).toBe(0);
      expect((await one.runRound()).sets).toBe(1);
      expect((await store.listHealthLeases(h.server.ctx.pool)).map((l) => l.holder)).toEqual(['replica-a']);
      // replica-a dies: no release, its lease just stops being renewed.
      await one.stop({ release: false });
      const died = Date.now();
      await until('replica-b takes the set over', async () => (await two.runRound()).sets === 1, 30_000);
      const took = Date.now() - died;
      expect(took).toBeLessThanOrEqual(leaseMs + 2 * settings.intervalMs);
      expect((await store.listHealthLeases(h.server.ctx.pool)).map((l) => l.holder)).toEqual(['replica-b']);
      expect(calls()).toEqual([]);
    } finally {
      await second.close();
    }
  });
});
