/**
 * What the admin console needs from the API, end to end: ListZones tells the caller its scopes and each
 * zone's drift state (what the drift checks found, when) and its applies left in flight; ListJournal
 * pages (before_id) and filters by state; ParseDesiredState reads a `dnsplane plan -f` document into
 * the PlanRequest PlanAs takes, with errors naming the field, reading and writing nothing.
 */
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_DOCUMENT_BYTES } from '../../src/api/desired-document.js';
import { checkZoneDrift } from '../../src/core/drift/drift.js';
import { Policy } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { callLines, ep, expectRejected } from '../helpers/expect.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { snapshot } from '../helpers/snapshot.js';

const ZONE = 'console.test';
const OTHER = 'other.test';
const REC = `/domain/zone/${ZONE}/record`;
let h: Harness;
let admin: string;
let alice: string;

const upsert = (endpoints: ReturnType<typeof ep>[]) => ({
  source: { case: 'plan' as const, value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired' as const, value: { zones: [], endpoints } } } },
});
const zoneOf = async (token: string, name = ZONE) => (await h.zoneClient(token).listZones({})).zones.find((z) => z.name === name);
const ms = (t: { seconds: bigint; nanos: number } | undefined) => (t ? Number(t.seconds) * 1000 + Math.floor(t.nanos / 1e6) : undefined);

beforeAll(async () => {
  h = await startHarness({
    zones: { [ZONE]: [{ subDomain: 'www', fieldType: 'A', target: '192.0.2.1', ttl: 300 }], [OTHER]: [] },
    env: { DNSPLANE_DRIFT_INTERVAL: '0' },
  });
  admin = await h.tenant('admin', [], { admin: true });
  alice = await h.tenant('alice', [ZONE]);
  await h.zoneClient(alice).records({ zones: [ZONE] }); // first sync
});
afterAll(async () => {
  await h?.close();
});

describe('ListZones', () => {
  it('tells the caller its scopes', async () => {
    expect(await h.zoneClient(admin).listZones({})).toMatchObject({ tenant: 'admin', scopes: ['admin'] });
    const res = await h.zoneClient(alice).listZones({});
    expect(res).toMatchObject({ tenant: 'alice', scopes: [] });
    expect(res.zones.map((z) => z.name)).toEqual([ZONE]);
  });

  it('drift state: unchecked, then in sync, then drift found with what was found, then in sync again', async () => {
    const never = (await zoneOf(alice))!.drift!;
    expect(never).toMatchObject({ state: 'unchecked', added: 0, removed: 0, updated: 0 });
    expect(never.lastCheck).toBeUndefined();
    expect(never.lastFound).toBeUndefined();

    expect(await checkZoneDrift(h.server.ctx, ZONE)).toMatchObject({ status: 'unchanged' });
    const first = (await zoneOf(alice))!.drift!;
    expect(first.state).toBe('in_sync');
    expect(first.lastFound).toBeUndefined();
    expect(ms(first.lastCheck)).toBeGreaterThan(0);

    // By hand in OVH: one added, one edited in place.
    h.sim.addRecord(ZONE, { subDomain: 'hand', fieldType: 'A', target: '192.0.2.50', ttl: 60 });
    const www = h.sim.draftRecords(ZONE).find((r) => r.subDomain === 'www')!;
    h.sim.updateRecord(ZONE, www.id, { target: '192.0.2.9' });
    h.sim.publish(ZONE);
    expect(await checkZoneDrift(h.server.ctx, ZONE)).toMatchObject({ status: 'changed', added: 1, removed: 0, updated: 1 });
    const found = (await zoneOf(alice))!.drift!;
    expect(found).toMatchObject({ state: 'drift_found', added: 1, removed: 0, updated: 1 });
    expect(ms(found.lastFound)).toBe(ms(found.lastCheck));
    expect(ms(found.lastCheck)).toBeGreaterThanOrEqual(ms(first.lastCheck)!);

    expect(await checkZoneDrift(h.server.ctx, ZONE)).toMatchObject({ status: 'unchanged' });
    const after = (await zoneOf(alice))!.drift!;
    // The last find stays on record; the state says the last check found nothing.
    expect(after).toMatchObject({ state: 'in_sync', added: 1, removed: 0, updated: 1 });
    expect(ms(after.lastFound)).toBe(ms(found.lastFound));
    expect(ms(after.lastCheck)).toBeGreaterThanOrEqual(ms(found.lastCheck)!);
    // A zone never checked stays unchecked.
    expect((await zoneOf(admin, OTHER))!.drift!.state).toBe('unchecked');
  });

  it('counts the applies left in flight until the next lock holder rolls them back', async () => {
    expect((await zoneOf(admin))!.inFlightApplies).toBe(0);
    // A refresh that keeps answering 500 may have published: the row stays in flight.
    h.sim.faults.fail({ method: 'POST', path: `/domain/zone/${ZONE}/refresh`, times: 4, effect: { kind: 'status', status: 500 } });
    await expectRejected(h.zoneClient(alice).apply(upsert([ep(`flight.${ZONE}`, 'A', ['192.0.2.77'])])), Code.Unavailable, /refresh/);
    expect((await zoneOf(admin))!.inFlightApplies).toBe(1);
    await checkZoneDrift(h.server.ctx, ZONE);
    expect((await zoneOf(admin))!.inFlightApplies).toBe(0);
  });
});

describe('ListJournal paging and state filter', () => {
  it('pages with before_id, newest first, and filters by state', async () => {
    for (let i = 0; i < 3; i++) await h.zoneClient(alice).apply(upsert([ep(`page${i}.${ZONE}`, 'A', [`192.0.2.${100 + i}`])]));
    const all = (await h.adminClient(admin).listJournal({ zone: ZONE, limit: 1000 })).entries;
    expect(all.length).toBeGreaterThanOrEqual(4);
    const ids = all.map((e) => BigInt(e.id));
    expect([...ids].sort((a, b) => (a > b ? -1 : 1))).toEqual(ids);

    const pages: string[][] = [];
    let before = '';
    for (;;) {
      const page = (await h.adminClient(admin).listJournal({ zone: ZONE, limit: 2, beforeId: before })).entries;
      if (page.length === 0) break;
      pages.push(page.map((e) => e.id));
      before = page[page.length - 1]!.id;
    }
    expect(pages.flat()).toEqual(all.map((e) => e.id));
    expect(pages.every((p) => p.length <= 2)).toBe(true);

    const recovered = (await h.adminClient(admin).listJournal({ zone: ZONE, state: 'recovered' })).entries;
    expect(recovered.map((e) => e.id)).toEqual(all.filter((e) => e.state === 'recovered').map((e) => e.id));
    expect(recovered).toHaveLength(1);
    // Its calls: what the dead apply had sent (the POST, the refresh that answered 500 after its
    // retries, the undo), then the recovery's (the publish of the rolled-back draft).
    const lines = recovered[0]!.calls.map((c) => `${c.method} ${c.path.replace(/\/record\/\d+/, '/record/ID')} ${c.status}`);
    expect(lines.filter((l) => l.includes('/refresh'))).toEqual([`POST /domain/zone/${ZONE}/refresh 500`, `POST /domain/zone/${ZONE}/refresh 204`]);
    expect(lines[0]).toBe(`POST ${REC} 200`);
    expect(lines).toContain(`DELETE ${REC}/ID 200`);
    expect(recovered[0]!.error).toMatch(/500/);
    expect(recovered[0]!.summary).toBe('rolled back after it died in flight: 1 compensating call(s), the rolled-back draft published');
    const done = (await h.adminClient(admin).listJournal({ zone: ZONE, state: 'done' })).entries;
    expect(done.every((e) => e.state === 'done')).toBe(true);
    expect(done.length).toBe(all.filter((e) => e.state === 'done').length);
  });

  it('refuses a bad before_id or state, naming the field', async () => {
    await expectRejected(
      h.adminClient(admin).listJournal({ beforeId: 'abc' }),
      Code.InvalidArgument,
      /^beforeId: must be a journal entry id \(digits\), got "abc"$/,
    );
    await expectRejected(
      h.adminClient(admin).listJournal({ state: 'lost' }),
      Code.InvalidArgument,
      /^state: unknown state "lost" \(known: in_flight, done, failed, recovered\)$/,
    );
  });
});

describe('ParseDesiredState', () => {
  it('reads YAML and JSON documents as `dnsplane plan -f` does, reading and writing nothing', async () => {
    const before = await snapshot(h.server.ctx.pool);
    h.sim.clearCalls();
    const yaml = `zones: [${ZONE}]\npolicy: upsert-only\nendpoints:\n  - name: a.${ZONE}\n    type: A\n    targets: [192.0.2.1, 192.0.2.2]\n    recordTTL: 60\n  - dnsName: t.${ZONE}\n    recordType: TXT\n    target: hello world\n    labels: {dnsplane/shared: "true"}\n`;
    const res = (await h.adminClient(admin).parseDesiredState({ document: yaml })).request!;
    expect(res.policy).toBe(Policy.UPSERT_ONLY);
    expect(res.input.case).toBe('desired');
    const desired = res.input.value as {
      zones: string[];
      endpoints: Array<{ dnsName: string; recordType: string; targets: string[]; ttl: number; labels: Record<string, string> }>;
    };
    expect(desired.zones).toEqual([ZONE]);
    expect(desired.endpoints.map((e) => ({ dnsName: e.dnsName, recordType: e.recordType, targets: e.targets, ttl: e.ttl, labels: e.labels }))).toEqual([
      { dnsName: `a.${ZONE}`, recordType: 'A', targets: ['192.0.2.1', '192.0.2.2'], ttl: 60, labels: {} },
      { dnsName: `t.${ZONE}`, recordType: 'TXT', targets: ['hello world'], ttl: 0, labels: { 'dnsplane/shared': 'true' } },
    ]);

    const json = JSON.stringify([{ dnsName: `b.${ZONE}`, recordType: 'AAAA', targets: ['2001:db8::1'] }]);
    const j = (await h.adminClient(admin).parseDesiredState({ document: json })).request!;
    expect(j.policy).toBe(Policy.SYNC); // none named: sync, as `dnsplane plan -f`
    expect((j.input.value as { endpoints: Array<{ dnsName: string }> }).endpoints.map((e) => e.dnsName)).toEqual([`b.${ZONE}`]);

    expect(callLines(h.sim)).toEqual([]);
    expect(await snapshot(h.server.ctx.pool)).toEqual(before);
  });

  it('refuses a bad document naming the field and the rule', async () => {
    const bad: Array<[string, RegExp]> = [
      ['', /^document: is empty/],
      ['endpoints: [\n', /^document: is neither YAML nor JSON: /],
      ['42', /^document: must hold a list of endpoints or a mapping with "endpoints"$/],
      ['{endpoints: [], colour: red}', /^document: colour: unknown key \(known: zones, policy, endpoints\)$/],
      [
        '[{dnsName: a.console.test, recordType: A, targets: [192.0.2.1], ttl: -5}]',
        /^document: \[0\]\.ttl: must be a whole number of seconds, 0 or more \(got -5\)$/,
      ],
      ['{policy: yolo, endpoints: []}', /^document: policy: must be one of sync, upsert-only, create-only$/],
      ['[{dnsName: a.console.test, kind: A}]', /^document: \[0\]\.kind: unknown key/],
    ];
    for (const [document, message] of bad) await expectRejected(h.adminClient(admin).parseDesiredState({ document }), Code.InvalidArgument, message);
  });

  it('reads a large document off the event loop, and refuses a list longer than one Plan takes', async () => {
    // Just under the 2 MiB limit: read on the API's thread, the parse alone would hold it for about a second here.
    const document = Array.from({ length: 28_000 }, (_, i) => `- dnsName: h${i}.${ZONE}\n  recordType: A\n  targets: [192.0.2.${i % 250}]\n`).join('');
    expect(Buffer.byteLength(document)).toBeGreaterThan(1.8 * 2 ** 20);
    expect(Buffer.byteLength(document)).toBeLessThanOrEqual(MAX_DOCUMENT_BYTES);
    let last = performance.now();
    let worst = 0;
    const ticks = setInterval(() => {
      const now = performance.now();
      worst = Math.max(worst, now - last);
      last = now;
    }, 5);
    try {
      await expectRejected(
        h.adminClient(admin).parseDesiredState({ document }),
        Code.InvalidArgument,
        /^document: holds 28000 endpoints: at most 5000, the most one Plan takes$/,
      );
    } finally {
      clearInterval(ticks);
    }
    expect(worst).toBeLessThan(300);
  });

  it("is for admins (the console's PlanAs form)", async () => {
    await expectRejected(h.adminClient(alice).parseDesiredState({ document: '[]' }), Code.PermissionDenied, /needs the admin scope/);
  });
});
