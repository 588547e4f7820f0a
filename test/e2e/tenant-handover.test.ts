/**
 * A cluster replaced (issue 46): tenant blue's ownership handed to tenant green — exclusive sets and
 * its target of a shared set — in one transaction and one journal row, with no OVH call; green's
 * external-dns (the same sources) then plans nothing, blue's writes are refused; `journal revert`
 * moves it back. Bad input (unknown tenant, NEW = OLD, a zone NEW may not write, sets outside NEW's
 * suffixes) is refused naming the field, nothing written.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { create } from '@bufbuild/protobuf';
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { journalCommand } from '../../src/cli/journal.js';
import { tenantCommand } from '../../src/cli/tenant.js';
import { type Endpoint, type PlanRequest, PlanRequestSchema, Policy } from '../../src/gen/dnsplane/v1/zone_pb.js';
import * as store from '../../src/store/index.js';
import { centralWebhook, type TestWebhook } from '../helpers/central-webhook.js';
import { capturedIo } from '../helpers/cli-io.js';
import { callLines, ep, expectRejected } from '../helpers/expect.js';
import { ExternalDns, refusedSoftly, type GoEndpoint } from '../helpers/external-dns.js';
import { startHarness, type Harness } from '../helpers/server.js';

const COM = 'example.com';
const NET = 'example.net';
let h: Harness;
let wh: TestWebhook;
let admin: string;
let adminFile: string;
let blue: ExternalDns;
let green: ExternalDns;

const calls = (): string[] => callLines(h.sim);
const a = (name: string, ip: string): GoEndpoint => ({ dnsName: `${name}.${COM}`, targets: [ip], recordType: 'A', recordTTL: 300 });
/** blue's sources, which green is given too. */
const SOURCES = [a('app', '192.0.2.1'), a('api', '192.0.2.2'), a('www', '192.0.2.10'), { ...a('mail', '198.51.100.1'), dnsName: `mail.${NET}` }];

/** Every ownership row, as `zone name type target owner`. */
async function owners(): Promise<string[]> {
  const rows = [...(await store.listOwnership(h.server.ctx.pool, COM)), ...(await store.listOwnership(h.server.ctx.pool, NET))];
  return rows.map((r) => `${r.zone} ${r.dnsName} ${r.recordType} ${r.target || '-'} ${r.tenantName}`);
}
const upsert = (endpoints: Endpoint[]): PlanRequest =>
  create(PlanRequestSchema, { policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints } } });
const journalCount = async () => (await h.adminClient(admin).listJournal({ limit: 1000 })).entries.length;

beforeAll(async () => {
  h = await startHarness({ zones: { [COM]: [], [NET]: [] } });
  wh = await centralWebhook(h);
  admin = await h.tenant('admin', [], { admin: true });
  const red = await h.tenant('red', [COM]);
  blue = new ExternalDns(wh.url('blue', await h.tenant('blue', [COM, NET])));
  green = new ExternalDns(wh.url('green', await h.tenant('green', [COM, NET])));
  await h.tenant('narrow', [COM], { suffixes: [`app.${COM}`] });
  await h.tenant('netonly', [NET]);
  const dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-handover-'));
  adminFile = path.join(dir, 'admin.token');
  writeFileSync(adminFile, admin);
  // red makes www a shared set; blue joins it with its own target.
  await h
    .zoneClient(red)
    .apply({ source: { case: 'plan', value: upsert([{ ...ep(`www.${COM}`, 'A', ['192.0.2.20']), labels: { 'dnsplane/shared': 'true' } }]) } });
  await blue.negotiate();
  await green.negotiate();
  await blue.runOnce(SOURCES.slice(0, 3));
  await h.zoneClient(admin).apply({ source: { case: 'plan', value: upsert([ep(`mail.${NET}`, 'A', ['198.51.100.1'])]) } });
  await h.adminClient(admin).assignOwnership({ dnsName: `mail.${NET}`, recordType: 'A', tenant: 'blue' });
});

