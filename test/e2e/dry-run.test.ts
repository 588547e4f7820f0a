/**
 * DNSPLANE_DRY_RUN=true: plans and applies run, the OVH calls an apply would make are logged and
 * returned (status 0, marked not sent), and none is sent: the simulator logs zero writes and the
 * cache does not move. Two real servers share one Postgres and one simulator: `live` (normal) sets the
 * zone up, `dry` (dry-run) is the one under test; then `live` applies the very plan `dry` showed, and
 * OVH receives exactly the calls the dry run listed.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { NOT_SENT, recoverAll } from '../../src/core/apply/index.js';
import { createTenant } from '../../src/core/tenants/tenants.js';
import { ApplyStatus, Policy } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { OvhSimulator } from '../../src/ovhsim/index.js';
import type { Server } from '../../src/server/server.js';
import * as store from '../../src/store/index.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';
import { memoryLogger, startServerOn, zoneClientFor } from '../helpers/sim-server.js';
import { callLines, ep } from '../helpers/expect.js';

const ZONE = 'example.com';
let sim: OvhSimulator;
let db: TestDatabase;
let live: Server;
let dry: Server;
let token: string;
const dryLog = memoryLogger();

const calls = (): string[] => callLines(sim);

function idOf(subDomain: string, target: string): string {
  return sim.draftRecords(ZONE).find((r) => r.subDomain === subDomain && r.target === target)!.id;
}

const desired = () => [ep(`www.${ZONE}`, 'A', ['192.0.2.1', '192.0.2.2', '192.0.2.9']), ep(`new.${ZONE}`, 'A', ['192.0.2.5'])];

beforeAll(async () => {
  sim = await OvhSimulator.start({ zones: { [ZONE]: [{ subDomain: 'manual', fieldType: 'A', target: '192.0.2.200', ttl: 600 }] } });
  db = await testDatabase();
  live = await startServerOn(sim, db.url);
  dry = await startServerOn(sim, db.url, { DNSPLANE_DRY_RUN: 'true' }, dryLog.log);
  token = (await createTenant(live.ctx.pool, { name: 'alice', zones: [ZONE] })).token;
  const res = await zoneClientFor(live, token).apply({
    source: {
      case: 'plan',
      value: {
        policy: Policy.SYNC,
        input: {
          case: 'desired',
          value: { zones: [], endpoints: [ep(`www.${ZONE}`, 'A', ['192.0.2.1', '192.0.2.2', '192.0.2.3']), ep(`gone.${ZONE}`, 'TXT', ['bye'])] },
        },
      },
    },
  });
  expect(ApplyStatus[res.zones[0]!.status]).toBe('APPLIED');
});

afterAll(async () => {
  await dry?.close();
  await live?.close();
  await sim?.stop();
  await db?.drop();
});

beforeEach(() => sim.clearCalls());

describe('DNSPLANE_DRY_RUN=true', () => {
  let planId: string;
  let expected: Array<{ method: string; path: string; body: string }>;

  it('plans as usual: the plan shows the calls an apply would make', async () => {
    const res = await zoneClientFor(dry, token).plan({ policy: Policy.SYNC, input: { case: 'desired', value: { zones: [], endpoints: desired() } } });
    planId = res.plan!.id;
    expected = [
      { method: 'DELETE', path: `/domain/zone/${ZONE}/record/${idOf('gone', 'bye')}`, body: '' },
      { method: 'PUT', path: `/domain/zone/${ZONE}/record/${idOf('www', '192.0.2.3')}`, body: '{"target":"192.0.2.9","ttl":300}' },
      { method: 'POST', path: `/domain/zone/${ZONE}/record`, body: '{"fieldType":"A","subDomain":"new","target":"192.0.2.5","ttl":300}' },
      { method: 'POST', path: `/domain/zone/${ZONE}/refresh`, body: '' },
    ];
    expect(res.plan!.zones[0]!.operations.map((o) => ({ method: o.method, path: o.path, body: o.body }))).toEqual(expected);
    expect(calls()).toEqual([]);
  });

  it('applying the plan sends nothing: it returns the calls it would have made, marked not sent', async () => {
    const before = (await zoneClientFor(dry, token).records({ zones: [ZONE] })).zones[0]!;
    const res = await zoneClientFor(dry, token).apply({ source: { case: 'planId', value: planId } });
    const z = res.zones[0]!;
    expect(ApplyStatus[z.status]).toBe('DRY_RUN');
    expect(z.calls.map((c) => ({ method: c.method, path: c.path, body: c.body, status: c.status, error: c.error }))).toEqual(
      expected.map((c) => ({ ...c, status: 0, error: NOT_SENT })),
    );
    expect(z.changes).toHaveLength(3);
    expect(sim.writes()).toEqual([]);
    expect(calls()).toEqual([]);

    // The cache did not move.
    const after = (await zoneClientFor(dry, token).records({ zones: [ZONE] })).zones[0]!;
    expect(after.generation).toBe(before.generation);
    expect(z.generation).toBe(before.generation);
    expect(after.endpoints.map((e) => `${e.dnsName} ${e.targets.join(',')}`).sort()).toEqual([`gone.${ZONE} bye`, `www.${ZONE} 192.0.2.1,192.0.2.2,192.0.2.3`]);

    // Logged: every call that was not sent.
    const line = dryLog.lines.find((l) => typeof l['msg'] === 'string' && (l['msg'] as string).startsWith('dry run'));
    expect(line).toMatchObject({
      zone: ZONE,
      tenant: 'alice',
      calls: expected.map((c) => (c.body ? `${c.method} ${c.path} ${c.body}` : `${c.method} ${c.path}`)),
    });
  });

  it('an inline apply (the webhook form) sends nothing either', async () => {
    const res = await zoneClientFor(dry, token).apply({
      source: { case: 'plan', value: { policy: Policy.SYNC, input: { case: 'desired', value: { zones: [], endpoints: desired() } } } },
    });
    expect(ApplyStatus[res.zones[0]!.status]).toBe('DRY_RUN');
    expect(res.zones[0]!.calls.map((c) => `${c.method} ${c.path} ${c.status}`)).toEqual(expected.map((c) => `${c.method} ${c.path} 0`));
    expect(sim.writes()).toEqual([]);
  });

  it('a change set that changes nothing is NO_CHANGES, as without dry-run', async () => {
    const res = await zoneClientFor(dry, token).apply({
      source: {
        case: 'plan',
        value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints: [ep(`gone.${ZONE}`, 'TXT', ['bye'])] } } },
      },
    });
    expect(ApplyStatus[res.zones[0]!.status]).toBe('NO_CHANGES');
    expect(res.zones[0]!.calls).toEqual([]);
  });

  it('/metrics says dry-run is on and counts the calls not sent', async () => {
    const text = await (await fetch(`${dry.url}/metrics`)).text();
    expect(text).toMatch(/^dnsplane_dry_run 1$/m);
    expect(text).toMatch(/^dnsplane_ovh_calls_not_sent_total\{method="PUT",route="\/domain\/zone\/\{zone\}\/record\/\{id\}"\} 2$/m);
    expect(text).toMatch(/^dnsplane_ovh_calls_not_sent_total\{method="POST",route="\/domain\/zone\/\{zone\}\/refresh"\} 2$/m);
    expect(text).toMatch(new RegExp(`^dnsplane_apply_duration_seconds_count\\{zone="${ZONE}",outcome="dry_run"\\} 2$`, 'm'));
  });

  it('DNSPLANE_DRY_RUN takes true/false (and 1/0, yes/no, on/off); anything else is refused by name', () => {
    const base = { OVH_APPLICATION_KEY: 'k', OVH_APPLICATION_SECRET: 's', OVH_CONSUMER_KEY: 'c' };
    expect(loadConfig({ ...base }).dryRun).toBe(false);
    expect(loadConfig({ ...base, DNSPLANE_DRY_RUN: 'TRUE' }).dryRun).toBe(true);
    expect(loadConfig({ ...base, DNSPLANE_DRY_RUN: '0' }).dryRun).toBe(false);
    expect(() => loadConfig({ ...base, DNSPLANE_DRY_RUN: 'maybe' })).toThrow(/DNSPLANE_DRY_RUN.*true or false/);
  });

  it('the plan the dry run showed is still pending: a normal server applies it with exactly the calls listed', async () => {
    const res = await zoneClientFor(live, token).apply({ source: { case: 'planId', value: planId } });
    expect(ApplyStatus[res.zones[0]!.status]).toBe('APPLIED');
    expect(sim.writes().map((w) => ({ method: w.method, path: w.path, body: w.body === undefined ? '' : JSON.stringify(w.body) }))).toEqual(expected);
  });

  it('the OVH client of a dry-run server is read-only: anything but a GET throws before it is sent', async () => {
    await expect(dry.ctx.ovh.createRecord(ZONE, { fieldType: 'A', subDomain: 'x', target: '192.0.2.99', ttl: 0 }, new Set())).rejects.toThrow(/read-only/);
    await expect(dry.ctx.ovh.refresh(ZONE)).rejects.toThrow(/read-only/);
    expect((await dry.ctx.ovh.listRecordIds(ZONE, { subDomain: 'www' })).length).toBe(3);
    expect(sim.writes()).toEqual([]);
  });

  it('an apply that died in flight is left for a live server to roll back: the dry run sends nothing', async () => {
    // A dead apply that got as far as its refresh: rolling it back means publishing the zone again.
    const tenant = (await store.getTenantByName(live.ctx.pool, 'alice'))!;
    const journal = await store.insertIntent(live.ctx.pool, { zone: ZONE, tenantId: tenant.id, intent: { operations: [], ops: [], names: [], before: [] } });
    await store.noteJournalProgress(live.ctx.pool, journal, { stage: 'refresh' });

    const res = await zoneClientFor(dry, token).apply({
      source: {
        case: 'plan',
        value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints: [ep(`other.${ZONE}`, 'A', ['192.0.2.7'])] } } },
      },
    });
    expect(ApplyStatus[res.zones[0]!.status]).toBe('DRY_RUN');
    expect(sim.writes()).toEqual([]);
    expect((await store.listInFlight(live.ctx.pool, ZONE)).map((r) => r.id)).toEqual([journal]);
    expect(dryLog.lines.some((l) => l['msg'] === 'dry run: applies that died in flight are left for a server without DNSPLANE_DRY_RUN to roll back')).toBe(
      true,
    );

    // The live server does it.
    expect(await recoverAll(live.ctx)).toBe(1);
    expect(sim.writes().map((w) => `${w.method} ${w.path}`)).toEqual([`POST /domain/zone/${ZONE}/refresh`]);
    expect(await store.listInFlight(live.ctx.pool, ZONE)).toEqual([]);
  });
});
