/**
 * The prober (core/probe/): after an apply's refresh it asks the zone's two authoritative servers (the
 * simulator's, each publishing when the test releases it) until every record set answers as
 * published on both. Visible after the slower server, with each server's time; not_visible when one
 * never publishes; unverified when none can be asked; superseded by a later apply of the same set;
 * taken over by another replica when its holder dies; no OVH call; broken answers never count.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { apply } from '../../../src/core/apply/index.js';
import type { CoreContext, VisibilitySettings } from '../../../src/core/context.js';
import { Prober } from '../../../src/core/probe/prober.js';
import { ServerDirectory } from '../../../src/core/probe/servers.js';
import { visibilityOf, waitVisible, type Visibility } from '../../../src/core/visibility/visibility.js';
import { Metrics } from '../../../src/metrics/metrics.js';
import * as store from '../../../src/store/index.js';
import { applyRoom, type ApplyRoom } from '../../helpers/core-apply.js';
import { hostileDns, type HostileMode } from '../../helpers/hostile-dns.js';
import { until } from '../../helpers/until.js';

const ZONE = 'probe.test';
const [DNS1, NS1] = ['dns1.sim.test', 'ns1.sim.test'];
let room: ApplyRoom;
const probers: Prober[] = [];

beforeAll(async () => {
  room = await applyRoom({ zones: { [ZONE]: [] }, tenants: ['t'] });
});

afterAll(async () => {
  await room?.close();
});

beforeEach(() => {
  room.sim.propagation.setLag(0);
  room.sim.propagation.hold();
});

afterEach(async () => {
  for (const p of probers.splice(0)) await p.stop();
  room.sim.propagation.release();
  // Probes left by a test (one that stopped before its end) are not the next test's.
  await room.db.pool.query('DELETE FROM probes');
});

/** A replica: its own name (the holder of its probes), its settings, its prober (servers: the simulator's own, by name). */
async function replica(
  name: string,
  visibility: Partial<VisibilitySettings> = {},
  directory?: (ctx: CoreContext) => ServerDirectory,
): Promise<{ ctx: CoreContext; prober: Prober }> {
  const ctx: CoreContext = {
    ...room.ctx,
    instance: name,
    metrics: new Metrics({ defaultMetrics: false, eventLoop: false }),
    settings: { ...room.ctx.settings, visibility: { timeoutMs: 600_000, leaseMs: 15_000, ...visibility } },
  };
  const known = new Map(room.sim.dnsServers.map((s) => [s.name, { host: s.host, port: s.port }]));
  const prober = await Prober.start(ctx, {
    directory: directory?.(ctx) ?? new ServerDirectory(ctx, { known }),
    maxQueries: 8,
    backoff: { minMs: 20, maxMs: 100 },
    queryTimeoutMs: 1_000,
  });
  probers.push(prober);
  return { ctx, prober };
}

async function put(ctx: CoreContext, name: string, target: string): Promise<string> {
  const endpoint = { dnsName: `${name}.${ZONE}`, recordType: 'A', targets: [target], ttl: 300 };
  const result = await apply(ctx, room.tenants['t']!, {
    input: { kind: 'changes', policy: 'sync', changes: { create: [endpoint], updateOld: [], updateNew: [], delete: [] } },
  });
  expect(result.zones[0]!.status).toBe('applied');
  return result.zones[0]!.journalId!;
}

const server = (v: Visibility | undefined, name: string) => v?.servers.find((s) => s.server === name);
const final = async (ctx: CoreContext, id: string) => (await waitVisible(ctx, [id], { timeoutMs: 120_000 }))[0]!;

