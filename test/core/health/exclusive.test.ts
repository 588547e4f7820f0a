/**
 * Health checks on an EXCLUSIVE record set of several targets (issue 30; migrations/0022): one tenant's
 * `www` A set of three targets (one cluster, three ingress addresses), real HTTP servers on loopback
 * addresses, the OVH simulator over HTTPS. A stopped target is withdrawn after the failures with
 * exactly 1 DELETE + 1 refresh, Records shows it withdrawn to its owner and a Plan of the same desired
 * state has no changes; started again it is restored with 1 POST + 1 refresh. A silent tenant's
 * exclusive set is still left alone ('not-shared'), and a target the owner stops desiring while
 * withdrawn takes its row with it (no POST of it on restore), as does the set's deletion (the cascade).
 */
import { create } from '@bufbuild/protobuf';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApplyStatus, EndpointSchema, Policy, TargetStatus, type Endpoint, type PlanRequest } from '../../../src/gen/dnsplane/v1/zone_pb.js';
import { DEFAULT_HEALTH, HealthChecker, type HealthSettings } from '../../../src/core/health/checker.js';
import { coreWithdrawals } from '../../../src/core/health/mechanism.js';
import { withdrawTargets } from '../../../src/core/withdrawals/withdrawals.js';
import * as store from '../../../src/store/index.js';
import { startHarness, type Harness } from '../../helpers/server.js';
import { callLines } from '../../helpers/expect.js';
import { HealthTargets, lastOfRounds } from '../../helpers/health-targets.js';

const ZONE = 'example.com';
const WWW = `www.${ZONE}`;
const [A, B, C] = ['127.0.0.31', '127.0.0.32', '127.0.0.33'] as const;
let h: Harness;
let c1: string;
const targets = new HealthTargets();

const settings: HealthSettings = { ...DEFAULT_HEALTH, intervalMs: 1000, timeoutMs: 800, leaseMs: 60_000 };
const calls = (): string[] => callLines(h.sim);

const check = () => ({ 'dnsplane/health-check': targets.check() });
const ep = (targets: string[]): Endpoint => create(EndpointSchema, { dnsName: WWW, recordType: 'A', targets, ttl: 60, labels: check() });
const desired = (endpoints: Endpoint[]): PlanRequest =>
  ({ policy: Policy.SYNC, input: { case: 'desired', value: { zones: [ZONE], endpoints } } }) as unknown as PlanRequest;
const apply = async (endpoints: Endpoint[]) => (await h.zoneClient(c1).apply({ source: { case: 'plan', value: desired(endpoints) } })).zones[0]!;
const published = () =>
  h.sim
    .publishedRecords(ZONE)
    .filter((r) => r.subDomain === 'www')
    .map((r) => r.target)
    .sort();
const checker = () => new HealthChecker(h.server.ctx, { settings, withdrawals: coreWithdrawals(h.server.ctx), timer: false, holder: 'replica-1' });
const withdrawn = async () => (await store.listWithdrawals(h.server.ctx.pool, ZONE)).map((w) => `${w.target} ${w.reason}`);

beforeAll(async () => {
  for (const t of [A, B, C]) await targets.start(t);
  h = await startHarness({ zones: { [ZONE]: [] }, env: { DNSPLANE_HEALTH_INTERVAL: 'off' } });
  c1 = await h.tenant('c1', [ZONE]);
  expect((await apply([ep([A, B, C])])).status).toBe(ApplyStatus.APPLIED);
  expect(published()).toEqual([A, B, C]);
  expect((await store.listOwnership(h.server.ctx.pool, ZONE)).map((o) => `${o.target}|${o.shared}`)).toEqual(['|false']);
});

afterAll(async () => {
  await h?.close();
  await targets.stopAll();
});

beforeEach(() => h.sim.clearCalls());

