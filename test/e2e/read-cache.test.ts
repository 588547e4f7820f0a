/**
 * Hot reads from memory, still exact across replicas: three servers on one database and one
 * simulator, each with its Records cache and token cache warm.
 */
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { create, fromBinary, fromJson, toBinary, type JsonValue } from '@bufbuild/protobuf';
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant } from '../../src/core/tenants/tenants.js';
import { AdminService } from '../../src/gen/dnsplane/v1/admin_pb.js';
import { Policy, RecordsRequestSchema, RecordsResponseSchema, ZoneService } from '../../src/gen/dnsplane/v1/zone_pb.js';
import type { Server } from '../../src/server/server.js';
import { LISTENER_APPLICATION_NAME } from '../../src/store/notify.js';
import type { TestDatabase } from '../helpers/db.js';
import { startReplicas, type Replicas } from '../helpers/server.js';
import { until } from '../helpers/until.js';
import { bearer, serviceClient, memoryLogger } from '../helpers/sim-server.js';

const ZONE = 'hot.test';
/** A second zone: answers of several zones are joined from each zone's encoded bytes. */
const COLD = 'cold.test';

const clientOf = serviceClient;

async function refused(server: Server, token: string): Promise<boolean> {
  try {
    await clientOf(ZoneService, server, token).records({ zones: [ZONE] });
    return false;
  } catch (e) {
    if (e instanceof ConnectError && e.code === Code.Unauthenticated) return true;
    throw e;
  }
}