describe('visible', () => {
  it('after the slower server, with each server time; not before', async () => {
    const { ctx } = await replica('r1');
    const id = await put(ctx, 'www', '192.0.2.1');
    // Both servers still answer the old zone: asked, behind.
    const asked = await until('both servers to be asked', async () => {
      const v = await visibilityOf(ctx, id);
      return v?.servers.length === 2 && v.servers.every((s) => s.behind.length === 1) && v;
    });
    expect(asked.state).toBe('published');
    expect(asked.servers.map((s) => s.behind)).toEqual([[`www.${ZONE} A`], [`www.${ZONE} A`]]);
    const releasedFirst = Date.now();
    room.sim.propagation.release(DNS1);
    const half = await until(`${DNS1} to answer`, async () => {
      const v = await visibilityOf(ctx, id);
      return server(v, DNS1)?.firstAnsweredAt && v;
    });
    expect(half.state).toBe('published');
    expect(server(half, NS1)).toMatchObject({ server: NS1, behind: [`www.${ZONE} A`] });
    expect(server(half, NS1)!.firstAnsweredAt).toBeUndefined();
    const releasedSecond = Date.now();
    room.sim.propagation.release(NS1);
    const v = await final(ctx, id);
    expect(v.state).toBe('visible');
    const first = server(v, DNS1)!.firstAnsweredAt!.getTime();
    const second = server(v, NS1)!.firstAnsweredAt!.getTime();
    expect(first).toBeGreaterThanOrEqual(releasedFirst);
    expect(second).toBeGreaterThanOrEqual(releasedSecond);
    expect(second).toBeGreaterThanOrEqual(first);
    expect(v.visibleAt!.getTime()).toBe(second);
    expect(v.publishedAt!.getTime()).toBeLessThanOrEqual(first);
    const metrics = await ctx.metrics!.render();
    expect(metrics.body).toMatch(new RegExp(`dnsplane_visibility_seconds_count\\{zone="${ZONE}",server="${NS1.replace(/\./g, '\\.')}"\\} 1`));
    expect(metrics.body).toMatch(new RegExp(`dnsplane_visibility_final_total\\{zone="${ZONE}",state="visible"\\} 1`));
    // Done: the probe is gone.
    await until('the probe to be dropped', async () => (await room.db.pool.query('SELECT 1 FROM probes')).rowCount === 0);
  });

  it('a deleted record set is visible once both servers answer NXDOMAIN, and the prober makes no OVH call', async () => {
    const { ctx } = await replica('r1');
    room.sim.propagation.release();
    room.sim.clearCalls();
    const created = await put(ctx, 'gone', '192.0.2.2');
    expect((await final(ctx, created)).state).toBe('visible');
    // The zone's name servers are its apex NS records in the cache: no OVH call to learn them.
    expect(room.calls().filter((c) => c.startsWith(`GET /domain/zone/${ZONE} `))).toEqual([]);
    room.sim.clearCalls();
    room.sim.propagation.hold();
    const result = await apply(ctx, room.tenants['t']!, {
      input: {
        kind: 'changes',
        policy: 'sync',
        changes: { create: [], updateOld: [], updateNew: [], delete: [{ dnsName: `gone.${ZONE}`, recordType: 'A', targets: ['192.0.2.2'], ttl: 300 }] },
      },
    });
    const id = result.zones[0]!.journalId!;
    await until('both servers to be asked', async () => (await visibilityOf(ctx, id))?.servers.every((s) => s.behind.length === 1));
    room.sim.propagation.release();
    expect((await final(ctx, id)).state).toBe('visible');
    // The apply's own calls, and nothing else.
    expect(room.calls().filter((c) => !c.includes('/record'))).toEqual([`POST /domain/zone/${ZONE}/refresh 204`]);
  });
});