afterAll(async () => {
  await wh?.close();
  await h?.close();
});

beforeEach(() => h.sim.clearCalls());

const BLUE = [
  `${COM} api.${COM} A - blue`,
  `${COM} app.${COM} A - blue`,
  `${COM} www.${COM} A 192.0.2.10 blue`,
  `${COM} www.${COM} A 192.0.2.20 red`,
  `${NET} mail.${NET} A - blue`,
];

describe('tenant handover', () => {
  it('refuses bad input naming the field, and writes nothing', async () => {
    expect(await owners()).toEqual(BLUE);
    const before = await journalCount();
    const adm = h.adminClient(admin);
    await expectRejected(adm.handoverTenant({ old: 'nobody', new: 'green' }), Code.NotFound, /tenant "nobody" does not exist/);
    await expectRejected(adm.handoverTenant({ old: 'blue', new: '' }), Code.InvalidArgument, /^new: a tenant name is required/);
    await expectRejected(adm.handoverTenant({ old: 'blue', new: 'blue' }), Code.InvalidArgument, /new: must be another tenant than old \("blue"\)/);
    await expectRejected(
      adm.handoverTenant({ old: 'blue', new: 'netonly', zone: COM }),
      Code.PermissionDenied,
      /zone: tenant "netonly" may not write zone "example.com"/,
    );
    await expectRejected(
      adm.handoverTenant({ old: 'blue', new: 'green', zone: 'nope.org' }),
      Code.InvalidArgument,
      /zone: "nope.org" is not a zone dnsplane manages/,
    );
    await expectRejected(
      adm.handoverTenant({ old: 'blue', new: 'green', zone: COM, suffix: `x.${NET}` }),
      Code.InvalidArgument,
      /suffix: "x.example.net" is not in zone/,
    );
    // Not every set is within narrow's suffixes: refused as a whole, the sets named.
    await expectRejected(
      adm.handoverTenant({ old: 'blue', new: 'narrow', zone: COM }),
      Code.PermissionDenied,
      /new: tenant "narrow" may not write 2 record set\(s\) tenant "blue" owns .*: api.example.com A, www.example.com A; nothing was handed over/,
    );
    expect(await owners()).toEqual(BLUE);
    expect(await journalCount()).toBe(before);
    expect(calls()).toEqual([]);
  });

  it('a dry run lists what would move and writes nothing', async () => {
    const before = await journalCount();
    const r = await h.adminClient(admin).handoverTenant({ old: 'blue', new: 'green', zone: COM, dryRun: true });
    expect(r.journalId).toBe('');
    expect(r.sets.map((s) => `${s.dnsName} ${s.target || '-'} ${s.shared}`)).toEqual([
      `api.${COM} - false`,
      `app.${COM} - false`,
      `www.${COM} 192.0.2.10 true`,
    ]);
    expect(await owners()).toEqual(BLUE);
    expect(await journalCount()).toBe(before);
  });

  it('hands everything over in one journal row with no OVH call; green plans nothing, blue is refused', async () => {
    const gens = await store.getGenerations(h.server.ctx.pool, [COM, NET]);
    const io = capturedIo({});
    expect(await tenantCommand.run(['handover', 'blue', 'green', '--server', h.server.url, '--token-file', adminFile], io)).toBe(0);
    expect(io.lines[0]).toBe('tenant "blue" handed over 4 ownership row(s) to tenant "green" (no OVH call)');
    expect(calls()).toEqual([]);
    expect(await owners()).toEqual(BLUE.map((l) => l.replace(/ blue$/, ' green')));
    const after = await store.getGenerations(h.server.ctx.pool, [COM, NET]);
    expect(after.get(COM)).toBe(gens.get(COM)! + 1n);
    expect(after.get(NET)).toBe(gens.get(NET)! + 1n);
    const [row] = (await h.adminClient(admin).listJournal({ limit: 1 })).entries;
    expect(row).toMatchObject({ kind: 'tenant-handover', tenant: 'admin' });
    expect(io.lines.at(-1)).toBe(`journal entry ${row!.id}; undo it with: dnsplane journal revert ${row!.id}`);

    // green's external-dns, given blue's sources, sees them as its own and plans nothing.
    const changes = await green.runOnce(SOURCES);
    expect([changes.create, changes.updateOld, changes.updateNew, changes.delete].flatMap((c) => c ?? [])).toEqual([]);
    // blue's next loop: its records are gone from its view; what it would change is a conflict, nothing sent
    // (a create identical to what is there changes nothing and is not refused).
    expect(await blue.records()).toEqual([]);
    const refusal = await refusedSoftly(blue.runOnce([a('app', '192.0.2.99'), ...SOURCES.slice(1)]));
    expect(refusal.message).toMatch(/500/);
    expect(blue.exchanges.at(-1)!.body).toContain(`conflict create app.${COM} A: app.${COM} A is owned by tenant "green"`);
    expect(blue.exchanges.at(-1)!.body).toContain(`conflict create www.${COM} A: target 192.0.2.10 of shared set www.${COM} A is owned by tenant "green"`);
    expect(await owners()).toEqual(BLUE.map((l) => l.replace(/ blue$/, ' green')));
    expect(calls()).toEqual([]);
    expect(
      h.sim
        .publishedRecords(COM)
        .filter((r) => r.fieldType === 'A')
        .map((r) => `${r.subDomain} ${r.target}`)
        .sort(),
    ).toEqual(['api 192.0.2.2', 'app 192.0.2.1', 'www 192.0.2.10', 'www 192.0.2.20']);
  });

  it('journal revert moves it back, with no OVH call, and is journaled', async () => {
    const [row] = (await h.adminClient(admin).listJournal({ limit: 1 })).entries;
    const io = capturedIo({});
    expect(await journalCommand.run(['revert', row!.id, '--server', h.server.url, '--token-file', adminFile], io)).toBe(0);
    expect(io.lines[0]).toMatch(
      new RegExp(`^Revert of journal entry ${row!.id} \\(a tenant handover\\): tenant "green" gave back 4 ownership row\\(s\\) to tenant "blue"`),
    );
    expect(calls()).toEqual([]);
    expect(await owners()).toEqual(BLUE);
    const [back] = (await h.adminClient(admin).listJournal({ limit: 1 })).entries;
    expect(back).toMatchObject({ kind: 'tenant-handover-revert' });
    // blue's loop is back to nothing to do.
    const changes = await blue.runOnce(SOURCES);
    expect([changes.create, changes.updateOld, changes.updateNew, changes.delete].flatMap((c) => c ?? [])).toEqual([]);
  });

  it('--zone and --suffix narrow it; a set NEW no longer owns is left alone by the revert', async () => {
    const r = await h.adminClient(admin).handoverTenant({ old: 'blue', new: 'narrow', zone: COM, suffix: `app.${COM}` });
    expect(r.sets.map((s) => s.dnsName)).toEqual([`app.${COM}`]);
    await h.adminClient(admin).assignOwnership({ dnsName: `app.${COM}`, recordType: 'A', tenant: 'green' });
    const back = await h.adminClient(admin).revertHandover({ journalId: r.journalId });
    expect(back.sets).toEqual([]);
    expect(back.leftAlone.map((s) => s.dnsName)).toEqual([`app.${COM}`]);
    expect((await owners()).filter((l) => l.includes(' app.'))).toEqual([`${COM} app.${COM} A - green`]);
    expect(calls()).toEqual([]);
  });

  it('reverting something that is not a handover is refused naming the field', async () => {
    await expectRejected(h.adminClient(admin).revertHandover({ journalId: 'x' }), Code.InvalidArgument, /journalId: must be a journal entry id/);
    await expectRejected(h.adminClient(admin).revertHandover({ journalId: '999999' }), Code.NotFound, /journal entry 999999 does not exist/);
  });
});