describe('read cache across replicas', () => {
  let db: TestDatabase;
  const logs = [memoryLogger('debug'), memoryLogger('debug'), memoryLogger('debug')];
  let replicas: Server[] = [];
  let cluster: Replicas | undefined;
  let admin = '';

  beforeAll(async () => {
    cluster = await startReplicas({
      zones: { [ZONE]: [{ subDomain: 'www', fieldType: 'A', target: '192.0.2.1' }], [COLD]: [{ subDomain: 'ice', fieldType: 'A', target: '192.0.2.2' }] },
      count: logs.length,
      env: { DNSPLANE_ZONES: `${ZONE},${COLD}`, DNSPLANE_DRIFT_INTERVAL: 'off' },
      logger: (i) => logs[i]!.log,
    });
    ({ db, servers: replicas } = cluster);
    admin = (await createTenant(db.pool, { name: 'root', zones: [], admin: true })).token;
  }, 60_000);

  afterAll(async () => {
    await cluster?.close();
  });

  it('answers the very next Records with a change on the replica that made it, on the others once its NOTIFY arrived, without reading Postgres', async () => {
    const token = (await createTenant(db.pool, { name: 'team', zones: [ZONE] })).token;
    const clients = replicas.map((r) => clientOf(ZoneService, r, token));
    const stateReads = () => replicas.map((r) => r.ctx.reads!.zoneStates.reads);
    let generation = (await clients[0]!.records({ zones: [ZONE] })).zones[0]!.generation;
    for (let round = 0; round < 3; round++) {
      // Warm: every replica has answered the current generation, the second time from memory.
      for (const [i, c] of clients.entries()) {
        await c.records({ zones: [ZONE] });
        const built = replicas[i]!.ctx.reads!.builds;
        const again = await c.records({ zones: [ZONE] });
        expect(again.zones[0]!.generation).toBe(generation);
        expect(replicas[i]!.ctx.reads!.builds).toBe(built);
        expect((await c.records({ zones: [ZONE], knownGenerations: { [ZONE]: generation } })).zones[0]!.notModified).toBe(true);
      }
      // Polls with the current generation are answered from memory: no read of the zones' states.
      const idle = stateReads();
      for (const c of clients) for (let k = 0; k < 5; k++) await c.records({ zones: [ZONE], knownGenerations: { [ZONE]: generation } });
      expect(stateReads()).toEqual(idle);

      const name = `r${round}.${ZONE}`;
      const applied = await clients[round]!.apply({
        source: {
          case: 'plan',
          value: {
            policy: Policy.UPSERT_ONLY,
            input: { case: 'desired', value: { zones: [], endpoints: [{ dnsName: name, recordType: 'A', targets: [`192.0.2.${10 + round}`], ttl: 300 }] } },
          },
        },
      });
      const next = applied.zones[0]!.generation;
      expect(next).toBeGreaterThan(generation);
      const seesChange = async (c: (typeof clients)[number]) => {
        const poll = (await c.records({ zones: [ZONE], knownGenerations: { [ZONE]: generation } })).zones[0]!;
        if (poll.notModified) return false;
        expect(poll.generation).toBe(next);
        expect(poll.endpoints.find((e) => e.dnsName === name)).toMatchObject({ targets: [`192.0.2.${10 + round}`], labels: { owner: 'team' } });
        return true;
      };
      // The replica that made the change: its very next poll.
      expect(await seesChange(clients[round]!)).toBe(true);
      const before = stateReads();
      for (const [i, c] of clients.entries()) {
        if (i === round) continue;
        // A caller that already has the new generation (from the replica that made it) is never
        // answered with an older one: not modified at `next`, read from Postgres if not heard yet.
        const ahead = (await c.records({ zones: [ZONE], knownGenerations: { [ZONE]: next } })).zones[0]!;
        expect([ahead.notModified, ahead.generation]).toEqual([true, next]);
      }
      for (const [i, c] of clients.entries()) if (i !== round) await until(`replica ${i} to hear generation ${next}`, () => seesChange(c));
      // Heard by NOTIFY: the other replicas read the zones' states at most for the caller that was ahead of them.
      for (const [i, n] of stateReads().entries()) if (i !== round) expect(n - before[i]!).toBeLessThanOrEqual(1);
      generation = next;
    }
  });

  it("patches every replica's base with what an apply or an ownership assignment named, and answers as a whole read would", async () => {
    const token = (await createTenant(db.pool, { name: 'patched', zones: [ZONE] })).token;
    await createTenant(db.pool, { name: 'heir', zones: [ZONE] });
    const clients = replicas.map((r) => clientOf(ZoneService, r, token));
    let generation = (await clients[0]!.records({ zones: [ZONE] })).zones[0]!.generation;
    const change = async (make: () => Promise<unknown>, check: (z: { endpoints: Array<{ dnsName: string; labels: Record<string, string> }> }) => void) => {
      for (const c of clients) await c.records({ zones: [ZONE] }); // every replica holds this generation's base
      const before = replicas.map((r) => r.ctx.reads!.stats());
      await make();
      const next = (await clients[0]!.records({ zones: [ZONE] })).zones[0]!.generation;
      expect(next).toBe(generation + 1n);
      // The other replicas hear the NOTIFY (what it names included) before they know the generation.
      for (const [i, c] of clients.entries()) {
        if (i === 0) continue;
        const z = await until(`replica ${i} to hear generation ${next}`, async () => {
          const got = (await c.records({ zones: [ZONE], knownGenerations: { [ZONE]: generation } })).zones[0]!;
          return !got.notModified && got;
        });
        check(z);
        const after = replicas[i]!.ctx.reads!.stats();
        expect([after.baseBuilds - before[i]!.baseBuilds, after.basePatches - before[i]!.basePatches, after.answerPatches - before[i]!.answerPatches]).toEqual([
          1, 1, 1,
        ]);
      }
      generation = next;
    };
    const name = `patched.${ZONE}`;
    await change(
      () =>
        clients[0]!.apply({
          source: {
            case: 'plan',
            value: {
              policy: Policy.UPSERT_ONLY,
              input: { case: 'desired', value: { zones: [], endpoints: [{ dnsName: name, recordType: 'A', targets: ['192.0.2.77'], ttl: 300 }] } },
            },
          },
        }),
      (z) => expect(z.endpoints.find((e) => e.dnsName === name)?.labels).toMatchObject({ owner: 'patched' }),
    );
    await change(
      () => clientOf(AdminService, replicas[0]!, admin).assignOwnership({ dnsName: name, recordType: 'A', tenant: 'heir' }),
      (z) => expect(z.endpoints.find((e) => e.dnsName === name)).toBeUndefined(), // 'patched' owns it no more: gone from its own answer
    );
  });

  it('plans on every replica against the zone as it is now, though another generation of it is in memory', async () => {
    const token = (await createTenant(db.pool, { name: 'planner', zones: [ZONE] })).token;
    const [zero, one] = [clientOf(ZoneService, replicas[0]!, token), clientOf(ZoneService, replicas[1]!, token)];
    const desired = (target: string) => ({
      policy: Policy.UPSERT_ONLY,
      input: { case: 'desired' as const, value: { zones: [], endpoints: [{ dnsName: `plan.${ZONE}`, recordType: 'A', targets: [target], ttl: 300 }] } },
    });
    // Replica 0 plans (its read cache now holds the zone at this generation).
    const first = (await zero.plan(desired('192.0.2.70'))).plan!.zones[0]!;
    expect(first.changes.map((c) => c.action)).toEqual([1]); // a create
    // The change goes through replica 1; replica 0's next plan must see it, not the zone it kept.
    await one.apply({ source: { case: 'plan', value: desired('192.0.2.70') } });
    const again = (await zero.plan(desired('192.0.2.70'))).plan!.zones[0]!;
    expect(again.baseGeneration).toBeGreaterThan(first.baseGeneration);
    expect(again.changes).toEqual([]);
    const update = (await zero.plan(desired('192.0.2.71'))).plan!.zones[0]!;
    expect(update.changes.map((c) => [c.action, c.before?.targets, c.after?.targets])).toEqual([[2, ['192.0.2.70'], ['192.0.2.71']]]);
  });

  it('keeps views apart: another tenant, or the same tenant with includeForeign, never gets a view cut for someone else', async () => {
    const a = (await createTenant(db.pool, { name: 'view-a', zones: [ZONE] })).token;
    const b = (await createTenant(db.pool, { name: 'view-b', zones: [ZONE] })).token;
    await clientOf(ZoneService, replicas[0]!, a).apply({
      source: {
        case: 'plan',
        value: {
          policy: Policy.UPSERT_ONLY,
          input: { case: 'desired', value: { zones: [], endpoints: [{ dnsName: `a.${ZONE}`, recordType: 'A', targets: ['192.0.2.50'], ttl: 300 }] } },
        },
      },
    });
    const names = async (token: string, includeForeign: boolean) =>
      (await clientOf(ZoneService, replicas[1]!, token).records({ zones: [ZONE], includeForeign })).zones[0]!.endpoints.map((e) => e.dnsName).sort();
    for (let i = 0; i < 2; i++) {
      expect(await names(a, false)).toEqual([`a.${ZONE}`]);
      expect(await names(b, false)).toEqual([]);
      expect(await names(b, true)).toEqual(expect.arrayContaining([`a.${ZONE}`, `www.${ZONE}`]));
    }
  });

  it('sends every tenant asking includeForeign the same bytes, encoded once per generation and form, on every protocol', async () => {
    const server = replicas[0]!;
    const names = ['same-a', 'same-b', 'same-c'];
    const tokens: string[] = [];
    for (const name of names) tokens.push((await createTenant(db.pool, { name, zones: [ZONE] })).token);
    // A new generation: nothing of it encoded yet.
    await clientOf(ZoneService, server, tokens[0]!).apply({
      source: {
        case: 'plan',
        value: {
          policy: Policy.UPSERT_ONLY,
          input: { case: 'desired', value: { zones: [], endpoints: [{ dnsName: `same.${ZONE}`, recordType: 'A', targets: ['192.0.2.60'], ttl: 300 }] } },
        },
      },
    });
    const reads = server.ctx.reads!;
    const raw = async (token: string, type: string, body: Uint8Array | string) => {
      const res = await fetch(`${server.url}/dnsplane.v1.ZoneService/Records`, {
        method: 'POST',
        body,
        headers: { 'content-type': type, authorization: `Bearer ${token}` },
      });
      expect(res.status).toBe(200);
      return Buffer.from(await res.arrayBuffer());
    };
    const request = { zones: [ZONE], includeForeign: true };
    const before = reads.stats();
    const json = await Promise.all(tokens.map((t) => raw(t, 'application/json', JSON.stringify(request))));
    const binary = await Promise.all(tokens.map((t) => raw(t, 'application/proto', toBinary(RecordsRequestSchema, create(RecordsRequestSchema, request)))));
    for (const answers of [json, binary]) for (const a of answers) expect(a.equals(answers[0]!)).toBe(true);
    const after = reads.stats();
    expect(after.encodes - before.encodes).toBe(2); // one per form, for the three tenants
    expect(after.answerBuilds - before.answerBuilds).toBe(1);
    expect(after.baseBuilds - before.baseBuilds).toBe(1);
    const decoded = fromBinary(RecordsResponseSchema, binary[0]!);
    expect(decoded).toEqual(fromJson(RecordsResponseSchema, JSON.parse(json[0]!.toString()) as JsonValue));
    expect(decoded.zones[0]!.endpoints.find((e) => e.dnsName === `same.${ZONE}`)?.labels).toEqual({ owner: 'same-a' });
    // gRPC, gRPC-Web and Connect GET (binary and JSON) give the same answer; the binary ones from the same bytes.
    const auth = bearer(tokens[1]!);
    const transports = [
      createGrpcTransport({ baseUrl: server.url, interceptors: [auth] }),
      createGrpcWebTransport({ baseUrl: server.url, httpVersion: '1.1', interceptors: [auth] }),
      createConnectTransport({ baseUrl: server.url, httpVersion: '1.1', useHttpGet: true, useBinaryFormat: true, interceptors: [auth] }),
      createConnectTransport({ baseUrl: server.url, httpVersion: '1.1', useHttpGet: true, useBinaryFormat: false, interceptors: [auth] }),
      createConnectTransport({ baseUrl: server.url, httpVersion: '1.1', useBinaryFormat: false, interceptors: [auth] }),
    ];
    for (const t of transports) expect(await createClient(ZoneService, t).records(request)).toEqual(decoded);
    expect(reads.stats().encodes - after.encodes).toBe(0);
  });

  it('refuses a disabled or rotated token on every replica within 1 second', async () => {
    const token = (await createTenant(db.pool, { name: 'leaver', zones: [ZONE] })).token;
    const rotating = (await createTenant(db.pool, { name: 'rotator', zones: [ZONE] })).token;
    for (const r of replicas) {
      expect(await refused(r, token)).toBe(false);
      expect(await refused(r, rotating)).toBe(false);
    }
    // Each replica answers these tokens from memory now (its listener is live).
    await until('every replica to listen', () => replicas.every((r) => r.ctx.tokens!.trusted()));
    for (const r of replicas) expect(r.ctx.tokens!.size).toBeGreaterThanOrEqual(2);

    const adminClient = clientOf(AdminService, replicas[0]!, admin);
    await adminClient.disableTenant({ name: 'leaver' });
    let since = performance.now();
    for (const r of replicas) await until('the disabled token to be refused', () => refused(r, token), 1_000 - (performance.now() - since));
    expect(performance.now() - since).toBeLessThan(1_000);

    const { token: fresh } = await clientOf(AdminService, replicas[1]!, admin).rotateTenantToken({ name: 'rotator' });
    since = performance.now();
    for (const r of replicas) await until('the rotated token to be refused', () => refused(r, rotating), 1_000 - (performance.now() - since));
    expect(performance.now() - since).toBeLessThan(1_000);
    for (const r of replicas) expect(await refused(r, fresh)).toBe(false);
  });

  it('reads Postgres, not its memory, while its LISTEN connection is lost', async () => {
    const token = (await createTenant(db.pool, { name: 'cut', zones: [ZONE] })).token;
    const victim = replicas[2]!;
    const zones = clientOf(ZoneService, victim, token);
    const before = (await zones.records({ zones: [ZONE] })).zones[0]!;
    await until('the victim to listen', () => victim.ctx.tokens!.trusted() && victim.ctx.tokens!.size > 0);
    const lostBefore = logs[2]!.lines.filter((l) => String(l.msg).startsWith('lost the LISTEN connection')).length;

    // Every listener of this database is terminated; meanwhile the data changes through replica 0.
    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`,
      [LISTENER_APPLICATION_NAME],
    );
    expect(rows[0]!.n).toBe(replicas.length);
    const other = (await createTenant(db.pool, { name: 'cut-other', zones: [ZONE] })).token;
    const applied = await clientOf(ZoneService, replicas[0]!, other).apply({
      source: {
        case: 'plan',
        value: {
          policy: Policy.UPSERT_ONLY,
          input: { case: 'desired', value: { zones: [], endpoints: [{ dnsName: `meanwhile.${ZONE}`, recordType: 'A', targets: ['192.0.2.99'], ttl: 300 }] } },
        },
      },
    });
    await clientOf(AdminService, replicas[0]!, admin).disableTenant({ name: 'cut' });

    await until('the victim to notice', () => logs[2]!.lines.filter((l) => String(l.msg).startsWith('lost the LISTEN connection')).length > lostBefore);
    expect(await refused(victim, token)).toBe(true);
    // Its NOTIFY was lost with the connection: the victim reads the zones' states in Postgres.
    const stateReads = victim.ctx.reads!.zoneStates.reads;
    const seen = (await clientOf(ZoneService, victim, other).records({ zones: [ZONE], knownGenerations: { [ZONE]: before.generation } })).zones[0]!;
    expect(victim.ctx.reads!.zoneStates.reads).toBeGreaterThan(stateReads);
    expect(seen.notModified).toBe(false);
    expect(seen.generation).toBe(applied.zones[0]!.generation);
    expect(seen.endpoints.map((e) => e.dnsName)).toContain(`meanwhile.${ZONE}`);

    // Back: the listener reconnects, tokens are cached again, and the next change still shows at once.
    await until('the listener to come back', () => victim.ctx.tokens!.trusted());
    expect(await refused(victim, other)).toBe(false);
    expect(await refused(victim, other)).toBe(false);
    expect(victim.ctx.tokens!.size).toBeGreaterThan(0);
    await clientOf(AdminService, replicas[1]!, admin).disableTenant({ name: 'cut-other' });
    const since = performance.now();
    await until('the disabled token to be refused', () => refused(victim, other), 1_000);
    expect(performance.now() - since).toBeLessThan(1_000);
  });

  it('answers a poll of several zones not modified with the bytes kept for it, and anew the moment one of them moves', async () => {
    const token = (await createTenant(db.pool, { name: 'poller', zones: [ZONE, COLD] })).token;
    const server = replicas[0]!;
    const client = clientOf(ZoneService, server, token);
    const known = Object.fromEntries((await client.records({ zones: [ZONE, COLD] })).zones.map((z) => [z.zone, String(z.generation)]));
    const body = JSON.stringify({ zones: [ZONE, COLD], knownGenerations: known });
    const poll = async () =>
      (
        await fetch(`${server.url}/dnsplane.v1.ZoneService/Records`, {
          method: 'POST',
          body,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        })
      ).text();
    const first = await poll();
    expect(JSON.parse(first)).toEqual({
      zones: [
        { zone: ZONE, generation: known[ZONE], notModified: true },
        { zone: COLD, generation: known[COLD], notModified: true },
      ],
    });
    for (let i = 0; i < 3; i++) expect(await poll()).toBe(first);
    const applied = await client.apply({
      source: {
        case: 'plan',
        value: {
          policy: Policy.UPSERT_ONLY,
          input: { case: 'desired', value: { zones: [], endpoints: [{ dnsName: `poll.${COLD}`, recordType: 'A', targets: ['192.0.2.77'], ttl: 300 }] } },
        },
      },
    });
    const moved = String(applied.zones[0]!.generation);
    expect(moved).not.toBe(known[COLD]);
    // The replica that made the change: its very next poll says so (the kept bytes are not reused).
    const after = JSON.parse(await poll()) as { zones: Array<Record<string, unknown>> };
    expect(after.zones[0]).toEqual({ zone: ZONE, generation: known[ZONE], notModified: true });
    expect(after.zones[1]).toMatchObject({ zone: COLD, generation: moved });
    expect(after.zones[1]!['notModified']).toBeUndefined();
    expect(after.zones[1]!['endpoints']).toContainEqual(expect.objectContaining({ dnsName: `poll.${COLD}`, targets: ['192.0.2.77'] }));
  });

  it('answers Connect JSON from encoded bytes with what Connect itself answers, errors included', async () => {
    const token = (await createTenant(db.pool, { name: 'wire', zones: [ZONE, COLD] })).token;
    const server = replicas[0]!;
    const auth = bearer(token);
    const json = clientOf(ZoneService, server, token);
    const grpc = createClient(ZoneService, createGrpcTransport({ baseUrl: server.url, interceptors: [auth] }));
    const binary = createClient(ZoneService, createConnectTransport({ baseUrl: server.url, httpVersion: '1.1', useBinaryFormat: true, interceptors: [auth] }));
    const cold = (await json.records({ zones: [COLD] })).zones[0]!.generation;
    const hot = (await json.records({ zones: [ZONE] })).zones[0]!.generation;
    const requests: Array<{ zones: string[]; includeForeign?: boolean; knownGenerations?: Record<string, bigint> }> = [
      { zones: [ZONE] },
      { zones: [ZONE], includeForeign: true },
      { zones: [] },
      { zones: [COLD, ZONE], includeForeign: true },
      // Not modified, alone and beside a full answer (each zone's part cut from its own bytes).
      { zones: [ZONE], knownGenerations: { [ZONE]: hot } },
      { zones: [ZONE, COLD], knownGenerations: { [COLD]: cold }, includeForeign: true },
      { zones: [COLD, ZONE], knownGenerations: { [COLD]: cold, [ZONE]: hot } },
    ];
    for (const req of requests) {
      // Twice: the second answer comes from the bytes (and the request) kept by the first.
      for (let i = 0; i < 2; i++) {
        const viaJson = await json.records(req);
        expect(viaJson).toEqual(await grpc.records(req));
        expect(viaJson).toEqual(await binary.records(req));
      }
    }
    const post = async (body: string, headers: Record<string, string>) => {
      const res = await fetch(`${server.url}/dnsplane.v1.ZoneService/Records`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', ...headers },
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    expect(await post('{"zones":[]}', {})).toMatchObject({ status: 401, body: { code: 'unauthenticated' } });
    expect(await post('{"zones":[]}', { authorization: 'Bearer nope' })).toMatchObject({
      status: 401,
      body: { code: 'unauthenticated', message: 'invalid or disabled token' },
    });
    expect(await post('{"zones":', { authorization: `Bearer ${token}` })).toMatchObject({ status: 400, body: { code: 'invalid_argument' } });
    expect(await post('{"zones":["other.test"]}', { authorization: `Bearer ${token}` })).toMatchObject({
      status: 400,
      body: { code: 'invalid_argument', message: expect.stringContaining('zones[0]') },
    });
    expect(await post('{"zones":["hot.test"],"knownGenerations":{"hot.test":"x"}}', { authorization: `Bearer ${token}` })).toMatchObject({
      status: 400,
      body: { code: 'invalid_argument' },
    });
    // The same bad requests through Connect (a timeout header sends them there) get the same answers.
    for (const [body, headers] of [
      ['{"zones":', { authorization: `Bearer ${token}` }],
      ['{"zone":["hot.test"]}', { authorization: `Bearer ${token}` }],
      ['{"zones":["hot.test\\u0000"]}', { authorization: `Bearer ${token}` }],
      ['{"zones":["hot.test"],"knownGenerations":{"hot.test":"x"}}', { authorization: `Bearer ${token}` }],
      ['{"zones":["other.test"]}', { authorization: `Bearer ${token}` }],
      ['{"zone":1}', {}],
      ['{"zones":["hot.test\\u0000"]}', {}],
    ] as const) {
      expect(await post(body, headers)).toEqual(await post(body, { ...headers, 'connect-timeout-ms': '10000' }));
    }
    // With a timeout header, Connect answers (the same thing, byte for byte: this route writes the
    // endpoints itself, in slices), for one zone and for several.
    const text = async (body: string, headers: Record<string, string>) =>
      (
        await fetch(`${server.url}/dnsplane.v1.ZoneService/Records`, {
          method: 'POST',
          body,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...headers },
        })
      ).text();
    for (const body of [
      '{"zones":["hot.test"]}',
      '{"zones":["hot.test"],"includeForeign":true}',
      `{"zones":["hot.test","cold.test"],"knownGenerations":{"cold.test":"${cold}"}}`,
    ]) {
      const viaConnect = await post(body, { authorization: `Bearer ${token}`, 'connect-timeout-ms': '10000' });
      for (let i = 0; i < 2; i++) expect(await post(body, { authorization: `Bearer ${token}` })).toEqual(viaConnect);
      expect(await text(body, {})).toBe(await text(body, { 'connect-timeout-ms': '10000' }));
    }
    // A body this route has already answered is still refused to a caller whose token is not good.
    expect(await post('{"zones":["hot.test"]}', { authorization: 'Bearer nope' })).toMatchObject({ status: 401, body: { code: 'unauthenticated' } });
    // A request that failed is never kept as valid: it fails the same way every time.
    for (let i = 0; i < 2; i++) {
      expect(await post('{"zones":["hot.test"],"knownGenerations":{"hot.test":"x"}}', { authorization: `Bearer ${token}` })).toMatchObject({
        status: 400,
        body: { code: 'invalid_argument' },
      });
    }
  });
});
