/**
 * Per-tenant write quotas (issue 46): off by default; set with `dnsplane tenant set --writes-per-day
 * --write-burst`; one count in Postgres shared by two replicas; an apply over it refused before
 * anything is sent (ResourceExhausted naming the quota and when it refills; the webhook's soft error);
 * a deletion let through over the quota; counted per tenant in /metrics.
 */
import { create } from '@bufbuild/protobuf';
import { Code, createClient, type Client } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { tenantCommand } from '../../src/cli/tenant.js';
import { WriteQuotaError } from '../../src/core/tenants/write-quota.js';
import { outcomeOf } from '../../src/dnsserver/update-outcome.js';
import { type Endpoint, type PlanRequest, PlanRequestSchema, Policy, ZoneService } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { tokenHashHex } from '../../src/core/keys/tokens.js';
import type { Server } from '../../src/server/server.js';
import { getTenantByName } from '../../src/store/index.js';
import { centralWebhook, type TestWebhook } from '../helpers/central-webhook.js';
import { capturedIo } from '../helpers/cli-io.js';
import { callLines, ep, expectRejected } from '../helpers/expect.js';
import { ExternalDns, refusedSoftly } from '../helpers/external-dns.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { until } from '../helpers/until.js';
import { bearer, startServerOn } from '../helpers/sim-server.js';

const ZONE = 'quota.test';
let h: Harness;
let replica: Server;
let wh: TestWebhook;
let q: string;
let free: string;
let one: Client<typeof ZoneService>;
let two: Client<typeof ZoneService>;

const calls = (): string[] => callLines(h.sim);
const creates = (...names: string[]): PlanRequest =>
  create(PlanRequestSchema, {
    policy: Policy.UPSERT_ONLY,
    input: { case: 'desired', value: { zones: [], endpoints: names.map((n, i) => ep(`${n}.${ZONE}`, 'A', [`192.0.2.${i + 1}`])) } },
  });
const deletes = (...endpoints: Endpoint[]): PlanRequest =>
  create(PlanRequestSchema, { policy: Policy.SYNC, input: { case: 'changes', value: { create: [], updateOld: [], updateNew: [], delete: endpoints } } });
const POST = `POST /domain/zone/${ZONE}/record`;
const REFRESH = `POST /domain/zone/${ZONE}/refresh`;

/**
 * `tenant set` as the CLI runs it, then until each of `servers` has heard of the change (NOTIFY
 * dnsplane_tenant: its token cache forgot the tenant, or holds it with its quota as it is now), as a
 * call of `token` to it right after would see it.
 */
async function tenantSet(args: string[], token: string, servers: Server[]): Promise<string[]> {
  const io = capturedIo({ DATABASE_URL: h.databaseUrl });
  expect(await tenantCommand.run(['set', ...args], io)).toBe(0);
  const quota = JSON.stringify((await getTenantByName(h.server.ctx.pool, args[0]!))?.writeQuota);
  const hash = tokenHashHex(token);
  for (const [i, s] of servers.entries()) {
    await until(`replica ${i} to hear of tenant ${args[0]}'s quota`, () => {
      const cached = s.ctx.tokens?.get(hash);
      return cached === undefined || JSON.stringify(cached.writeQuota) === quota;
    });
  }
  return io.lines;
}
async function bucket(): Promise<{ spent: string; refused: string }> {
  const { rows } = await h.server.ctx.pool.query<{ spent: string; refused: string }>(
    `SELECT spent_total::text AS spent, refused_total::text AS refused FROM tenant_write_quota w JOIN tenants t ON t.id = w.tenant_id WHERE t.name = 'q'`,
  );
  return rows[0]!;
}

/** Counts the tenant_write_take() calls the servers' pools send from now on; restore() stops counting. */
function countTakes(...servers: Server[]): { count: () => number; restore: () => void } {
  let n = 0;
  const spies = servers.map((s) => {
    const pool = s.ctx.pool;
    const query = pool.query.bind(pool);
    return vi.spyOn(pool, 'query').mockImplementation(((config: unknown, ...rest: unknown[]) => {
      const text = typeof config === 'string' ? config : (config as { text?: string }).text;
      if (text?.includes('tenant_write_take')) n++;
      return (query as (...a: unknown[]) => unknown)(config, ...rest);
    }) as typeof pool.query);
  });
  return {
    count: () => n,
    restore: () => {
      for (const s of spies) s.mockRestore();
    },
  };
}

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [] } });
  replica = await startServerOn(h.sim, h.databaseUrl);
  wh = await centralWebhook(h);
  q = await h.tenant('q', [ZONE]);
  free = await h.tenant('free', [ZONE]);
  one = h.zoneClient(q);
  two = createClient(ZoneService, createConnectTransport({ baseUrl: replica.url, httpVersion: '1.1', interceptors: [bearer(q)] }));
  await one.records({ zones: [ZONE] }); // the zone's first sync out of the way
});

