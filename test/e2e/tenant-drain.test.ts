/**
 * A tenant drained for maintenance (issue 46; core/admin/drain.ts): its targets of shared sets
 * withdrawn now (reason drained: one DELETE each, one refresh per zone), never a set's last target,
 * its exclusive set left; it keeps applying its desired state meanwhile and nothing comes back (no
 * flap), its Records shows the drained target as its own, marked withdrawn; undrain restores (one POST
 * each, one refresh). Counted in dnsplane_target_withdrawals_total{reason="drained"}.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { create } from '@bufbuild/protobuf';
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { tenantCommand } from '../../src/cli/tenant.js';
import { EndpointSchema, Policy, TargetStatus, type Endpoint, type PlanRequest } from '../../src/gen/dnsplane/v1/zone_pb.js';
import * as store from '../../src/store/index.js';
import { capturedIo } from '../helpers/cli-io.js';
import { callLines, expectRejected } from '../helpers/expect.js';
import { scrape } from '../helpers/prometheus.js';
import { startHarness, type Harness } from '../helpers/server.js';

const ZONE = 'example.com';
const REC = `/domain/zone/${ZONE}/record`;
const REFRESH = `/domain/zone/${ZONE}/refresh`;
let h: Harness;
let adminFile: string;
const tokens: Record<string, string> = {};

const shared = (name: string, target: string): Endpoint =>
  create(EndpointSchema, { dnsName: `${name}.${ZONE}`, recordType: 'A', targets: [target], ttl: 300, labels: { 'dnsplane/shared': 'true' } });
const solo = create(EndpointSchema, { dnsName: `solo.${ZONE}`, recordType: 'A', targets: ['192.0.2.9'], ttl: 300 });
const desired = (endpoints: Endpoint[]): PlanRequest =>
  ({ policy: Policy.SYNC, input: { case: 'desired', value: { zones: [ZONE], endpoints } } }) as PlanRequest;
/** c1 and c2 share www; c2 alone holds `alone` (a shared set with one target: never withdrawn) and solo (exclusive). */
const STATE: Record<string, PlanRequest> = {
  c1: desired([shared('www', '192.0.2.1')]),
  c2: desired([shared('www', '192.0.2.2'), shared('alone', '192.0.2.3'), solo]),
};
const published = (sub: string) =>
  h.sim
    .publishedRecords(ZONE)
    .filter((r) => r.subDomain === sub && r.fieldType === 'A')
    .map((r) => r.target)
    .sort();
const withdrawn = async () => (await store.listWithdrawals(h.server.ctx.pool, ZONE)).map((w) => `${w.dnsName} ${w.target} ${w.reason} ${w.tenantName}`);
const cli = async (args: string[]) => {
  const io = capturedIo({});
  expect(await tenantCommand.run([...args, '--server', h.server.url, '--token-file', adminFile], io)).toBe(0);
  return io.lines;
};

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [] } });
  tokens.admin = await h.tenant('admin', [], { admin: true });
  tokens.c1 = await h.tenant('c1', [ZONE]);
  tokens.c2 = await h.tenant('c2', [ZONE]);
  for (const t of ['c1', 'c2']) await h.zoneClient(tokens[t]).apply({ source: { case: 'plan', value: STATE[t]! } });
  const dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-drain-'));
  adminFile = path.join(dir, 'admin.token');
  writeFileSync(adminFile, tokens.admin!);
});

afterAll(async () => {
  await h?.close();
});

beforeEach(() => h.sim.clearCalls());

describe('tenant drain', () => {
  it('refuses an unknown tenant or zone naming the field, sending nothing', async () => {
    await expectRejected(h.adminClient(tokens.admin).drainTenant({ name: 'nobody' }), Code.NotFound, /tenant "nobody" does not exist/);
    await expectRejected(h.adminClient(tokens.admin).drainTenant({ name: 'c2', zone: 'nope.org' }), Code.InvalidArgument, /^zone: "nope.org" is not a zone/);
    await expectRejected(h.adminClient(tokens.admin).drainTenant({ name: '' }), Code.InvalidArgument, /^name: a tenant name is required/);
    expect(callLines(h.sim)).toEqual([]);
    expect(await withdrawn()).toEqual([]);
  });

  it('withdraws its targets of shared sets now: one DELETE each and one refresh; never the last target; exclusive sets stay', async () => {
    const lines = await cli(['drain', 'c2']);
    expect(lines[0]).toBe('tenant "c2" drained: 1 target(s) withdrawn, 1 kept; 2 OVH call(s)');
    expect(lines).toContain(`  alone.${ZONE} A 192.0.2.3 (${ZONE}): kept (last-target)`);
    expect(callLines(h.sim)).toEqual([expect.stringMatching(new RegExp(`^DELETE ${REC}/\\d+$`)), `POST ${REFRESH}`]);
    expect(await withdrawn()).toEqual([`www.${ZONE} 192.0.2.2 drained c2`]);
    expect(published('www')).toEqual(['192.0.2.1']);
    expect(published('alone')).toEqual(['192.0.2.3']);
    expect(published('solo')).toEqual(['192.0.2.9']);
    const journal = await h.adminClient(tokens.admin).listJournal({ zone: ZONE, limit: 1 });
    expect(journal.entries[0]?.summary).toMatch(/tenant c2 drained by admin/);
    const m = await scrape(h.server.url);
    expect(m('dnsplane_target_withdrawals_total', { reason: 'drained' })).toBe(1);
  });

  it('the tenant keeps applying its desired state: nothing planned, nothing sent, the target stays drained (no flap)', async () => {
    const own = await h.zoneClient(tokens.c2).records({ zones: [ZONE] });
    const www = own.zones[0]!.endpoints.find((e) => e.dnsName === `www.${ZONE}`)!;
    expect(www.targets).toEqual(['192.0.2.2']);
    expect(www.targetStates.map((s) => [s.target, TargetStatus[s.status], s.reason])).toEqual([['192.0.2.2', 'WITHDRAWN', 'drained']]);
    const res = await h.zoneClient(tokens.c2).apply({ source: { case: 'plan', value: STATE.c2! } });
    expect(res.zones.flatMap((z) => z.changes)).toEqual([]);
    expect(callLines(h.sim)).toEqual([]);
    expect(await withdrawn()).toEqual([`www.${ZONE} 192.0.2.2 drained c2`]);
    // A second drain changes nothing.
    expect((await cli(['drain', 'c2']))[0]).toBe('tenant "c2" drained: 0 target(s) withdrawn, 1 kept; 0 OVH call(s)');
    expect(callLines(h.sim)).toEqual([]);
  });

  it('undrain restores: one POST each and one refresh', async () => {
    expect((await cli(['undrain', 'c2']))[0]).toBe('tenant "c2" undrained: 1 target(s) restored, 0 kept; 2 OVH call(s)');
    expect(callLines(h.sim)).toEqual([`POST ${REC}`, `POST ${REFRESH}`]);
    expect(h.sim.writes()[0]!.body).toEqual({ fieldType: 'A', subDomain: 'www', target: '192.0.2.2', ttl: 300 });
    expect(await withdrawn()).toEqual([]);
    expect(published('www')).toEqual(['192.0.2.1', '192.0.2.2']);
  });
});