describe('the name servers asked', () => {
  const apexNs = () =>
    room.db.pool.query<{ id: string; target: string }>(
      `SELECT id::text AS id, target FROM records WHERE zone = $1 AND sub_domain = '' AND field_type = 'NS' ORDER BY target`,
      [ZONE],
    );

  it('follow the apex NS records of the cache: a zone moved to another name server is asked there, without a restart', async () => {
    const [, ns1] = room.sim.dnsServers;
    const known = new Map([
      ...room.sim.dnsServers.map((s) => [s.name, { host: s.host, port: s.port }] as const),
      ['moved.sim.test', { host: ns1!.host, port: ns1!.port }],
    ]);
    const { ctx } = await replica('r1', {}, (c) => new ServerDirectory(c, { known }));
    room.sim.propagation.release();
    expect((await final(ctx, await put(ctx, 'before-move', '192.0.2.40'))).servers.map((s) => s.server).sort()).toEqual([DNS1, NS1]);
    const before = (await apexNs()).rows;
    try {
      // What a drift check writes when OVH moved the zone: other apex NS records.
      await room.db.pool.query(`UPDATE records SET target = 'moved.sim.test.' WHERE zone = $1 AND sub_domain = '' AND field_type = 'NS'`, [ZONE]);
      room.sim.clearCalls();
      expect((await final(ctx, await put(ctx, 'after-move', '192.0.2.41'))).servers.map((s) => s.server)).toEqual(['moved.sim.test']);
      expect(room.calls().filter((c) => c.startsWith(`GET /domain/zone/${ZONE} `))).toEqual([]);
    } finally {
      for (const r of before) await room.db.pool.query(`UPDATE records SET target = $3 WHERE zone = $1 AND id = $2::bigint`, [ZONE, r.id, r.target]);
    }
  });

  it('a failure to learn them is not asked again every round (it waits, doubling); the NS records back, the next round asks them', async () => {
    const { ctx } = await replica('r1');
    const before = (await apexNs()).rows;
    // A cache without apex NS asks OVH, which fails: once, then the rounds wait out the retry.
    const fault = room.sim.faults.fail({ method: 'GET', path: `/domain/zone/${ZONE}`, effect: { kind: 'status', status: 404 } });
    await room.db.pool.query(`DELETE FROM records WHERE zone = $1 AND sub_domain = '' AND field_type = 'NS'`, [ZONE]);
    try {
      room.sim.propagation.release();
      room.sim.clearCalls();
      const id = await put(ctx, 'no-ns', '192.0.2.42');
      const rounds = async () => Number((await room.db.pool.query<{ rounds: number }>('SELECT max(rounds)::int AS rounds FROM probes')).rows[0]?.rounds ?? 0);
      await until('three rounds', async () => (await rounds()) >= 3);
      const learning = room.calls().filter((c) => c.startsWith(`GET /domain/zone/${ZONE} `));
      expect(learning.length).toBeGreaterThanOrEqual(1);
      await until('twelve rounds', async () => (await rounds()) >= 12);
      expect(room.calls().filter((c) => c.startsWith(`GET /domain/zone/${ZONE} `))).toEqual(learning);
      expect((await visibilityOf(ctx, id))?.state).toBe('published');
      for (const r of before)
        await room.db.pool.query(`INSERT INTO records (zone, id, sub_domain, field_type, target, ttl) VALUES ($1, $2::bigint, '', 'NS', $3, 3600)`, [
          ZONE,
          r.id,
          r.target,
        ]);
      expect((await final(ctx, id)).state).toBe('visible');
      expect(room.calls().filter((c) => c.startsWith(`GET /domain/zone/${ZONE} `))).toEqual(learning);
    } finally {
      fault.remove();
      if ((await apexNs()).rows.length === 0)
        for (const r of before)
          await room.db.pool.query(`INSERT INTO records (zone, id, sub_domain, field_type, target, ttl) VALUES ($1, $2::bigint, '', 'NS', $3, 3600)`, [
            ZONE,
            r.id,
            r.target,
          ]);
    }
  });
});