afterAll(async () => {
  await wh?.close();
  await replica?.close();
  await h?.close();
});

beforeEach(() => h.sim.clearCalls());

describe('write quotas', () => {
  it('are off by default: a tenant without one is never counted, and its applies ask Postgres nothing about it', async () => {
    const takes = countTakes(h.server, replica);
    try {
      await h.zoneClient(free).apply({ source: { case: 'plan', value: creates('f1', 'f2', 'f3', 'f4') } });
      expect(calls()).toEqual([POST, POST, POST, POST, REFRESH]);
      // q too, on both replicas, before the next tests give it a quota: its token is cached on each then.
      await one.apply({ source: { case: 'plan', value: creates('n1') } });
      await two.apply({ source: { case: 'plan', value: creates('n2') } });
      expect(takes.count()).toBe(0);
    } finally {
      takes.restore();
    }
    expect((await h.server.ctx.pool.query('SELECT * FROM tenant_write_quota')).rows).toEqual([]);
  });

  it('bad values are refused naming the flag, nothing written', async () => {
    const io = capturedIo({ DATABASE_URL: h.databaseUrl });
    await expect(tenantCommand.run(['set', 'q', '--writes-per-day', '0', '--write-burst', '3'], io)).rejects.toThrow(
      '--writes-per-day: must be a whole number from 1 to 100000000, got 0',
    );
    await expect(tenantCommand.run(['set', 'q', '--writes-per-day', '10'], io)).rejects.toThrow('--write-burst: is required with --writes-per-day');
    await expect(tenantCommand.run(['set', 'q', '--writes-per-day', 'x', '--write-burst', '3'], io)).rejects.toThrow(
      '--writes-per-day: must be a whole number, got "x"',
    );
    await expect(tenantCommand.run(['set', 'nobody', '--writes-per-day', '10', '--write-burst', '3'], io)).rejects.toThrow('tenant "nobody" does not exist');
    const { rows } = await h.server.ctx.pool.query(`SELECT writes_per_day FROM tenants WHERE name = 'q'`);
    expect(rows).toEqual([{ writes_per_day: null }]);
  });

  it('two replicas spend one count; over it, refused before anything is sent, naming the quota and when it refills', async () => {
    // Set while both replicas hold q's token, as without a quota: NOTIFY dnsplane_tenant makes them forget it.
    expect(await tenantSet(['q', '--writes-per-day', '1000', '--write-burst', '3'], q, [h.server, replica])).toEqual([
      'tenant "q": write quota 1000 OVH writes a day, burst 3 (deletions never counted)',
    ]);
    const takes = countTakes(h.server, replica);
    await one.apply({ source: { case: 'plan', value: creates('a', 'b') } });
    expect(calls()).toEqual([POST, POST, REFRESH]);
    h.sim.clearCalls();
    // The other replica sees the same bucket: one write left.
    const e = await expectRejected(
      two.apply({ source: { case: 'plan', value: creates('c', 'd') } }),
      Code.ResourceExhausted,
      /^write quota of tenant "q" \(1000 OVH writes a day, burst 3\): this apply in zone quota\.test needs 2 writes and 1 are left; enough again at \d{4}-\d\d-\d\dT[\d:.]+Z\. Nothing was sent/,
    );
    const at = new Date(/enough again at (\S+)\./.exec(e.rawMessage)![1]!).getTime();
    // One write refills in 86.4 s at 1000 a day.
    expect(at - Date.now()).toBeGreaterThan(0);
    expect(at - Date.now()).toBeLessThanOrEqual(86_400_000 / 1000 + 1000);
    expect(calls()).toEqual([]);
    await two.apply({ source: { case: 'plan', value: creates('c') } });
    expect(calls()).toEqual([POST, REFRESH]);
    expect(takes.count()).toBe(3);
    takes.restore();
    expect(await bucket()).toEqual({ spent: '3', refused: '1' });
  });

  it('a deletion is let through over the quota, and never counted', async () => {
    await expectRejected(one.apply({ source: { case: 'plan', value: creates('e') } }), Code.ResourceExhausted, /needs 1 writes and 0 are left/);
    expect(calls()).toEqual([]);
    const res = await two.apply({ source: { case: 'plan', value: deletes(ep(`a.${ZONE}`, 'A', ['192.0.2.1'])) } });
    expect(res.zones[0]!.status).toBeDefined();
    expect(calls()).toEqual([expect.stringMatching(new RegExp(`^DELETE /domain/zone/${ZONE}/record/\\d+$`)), REFRESH]);
    expect(await bucket()).toEqual({ spent: '3', refused: '2' });
  });

  it("the webhook answers a soft error naming the quota; the DNS door's answer is REFUSED", async () => {
    const ext = new ExternalDns(wh.url('q', q));
    await ext.negotiate();
    await refusedSoftly(ext.runOnce([{ dnsName: `hook.${ZONE}`, targets: ['192.0.2.9'], recordType: 'A', recordTTL: 300 }]));
    expect(ext.exchanges.at(-1)!.status).toBe(500);
    expect(ext.exchanges.at(-1)!.body).toMatch(/^quota\.test: write quota of tenant "q" \(1000 OVH writes a day, burst 3\)/);
    expect(calls()).toEqual([]);
    const door = outcomeOf({
      zone: ZONE,
      status: 'refused',
      generation: 1n,
      calls: [],
      changes: [],
      conflicts: [],
      error: new WriteQuotaError('write quota of tenant "q" (…)', 'q'),
    });
    expect(door).toEqual({ rcode: 'REFUSED', reason: 'write quota of tenant "q" (…)' });
  });

  it('is counted per tenant in /metrics, and turned off with --writes-per-day off', async () => {
    const text = await (await fetch(`${h.server.url}/metrics`)).text();
    expect(text).toMatch(/^dnsplane_tenant_writes_total\{tenant="q"\} 2$/m);
    expect(text).toMatch(/^dnsplane_tenant_write_quota_refusals_total\{tenant="q"\} 2$/m);
    expect(await tenantSet(['q', '--writes-per-day', 'off'], q, [h.server, replica])).toEqual(['tenant "q": no write quota']);
    await one.apply({ source: { case: 'plan', value: creates('e') } });
    expect(calls()).toEqual([POST, REFRESH]);
  });

  it('an apply cut in batches is judged whole at its first: over the quota nothing at all is sent; within it every batch goes', async () => {
    // A replica that cuts applies in batches of 2 operations (DNSPLANE_APPLY_BATCH).
    const batched = await startServerOn(h.sim, h.databaseUrl, { DNSPLANE_APPLY_BATCH: '2' });
    try {
      const token = await h.tenant('batched', [ZONE]);
      await tenantSet(['batched', '--writes-per-day', '1000', '--write-burst', '4'], token, [batched]);
      const client = createClient(ZoneService, createConnectTransport({ baseUrl: batched.url, httpVersion: '1.1', interceptors: [bearer(token)] }));
      await client.apply({ source: { case: 'plan', value: creates('w0') } }); // 3 left
      h.sim.clearCalls();
      await expectRejected(
        client.apply({ source: { case: 'plan', value: creates('w1', 'w2', 'w3', 'w4') } }),
        Code.ResourceExhausted,
        /this apply in zone quota\.test needs 4 writes and 3 are left/,
      );
      expect(calls()).toEqual([]); // not its first batch sent and the second refused
      const r = await client.apply({ source: { case: 'plan', value: creates('w1', 'w2', 'w3') } });
      expect(r.zones[0]!.batches.map((b) => b.operations)).toEqual([2, 1]);
      expect(calls()).toEqual([POST, POST, REFRESH, POST, REFRESH]);
      const { rows } = await h.server.ctx.pool.query<{ spent: string }>(
        `SELECT spent_total::text AS spent FROM tenant_write_quota w JOIN tenants t ON t.id = w.tenant_id WHERE t.name = 'batched'`,
      );
      expect(rows).toEqual([{ spent: '4' }]);
    } finally {
      await batched.close();
    }
  });
});