describe('an exclusive set of three targets with a check', () => {
  it('a silent tenant: its exclusive set is left alone (no other target to send anyone to), no OVH call', async () => {
    const out = await withdrawTargets(
      h.server.ctx,
      ZONE,
      [{ name: WWW, type: 'A', target: B, reason: 'silent', detail: 'tenant c1 silent since the test said so' }],
      { force: true },
    );
    expect(out.items.map((i) => `${i.target} ${i.state} ${i.why}`)).toEqual([`${B} kept not-shared`]);
    expect(calls()).toEqual([]);
    expect(await withdrawn()).toEqual([]);
    // The schema says so too (migrations/0022): an exclusive set's row is for health only.
    const [owner] = await store.listOwnership(h.server.ctx.pool, ZONE);
    const row = {
      dnsName: WWW,
      recordType: 'A',
      target: B,
      reason: 'silent' as const,
      tenantId: owner!.tenantId,
      detail: {},
      subDomain: 'www',
      fieldType: 'A',
      ovhTarget: B,
      ttl: 60,
      journalId: null,
    };
    await expect(store.insertWithdrawals(h.server.ctx.pool, ZONE, [row])).rejects.toThrow(/target_withdrawals_exclusive_health/);
  });

  it(`one target stopped: withdrawn on the ${settings.failures}th failed round, exactly 1 DELETE + 1 refresh`, async () => {
    await targets.stop(B);
    const c = checker();
    for (let i = 1; i < settings.failures; i++) expect((await c.runRound()).withdrawn).toEqual([]);
    expect(calls()).toEqual([]);
    expect((await c.runRound()).withdrawn).toEqual([{ zone: ZONE, name: WWW, target: B }]);
    expect(calls()).toEqual([expect.stringMatching(new RegExp(`^DELETE /domain/zone/${ZONE}/record/\\d+$`)), `POST /domain/zone/${ZONE}/refresh`]);
    expect(published()).toEqual([A, C]);
    expect(await withdrawn()).toEqual([`${B} health`]);
  });

  it('Records shows the owner its three targets, B withdrawn; ListOwnership names it; a Plan of the same desired state has no changes; further rounds call nothing', async () => {
    const mine = (await h.zoneClient(c1).records({ zones: [ZONE] })).zones[0]!.endpoints.find((e) => e.dnsName === WWW)!;
    expect(mine.targets).toEqual([A, B, C]);
    expect(mine.targetStates.filter((s) => s.status === TargetStatus.WITHDRAWN).map((s) => [s.target, s.reason])).toEqual([[B, 'health']]);
    const admin = await h.tenant('admin', [], { admin: true });
    const listed = (await h.adminClient(admin).listOwnership({ zone: ZONE })).entries.filter((e) => e.dnsName === WWW);
    expect(listed.map((e) => [e.target, e.tenant, e.targetState?.target, e.targetState && TargetStatus[e.targetState.status]])).toEqual([
      ['', 'c1', B, 'WITHDRAWN'],
    ]);
    const plan = (await h.zoneClient(c1).plan(desired([ep([A, B, C])]))).plan!.zones[0]!;
    expect([plan.changes, plan.operations]).toEqual([[], []]);
    expect((await apply([ep([A, B, C])])).status).toBe(ApplyStatus.NO_CHANGES);
    await checker().runRound();
    expect(calls()).toEqual([]);
  });

  it(`started again: restored after ${settings.successes} passing rounds with exactly 1 POST + 1 refresh`, async () => {
    await targets.start(B);
    expect((await lastOfRounds(checker(), settings.successes, 'restored', calls)).restored).toEqual([{ zone: ZONE, name: WWW, target: B }]);
    expect(calls()).toEqual([`POST /domain/zone/${ZONE}/record`, `POST /domain/zone/${ZONE}/refresh`]);
    expect(h.sim.writes()[0]!.body).toEqual({ fieldType: 'A', subDomain: 'www', target: B, ttl: 60 });
    expect(published()).toEqual([A, B, C]);
    expect(await withdrawn()).toEqual([]);
  });

  it('withdrawn, then no longer desired: its row goes with no OVH call, and nothing is posted back', async () => {
    await targets.stop(C);
    const c = checker();
    for (let i = 0; i < settings.failures; i++) await c.runRound();
    expect(await withdrawn()).toEqual([`${C} health`]);
    h.sim.clearCalls();
    expect((await apply([ep([A, B])])).status).toBe(ApplyStatus.APPLIED);
    expect(calls()).toEqual([]);
    expect(await withdrawn()).toEqual([]);
    await targets.start(C);
    for (let i = 0; i < settings.successes + 1; i++) expect((await c.runRound()).restored).toEqual([]);
    expect(calls()).toEqual([]);
    expect(published()).toEqual([A, B]);
  });

  it("withdrawn, then the set deleted: its ownership row takes the withdrawal row with it (the foreign key's cascade)", async () => {
    await targets.stop(B);
    await apply([ep([A, B, C])]);
    const c = checker();
    for (let i = 0; i < settings.failures; i++) await c.runRound();
    expect(await withdrawn()).toEqual([`${B} health`]);
    expect((await store.listWithdrawals(h.server.ctx.pool, ZONE)).length).toBe(1);
    expect((await apply([])).status).toBe(ApplyStatus.APPLIED);
    expect(published()).toEqual([]);
    expect(await withdrawn()).toEqual([]);
    expect(await store.listOwnership(h.server.ctx.pool, ZONE)).toEqual([]);
  });
});
