/**
 * A silent tenant's targets withdrawn and restored (issue 30; core/withdrawals/liveness.ts, core/withdrawals/withdrawals.ts),
 * end to end: a real server on Postgres, the OVH simulator over HTTPS, its two name servers asked over
 * DNS. A shared `www` A set of two tenants; c2 silent past its withdraw_after (1 s here; the server's
 * check and its last-seen writes every 100 ms) → exactly 1 DELETE + 1 refresh, the name servers answer
 * only c1's target, its exclusive set left alone; c2 calls again → 1 POST + 1 refresh; while its target
 * is still withdrawn (the test holds the zone lock its restore waits for) its Plan of the same desired
 * state, its Records (the target marked withdrawn) and its external-dns through the webhook (a plain
 * target) plan nothing. Never the last: both silent, one
 * target stays. No sleeps: each step waits for its condition (until).
 */
import { Resolver } from 'node:dns/promises';
import { create } from '@bufbuild/protobuf';
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { EndpointSchema, Policy, TargetStatus, type Endpoint, type PlanRequest } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { withdrawSilentTenants } from '../../src/core/withdrawals/liveness.js';
import * as store from '../../src/store/index.js';
import { centralWebhook } from '../helpers/central-webhook.js';
import { callLines } from '../helpers/expect.js';
import { ExternalDns, hasChanges } from '../helpers/external-dns.js';
import { scrape } from '../helpers/prometheus.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { until } from '../helpers/until.js';

const ZONE = 'example.com';
const WWW = `www.${ZONE}`;
const REC = `/domain/zone/${ZONE}/record`;
const REFRESH = `/domain/zone/${ZONE}/refresh`;
let h: Harness;
const tokens: Record<string, string> = {};

const www = (target: string): Endpoint =>
  create(EndpointSchema, { dnsName: WWW, recordType: 'A', targets: [target], ttl: 300, labels: { 'dnsplane/shared': 'true' } });
const solo = create(EndpointSchema, { dnsName: `solo.${ZONE}`, recordType: 'A', targets: ['192.0.2.9'], ttl: 300 });
const desired = (endpoints: Endpoint[]): PlanRequest =>
  ({ policy: Policy.SYNC, input: { case: 'desired', value: { zones: [ZONE], endpoints } } }) as PlanRequest;
const stateOf = (tenant: string) => desired(tenant === 'c1' ? [www('192.0.2.1')] : [www('192.0.2.2'), solo]);

const published = (sub: string) =>
  h.sim
    .publishedRecords(ZONE)
    .filter((r) => r.subDomain === sub && r.fieldType === 'A')
    .map((r) => r.target)
    .sort();
const withdrawn = async () => (await store.listWithdrawals(h.server.ctx.pool, ZONE)).map((w) => `${w.target} ${w.reason} ${w.tenantName}`);

/** What both of the simulator's name servers answer for www. */
async function answered(): Promise<string[][]> {
  return Promise.all(
    h.sim.dnsServers.map(async (s) => {
      const r = new Resolver();
      r.setServers([`${s.host}:${s.port}`]);
      return (await r.resolve4(WWW)).sort();
    }),
  );
}

const setWithdrawAfter = (name: string, ms: number | undefined) =>
  h.adminClient(tokens.admin).setTenantWithdrawAfter({ name, ...(ms ? { withdrawAfter: durationFromMs(ms) } : {}) });

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [] }, env: { DNSPLANE_SILENT_CHECK_INTERVAL: '100ms', DNSPLANE_LAST_SEEN_WRITE: '100ms' } });
  tokens.admin = await h.tenant('admin', [], { admin: true });
  tokens.c1 = await h.tenant('c1', [ZONE]);
  tokens.c2 = await h.tenant('c2', [ZONE]);
  for (const t of ['c1', 'c2']) await h.zoneClient(tokens[t]).apply({ source: { case: 'plan', value: stateOf(t) } });
});

afterAll(async () => {
  await h?.close();
});

beforeEach(async () => {
  for (const t of ['c1', 'c2']) await setWithdrawAfter(t, undefined);
  await until('nothing withdrawn', async () => (await withdrawn()).length === 0 && published('www').length === 2);
  h.sim.clearCalls();
});