describe('questions', () => {
  it('a server still on the old serial is asked one name, not each: the rest are asked once its serial moves', async () => {
    const { ctx } = await replica('r1');
    const endpoints = ['q1', 'q2', 'q3', 'q4', 'q5'].map((n) => ({ dnsName: `${n}.${ZONE}`, recordType: 'A', targets: ['192.0.2.20'], ttl: 300 }));
    const result = await apply(ctx, room.tenants['t']!, {
      input: { kind: 'changes', policy: 'sync', changes: { create: endpoints, updateOld: [], updateNew: [], delete: [] } },
    });
    const id = result.zones[0]!.journalId!;
    const asked = await until('both servers to be asked', async () => {
      const v = await visibilityOf(ctx, id);
      return v?.servers.length === 2 && v.servers.every((s) => s.behind.length === 5) && v;
    });
    expect(asked.servers[0]!.behind).toEqual(endpoints.map((e) => `${e.dnsName} A`));
    const count = async (result: string) =>
      Number(new RegExp(`dnsplane_probe_queries_total\\{result="${result}"\\} (\\d+)`).exec((await ctx.metrics!.render()).body)?.[1] ?? 0);
    // More rounds, the serial still where it was: nothing more asked of the names.
    const before = room.sim.dnsQueries().reduce((a, b) => a + b, 0);
    await until('two more rounds', () => room.sim.dnsQueries().reduce((a, b) => a + b, 0) >= before + 4);
    expect(await count('old')).toBe(2);
    room.sim.propagation.release();
    expect((await final(ctx, id)).state).toBe('visible');
    expect(await count('match')).toBe(10);
    expect(await count('old')).toBe(2);
  });
});

describe('not visible, unverified', () => {
  it('a server that never publishes: not_visible at the timeout, naming it and the names', async () => {
    const { ctx } = await replica('r1', { timeoutMs: 1_500 });
    room.sim.propagation.setLag('never', NS1);
    room.sim.propagation.release(DNS1);
    const id = await put(ctx, 'stuck', '192.0.2.3');
    const v = await final(ctx, id);
    expect(v.state).toBe('not_visible');
    expect(v.reason).toMatch(new RegExp(`${NS1} still answered older data for stuck\\.${ZONE} A`));
    expect(server(v, DNS1)?.firstAnsweredAt).toBeInstanceOf(Date);
    expect(server(v, NS1)).toMatchObject({ server: NS1, behind: [`stuck.${ZONE} A`] });
    expect(server(v, NS1)!.firstAnsweredAt).toBeUndefined();
    expect(v.visibleAt).toBeUndefined();
    expect((await ctx.metrics!.render()).body).toMatch(new RegExp(`dnsplane_visibility_final_total\\{zone="${ZONE}",state="not_visible"\\} 1`));
  });

  it('a server that cannot be asked (nothing listens): unverified at the timeout, saying why', async () => {
    const closed = await hostileDns(room.sim.dnsPort, 'garbage');
    await closed.stop(); // its port: nothing listens there any more
    const { ctx } = await replica('r1', { timeoutMs: 1_500 }, (c) => new ServerDirectory(c, { fixed: [{ host: '127.0.0.1', port: closed.port }] }));
    room.sim.propagation.release();
    const id = await put(ctx, 'nobody', '192.0.2.4');
    const v = await final(ctx, id);
    expect(v.state).toBe('unverified');
    expect(v.reason).toMatch(/no answer could be trusted: 127\.0\.0\.1:\d+: no answer within 1000 ms/);
  });
});

describe('superseded', () => {
  it('a second apply of the same names before the first is seen supersedes it; the second becomes visible', async () => {
    const { ctx } = await replica('r1');
    const first = await put(ctx, 'twice', '192.0.2.5');
    const second = await put(ctx, 'twice', '192.0.2.6');
    const v1 = await final(ctx, first);
    expect(v1).toMatchObject({ state: 'superseded', supersededBy: second });
    expect(v1.reason).toContain(`twice.${ZONE} A`);
    room.sim.propagation.release();
    expect((await final(ctx, second)).state).toBe('visible');
  });
});

