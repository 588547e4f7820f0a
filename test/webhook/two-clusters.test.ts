/**
 * Two clusters, each with stock external-dns (`--registry=noop`, sync policy), on one zone through
 * dnsplane's webhook: neither can delete or overwrite the other's records; a name both want belongs to
 * the first; the second's attempt is a conflict (logged, counted), its other changes apply, and the
 * answer is a soft error naming the refusal (external-dns logs it and asks again next loop).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/server.js';
import { ExternalDns, refusedSoftly, type GoEndpoint } from '../helpers/external-dns.js';
import { centralWebhook, type TestWebhook } from '../helpers/central-webhook.js';
import { callLines } from '../helpers/expect.js';

const ZONE = 'example.com';
let h: Harness;
let wh: TestWebhook;
let c1: ExternalDns;
let c2: ExternalDns;

const calls = (): string[] => callLines(h.sim);
const a = (name: string, ip: string): GoEndpoint => ({ dnsName: `${name}.${ZONE}`, targets: [ip], recordType: 'A', recordTTL: 300 });
const published = (sub: string) =>
  h.sim
    .publishedRecords(ZONE)
    .filter((r) => r.subDomain === sub)
    .map((r) => r.target)
    .sort();
const conflictLines = () => wh.lines.filter((l) => l.msg === 'webhook change refused: conflict');

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [] } });
  wh = await centralWebhook(h);
  c1 = new ExternalDns(wh.url('cluster-1', await h.tenant('cluster-1', [ZONE])));
  c2 = new ExternalDns(wh.url('cluster-2', await h.tenant('cluster-2', [ZONE])));
  await c1.negotiate();
  await c2.negotiate();
  await c1.records(); // the zone's first read (its sync) out of the way
});

afterAll(async () => {
  await wh?.close();
  await h?.close();
});

beforeEach(() => h.sim.clearCalls());

describe('two clusters on one zone, external-dns --registry=noop', () => {
  it('the first cluster creates its names', async () => {
    const sent = await c1.runOnce([a('shared', '192.0.2.10'), a('one', '192.0.2.11')]);
    expect(sent.create).toHaveLength(2);
    expect(calls()).toEqual([`POST /domain/zone/${ZONE}/record`, `POST /domain/zone/${ZONE}/record`, `POST /domain/zone/${ZONE}/refresh`]);
  });

  it('the second does not see them, wants one of them: conflict (logged, counted), its other change applies, a soft error names the refusal', async () => {
    expect(await c2.records()).toEqual([]);
    await refusedSoftly(c2.runOnce([a('shared', '198.51.100.10'), a('two', '198.51.100.11')]));
    const sent = JSON.parse(c2.exchanges.at(-1)!.requestBody) as { create: Array<{ dnsName: string }> };
    expect(sent.create.map((e) => e.dnsName).sort()).toEqual([`shared.${ZONE}`, `two.${ZONE}`]);
    expect(c2.exchanges.at(-1)!.status).toBe(500);
    expect(c2.exchanges.at(-1)!.body).toBe(
      `1 change(s) refused; the others were applied (dnsplane's log names each refusal):\nconflict create shared.${ZONE} A: shared.${ZONE} A is owned by tenant "cluster-1"\n`,
    );
    expect(calls()).toEqual([`POST /domain/zone/${ZONE}/record`, `POST /domain/zone/${ZONE}/refresh`]);
    expect(h.sim.writes()[0]!.body).toEqual({ fieldType: 'A', subDomain: 'two', target: '198.51.100.11', ttl: 300 });
    expect(published('shared')).toEqual(['192.0.2.10']);
    // Named by what external-dns asked (a create), not by what dnsplane would have done.
    expect(conflictLines()).toEqual([
      expect.objectContaining({
        level: 40,
        tenant: 'cluster-2',
        zone: ZONE,
        action: 'create',
        dnsName: `shared.${ZONE}`,
        recordType: 'A',
        owner: 'cluster-1',
        reason: expect.stringMatching(/owned by tenant "cluster-1"/),
      }),
    ]);
    expect(await wh.metric('dnsplane_webhook_conflicts_total', { tenant: 'cluster-2', zone: ZONE, action: 'create' })).toBe(1);
    expect(wh.lines.find((l) => l.msg === 'webhook request failed' && l.webhook === 'apply' && l.tenant === 'cluster-2')).toMatchObject({
      status: 500,
      conflicts: 1,
      rejected: 0,
      ovhCalls: 2,
    });
  });

  it('the next loop of the second asks again, is refused again (the same soft error), and costs no OVH call', async () => {
    await refusedSoftly(c2.runOnce([a('shared', '198.51.100.10'), a('two', '198.51.100.11')]));
    const sent = JSON.parse(c2.exchanges.at(-1)!.requestBody) as { create: Array<{ dnsName: string }> };
    expect(sent.create.map((e) => e.dnsName)).toEqual([`shared.${ZONE}`]);
    expect(calls()).toEqual([]);
    expect(await wh.metric('dnsplane_webhook_conflicts_total', { tenant: 'cluster-2', zone: ZONE, action: 'create' })).toBe(2);
  });

  it("a change set that deletes and overwrites the other cluster's records changes nothing", async () => {
    await refusedSoftly(
      c2.applyChanges({
        updateOld: [a('shared', '192.0.2.10')],
        updateNew: [a('shared', '198.51.100.99')],
        delete: [a('one', '192.0.2.11')],
      }),
    );
    expect(c2.exchanges.at(-1)!.body).toMatch(
      /^2 change\(s\) refused.*\nconflict delete one\.example\.com A: .*cluster-1.*\nconflict update shared\.example\.com A: .*cluster-1"\n$/,
    );
    expect(await wh.metric('dnsplane_webhook_conflicts_total', { tenant: 'cluster-2', zone: ZONE, action: 'update' })).toBe(1);
    expect(await wh.metric('dnsplane_webhook_conflicts_total', { tenant: 'cluster-2', zone: ZONE, action: 'delete' })).toBe(1);
    expect(calls()).toEqual([]);
    expect(published('shared')).toEqual(['192.0.2.10']);
    expect(published('one')).toEqual(['192.0.2.11']);
    expect(
      conflictLines()
        .slice(-2)
        .map((l) => [l.action, l.dnsName, l.owner]),
    ).toEqual([
      ['delete', `one.${ZONE}`, 'cluster-1'],
      ['update', `shared.${ZONE}`, 'cluster-1'],
    ]);
  });

  it('the first cluster removing its own name deletes only that; each sees only its own records', async () => {
    const one = h.sim.draftRecords(ZONE).find((r) => r.subDomain === 'one')!.id;
    const sent = await c1.runOnce([a('shared', '192.0.2.10')]);
    expect(sent.delete?.map((e) => e.dnsName)).toEqual([`one.${ZONE}`]);
    expect(calls()).toEqual([`DELETE /domain/zone/${ZONE}/record/${one}`, `POST /domain/zone/${ZONE}/refresh`]);
    expect(published('two')).toEqual(['198.51.100.11']);
    expect((await c1.records()).map((e) => e.dnsName)).toEqual([`shared.${ZONE}`]);
    expect((await c2.records()).map((e) => e.dnsName)).toEqual([`two.${ZONE}`]);
  });
});