describe('a silent tenant', () => {
  it('its shared target withdrawn with 1 DELETE + 1 refresh, its exclusive set left; restored with 1 POST + 1 refresh when it calls again, planning nothing', async () => {
    await setWithdrawAfter('c2', 1000);
    const seen = await h.adminClient(tokens.admin).listTenants({});
    expect(seen.tenants.find((t) => t.name === 'c2')?.withdrawAfter?.seconds).toBe(1n);

    await until('c2 silent: its www target withdrawn', async () => (await withdrawn()).length === 1 && callLines(h.sim).includes(`POST ${REFRESH}`));
    expect(callLines(h.sim)).toEqual([expect.stringMatching(new RegExp(`^DELETE ${REC}/\\d+$`)), `POST ${REFRESH}`]);
    expect(await withdrawn()).toEqual(['192.0.2.2 silent c2']);
    expect(published('www')).toEqual(['192.0.2.1']);
    expect(published('solo')).toEqual(['192.0.2.9']);
    expect(await answered()).toEqual([['192.0.2.1'], ['192.0.2.1']]);
    const journal = await h.adminClient(tokens.admin).listJournal({ zone: ZONE, limit: 1 });
    expect(journal.entries[0]?.summary).toMatch(/tenant c2 silent since \d{4}-/);

    // Shown to its owner as its own, marked withdrawn (seen by the admin, whose calls are not c2's).
    const all = await h.zoneClient(tokens.admin).records({ zones: [ZONE], includeForeign: true });
    const mine = all.zones[0]!.endpoints.find((e) => e.dnsName === WWW && e.labels['owner'] === 'c2')!;
    expect(mine.targets).toEqual(['192.0.2.2']);
    expect(mine.targetStates.map((s) => [s.target, TargetStatus[s.status], s.reason])).toEqual([['192.0.2.2', 'WITHDRAWN', 'silent']]);
    expect(mine.targetStates[0]!.detail).toMatch(/tenant c2 silent since/);
    const owned = await h.adminClient(tokens.admin).listOwnership({ zone: ZONE });
    expect(
      owned.entries.filter((e) => e.dnsName === WWW).map((e) => `${e.target} ${e.tenant} ${e.targetState ? TargetStatus[e.targetState.status] : '-'}`),
    ).toEqual(['192.0.2.1 c1 -', '192.0.2.2 c2 WITHDRAWN']);
    const m = await scrape(h.server.url);
    expect(m('dnsplane_target_withdrawals_total', { reason: 'silent' })).toBeGreaterThanOrEqual(1);
    expect(m('dnsplane_tenant_last_seen_seconds', { tenant: 'c2' })).toBeGreaterThanOrEqual(1);

    // c2 calls again, while the test holds the zone's lock (the restore its call starts waits for it):
    // its plan of the same desired state changes nothing, its Records shows its target marked
    // withdrawn, and its external-dns (the webhook) sees a plain target and plans nothing.
    h.sim.clearCalls();
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let held!: () => void;
    const holding = new Promise<void>((r) => (held = r));
    const lock = store.withZoneLock(h.server.ctx.pool, ZONE, { lockTimeoutMs: 60_000 }, async () => {
      held();
      await released;
    });
    await holding;
    try {
      const plan = await h.zoneClient(tokens.c2).plan(stateOf('c2'));
      expect(plan.plan!.zones.flatMap((z) => z.changes)).toEqual([]);
      const own = await h.zoneClient(tokens.c2).records({ zones: [ZONE] });
      const mineNow = own.zones[0]!.endpoints.find((e) => e.dnsName === WWW)!;
      expect(mineNow.targets).toEqual(['192.0.2.2']);
      expect(mineNow.targetStates.map((t) => TargetStatus[t.status])).toEqual(['WITHDRAWN']);
      const wh = await centralWebhook(h);
      try {
        const extdns = new ExternalDns(wh.url('c2', tokens.c2!));
        await extdns.negotiate();
        const current = await extdns.records();
        expect(current.find((e) => e.dnsName === WWW)).toEqual({
          dnsName: WWW,
          targets: ['192.0.2.2'],
          recordType: 'A',
          recordTTL: 300,
          labels: { 'dnsplane/shared': 'true' },
        });
        const changes = await extdns.runOnce([
          { dnsName: WWW, targets: ['192.0.2.2'], recordType: 'A', recordTTL: 300, labels: { 'dnsplane/shared': 'true' } },
          { dnsName: `solo.${ZONE}`, targets: ['192.0.2.9'], recordType: 'A', recordTTL: 300 },
        ]);
        expect(hasChanges(changes)).toBe(false);
      } finally {
        await wh.close();
      }
      expect(callLines(h.sim)).toEqual([]);
    } finally {
      release();
      await lock;
    }
    await until('c2 back: its target restored', async () => (await withdrawn()).length === 0 && callLines(h.sim).includes(`POST ${REFRESH}`));
    expect(callLines(h.sim)).toEqual([`POST ${REC}`, `POST ${REFRESH}`]);
    expect(await answered()).toEqual([
      ['192.0.2.1', '192.0.2.2'],
      ['192.0.2.1', '192.0.2.2'],
    ]);
    const after = await h.zoneClient(tokens.c2).records({ zones: [ZONE] });
    expect(after.zones[0]!.endpoints.find((e) => e.dnsName === WWW)!.targetStates).toEqual([]);
  });

  it('never the last: both tenants silent, one target stays published', async () => {
    await setWithdrawAfter('c1', 1000);
    await setWithdrawAfter('c2', 1000);
    await until('one of them withdrawn', async () => (await withdrawn()).length === 1 && callLines(h.sim).includes(`POST ${REFRESH}`));
    // A turn of the check run here once the other is silent too (none while the server's own turn holds the job lock): it stays.
    const turn = await until('a turn of the check that judges the other tenant', async () => {
      const outcomes = await withdrawSilentTenants(h.server.ctx);
      return outcomes && outcomes.length > 0 ? outcomes : undefined;
    });
    expect(turn.flatMap((o) => o.items).map((i) => `${i.state} ${i.why}`)).toEqual(['kept last-target']);
    expect(callLines(h.sim).filter((c) => c.startsWith('DELETE'))).toHaveLength(1);
    expect(published('www')).toHaveLength(1);
    expect((await answered())[0]).toHaveLength(1);
  });
});