describe('replicas', () => {
  it('a replica that dies while probing leaves its probe to another, which finishes it', async () => {
    const a = await replica('replica-a', { leaseMs: 600 });
    const id = await put(a.ctx, 'taken', '192.0.2.7');
    await until('replica a to probe', async () => (await visibilityOf(a.ctx, id))?.servers.length === 2);
    expect(a.prober.probes).toBe(1);
    await a.prober.halt();
    const b = await replica('replica-b', { leaseMs: 600 });
    room.sim.propagation.release();
    const v = await final(b.ctx, id);
    expect(v.state).toBe('visible');
    expect((await b.ctx.metrics!.render()).body).toMatch(new RegExp(`dnsplane_visibility_final_total\\{zone="${ZONE}",state="visible"\\} 1`));
  });
});

describe('broken and hostile servers never make a change visible', () => {
  const why: Record<string, RegExp> = {
    garbage: /no answer within 1000 ms; ignored \d+: a malformed answer/,
    'wrong-id': /ignored \d+: an answer with another id/,
    'not-response': /ignored \d+: a message that is not a response/,
    'other-question': /ignored \d+: an answer to another question/,
    'other-zone': /a negative answer without the SOA of probe\.test \(an answer for another zone\)/,
    refused: /answered REFUSED/,
  };
  for (const mode of ['garbage', 'wrong-id', 'not-response', 'other-question', 'other-zone', 'refused'] as HostileMode[]) {
    it(mode, async () => {
      const bad = await hostileDns(room.sim.dnsPort, mode);
      try {
        const { ctx } = await replica('r1', { timeoutMs: 1_500 }, (c) => new ServerDirectory(c, { fixed: [{ host: '127.0.0.1', port: bad.port }] }));
        room.sim.propagation.release();
        const id = await put(ctx, `bad-${mode}`, '192.0.2.8');
        const v = await final(ctx, id);
        expect(v.state).toBe('unverified');
        expect(v.reason).toMatch(why[mode]!);
        expect(bad.questions.udp).toBeGreaterThan(0);
      } finally {
        await bad.stop();
      }
    });
  }

  it('a truncated answer is asked again over TCP: visible when TCP answers, never when TCP answers garbage', async () => {
    const good = await hostileDns(room.sim.dnsPort, 'truncated', { tcp: 'real' });
    const bad = await hostileDns(room.sim.dnsPort, 'truncated', { tcp: 'garbage' });
    try {
      room.sim.propagation.release();
      const ok = await replica('r1', { timeoutMs: 1_500 }, (c) => new ServerDirectory(c, { fixed: [{ host: '127.0.0.1', port: good.port }] }));
      const id = await put(ok.ctx, 'tc', '192.0.2.9');
      expect((await final(ok.ctx, id)).state).toBe('visible');
      expect(good.questions.tcp).toBeGreaterThan(0);
      await ok.prober.stop();
      const ko = await replica('r2', { timeoutMs: 1_500 }, (c) => new ServerDirectory(c, { fixed: [{ host: '127.0.0.1', port: bad.port }] }));
      const id2 = await put(ko.ctx, 'tc-bad', '192.0.2.10');
      const v = await final(ko.ctx, id2);
      expect(v.state).toBe('unverified');
      expect(v.reason).toMatch(/over TCP/);
    } finally {
      await Promise.all([good.stop(), bad.stop()]);
    }
  });
});

describe('the journal', () => {
  it('keeps each apply published at its refresh', async () => {
    const { ctx } = await replica('r1');
    room.sim.propagation.release();
    const id = await put(ctx, 'kept', '192.0.2.11');
    await final(ctx, id);
    const [row] = await store.journalVisibility(room.db.pool, [id]);
    expect(row).toMatchObject({ state: 'visible', journalState: 'done' });
    expect(row!.publishedAt!.getTime()).toBeLessThanOrEqual(row!.visibleAt!.getTime());
  });
});
